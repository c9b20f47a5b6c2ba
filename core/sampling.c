/*
 * sampling.c - the rule that decides whether a merge samples (ms_sampling.h)
 * and the names of the sampling classification and the grace policy.
 *
 * It exists so that the engine's prediction at dispatch and the merge
 * executor's decision at the start of a merge cannot disagree: both count
 * the inputs with ms_sampling_input_add and ask ms_sampling_predict.
 */
#include "ms_sampling.h"
#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_err.h"

static const char *const class_names[MS_SAMPLING_CLASS_COUNT] = {
	[MS_SAMPLING_NOT_EXECUTED] = "not_executed",
	[MS_SAMPLING_ENABLED_NO_EVALUATION] = "enabled_no_evaluation",
	[MS_SAMPLING_EXECUTED] = "executed",
};

static const char *const reason_names[MS_SREASON_COUNT] = {
	[MS_SREASON_NONE] = "none",
	[MS_SREASON_PIPELINE_DISABLED] = "pipeline_disabled",
	[MS_SREASON_NO_SAMPLER] = "no_sampler",
	[MS_SREASON_EVENT_DISABLED] = "event_disabled",
	[MS_SREASON_MERGE_GRACE] = "merge_grace",
	[MS_SREASON_FRAGMENT_GAP_CONTRACT] = "fragment_gap_contract",
	[MS_SREASON_GUARD_UNAVAILABLE] = "guard_unavailable",
	[MS_SREASON_ALL_TRACES_OVERSIZED] = "all_traces_oversized",
	[MS_SREASON_LOSSLESS_RETRY] = "lossless_retry",
	[MS_SREASON_EMPTY_INPUT] = "empty_input",
	[MS_SREASON_OTHER] = "other",
};

static const char *const grace_policy_names[] = {
	[MS_GRACE_SELECTION] = "selection",
	[MS_GRACE_TRACE] = "trace",
};

const char *
ms_sampling_class_name(enum ms_sampling_class c)
{
	return MS_ENUM_NAME(class_names, c, "unknown");
}

const char *
ms_sampling_reason_name(enum ms_sampling_reason r)
{
	return MS_ENUM_NAME(reason_names, r, "unknown");
}

int
ms_sampling_class_parse(const char *s)
{
	return MS_ENUM_PARSE(class_names, s);
}

int
ms_sampling_reason_parse(const char *s)
{
	return MS_ENUM_PARSE(reason_names, s);
}

const char *
ms_grace_policy_name(enum ms_grace_policy p)
{
	/* Any value but trace is the default policy, and named so. */
	return MS_ENUM_NAME(grace_policy_names, p, "selection");
}

int
ms_grace_policy_parse(const char *s, enum ms_grace_policy *out)
{
	int v = MS_ENUM_PARSE(grace_policy_names, s);
	if (v < 0)
		return MS_ERR_INVAL;
	*out = (enum ms_grace_policy)v;
	return 0;
}

static bool
has_segment(const ms_sampling_input *in)
{
	return in->segment_min_ns != 0 || in->segment_max_ns != 0;
}

static int64_t
grace_of(const ms_sampling_input *in)
{
	return ms_grace_or_default(in->grace_ns);
}

/* The segment keeps an interior once the grace is off both edges. */
static bool
segment_usable(const ms_sampling_input *in)
{
	int64_t g = grace_of(in);
	return in->segment_min_ns <= in->segment_max_ns &&
	       ms_ts_add(in->segment_min_ns, g) <=
	               ms_ts_add(in->segment_max_ns, -g);
}

void
ms_sampling_input_add(ms_sampling_input *in, uint64_t rows, int64_t min_ts,
                      int64_t max_ts, int64_t frontier_ns)
{
	/* A trace can be dropped only with min >= segment min + grace and
	 * max <= segment max - grace; a fragment in a part wholly outside
	 * that band breaks one of them. */
	int64_t g = grace_of(in);
	if (has_segment(in) &&
	    (rows == 0 || max_ts < ms_ts_add(in->segment_min_ns, g) ||
	     min_ts > ms_ts_add(in->segment_max_ns, -g)))
		in->edge_inputs++;
	in->ninputs++;
	in->input_rows += rows;
	if (rows > 0 && !ms_ts_mature(max_ts, frontier_ns))
		in->hot_inputs++;
	if (rows == 0 || min_ts > frontier_ns)
		in->young_inputs++;
}

bool
ms_sampling_predict(const ms_sampling_input *in, enum ms_sampling_class *cls,
                    enum ms_sampling_reason *reason)
{
	enum ms_sampling_reason r = MS_SREASON_NONE;
	/* As in the reference: no input at all is told before the
	 * pipeline is asked about; inputs without rows are not empty
	 * input (their merge stages no trace and the stager says so). */
	if (in->ninputs == 0)
		r = MS_SREASON_EMPTY_INPUT;
	else if (!in->pipeline_enabled)
		r = MS_SREASON_PIPELINE_DISABLED;
	else if (in->nsamplers == 0)
		r = MS_SREASON_NO_SAMPLER;
	else if (in->event_disabled)
		r = MS_SREASON_EVENT_DISABLED;
	else if (in->policy == MS_GRACE_SELECTION && in->hot_inputs > 0)
		r = MS_SREASON_MERGE_GRACE;
	else if (in->policy == MS_GRACE_TRACE &&
	         in->young_inputs == in->ninputs)
		/* No input can hold a trace old enough for Decide: the merge
		 * does not sample at all, nothing is staged. */
		r = MS_SREASON_MERGE_GRACE;
	else if (!has_segment(in) || !segment_usable(in))
		/* As in the reference: the fragment guard is set up only
		 * over a known coverage with an interior. */
		r = MS_SREASON_GUARD_UNAVAILABLE;
	else if (in->edge_inputs == in->ninputs)
		r = MS_SREASON_FRAGMENT_GAP_CONTRACT;
	if (r != MS_SREASON_NONE) {
		*cls = MS_SAMPLING_NOT_EXECUTED;
		*reason = r;
		return false;
	}
	*cls = MS_SAMPLING_EXECUTED; /* provisional: the stager says */
	*reason = MS_SREASON_NONE;
	return true;
}
