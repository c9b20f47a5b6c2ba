/*
 * sampling.c - the rule that decides whether a merge samples (ms_sampling.h)
 * and the names of the sampling classification.
 *
 * It exists so that the engine's prediction at dispatch and the merge
 * executor's decision at the start of a merge cannot disagree: both count
 * the inputs with ms_sampling_input_add and ask ms_sampling_predict.
 */
#include "ms_sampling.h"
#include "ms_clock.h"

#include <string.h>

static const char *const class_names[MS_SAMPLING_CLASS_COUNT] = {
	"not_executed",
	"enabled_no_evaluation",
	"executed",
};

static const char *const reason_names[MS_SREASON_COUNT] = {
	"none",
	"pipeline_disabled",
	"no_sampler",
	"event_disabled",
	"merge_grace",
	"fragment_gap_contract",
	"guard_unavailable",
	"all_traces_oversized",
	"lossless_retry",
	"empty_input",
	"other",
};

const char *
ms_sampling_class_name(enum ms_sampling_class c)
{
	if ((unsigned)c >= MS_SAMPLING_CLASS_COUNT)
		return "unknown";
	return class_names[c];
}

const char *
ms_sampling_reason_name(enum ms_sampling_reason r)
{
	if ((unsigned)r >= MS_SREASON_COUNT)
		return "unknown";
	return reason_names[r];
}

static int
name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

int
ms_sampling_class_parse(const char *s)
{
	return name_index(class_names, MS_SAMPLING_CLASS_COUNT, s);
}

int
ms_sampling_reason_parse(const char *s)
{
	return name_index(reason_names, MS_SREASON_COUNT, s);
}

static int64_t
sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

static bool
has_segment(const ms_sampling_input *in)
{
	return in->segment_min_ns != 0 || in->segment_max_ns != 0;
}

static int64_t
grace_of(const ms_sampling_input *in)
{
	return in->grace_ns > 0 ? in->grace_ns : MS_GRACE_NS;
}

/* The segment keeps an interior once the grace is off both edges. */
static bool
segment_usable(const ms_sampling_input *in)
{
	int64_t g = grace_of(in);
	return in->segment_min_ns <= in->segment_max_ns &&
	       sat_add(in->segment_min_ns, g) <=
	               sat_add(in->segment_max_ns, -g);
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
	    (rows == 0 || max_ts < sat_add(in->segment_min_ns, g) ||
	     min_ts > sat_add(in->segment_max_ns, -g)))
		in->edge_inputs++;
	in->ninputs++;
	in->input_rows += rows;
	if (rows > 0 && max_ts > frontier_ns)
		in->hot_inputs++;
	if (rows == 0 || min_ts > frontier_ns)
		in->young_inputs++;
}

bool
ms_sampling_predict(const ms_sampling_input *in, enum ms_sampling_class *cls,
                    enum ms_sampling_reason *reason)
{
	enum ms_sampling_reason r = MS_SREASON_NONE;
	if (!in->pipeline_enabled)
		r = MS_SREASON_PIPELINE_DISABLED;
	else if (in->nsamplers == 0)
		r = MS_SREASON_NO_SAMPLER;
	else if (in->event_disabled)
		r = MS_SREASON_EVENT_DISABLED;
	else if (in->ninputs == 0 || in->input_rows == 0)
		r = MS_SREASON_EMPTY_INPUT;
	else if (in->policy == MS_GRACE_SELECTION && in->hot_inputs > 0)
		r = MS_SREASON_MERGE_GRACE;
	else if (!in->guard_available ||
	         (has_segment(in) && !segment_usable(in)))
		r = MS_SREASON_GUARD_UNAVAILABLE;
	else if (has_segment(in) && in->edge_inputs == in->ninputs)
		r = MS_SREASON_FRAGMENT_GAP_CONTRACT;
	if (r != MS_SREASON_NONE) {
		*cls = MS_SAMPLING_NOT_EXECUTED;
		*reason = r;
		return false;
	}
	if (in->policy == MS_GRACE_TRACE && in->young_inputs == in->ninputs) {
		/* Every trace is hot: the stager keeps them all unevaluated. */
		*cls = MS_SAMPLING_ENABLED_NO_EVALUATION;
		*reason = MS_SREASON_MERGE_GRACE;
		return true;
	}
	*cls = MS_SAMPLING_EXECUTED; /* provisional: the stager says */
	*reason = MS_SREASON_NONE;
	return true;
}
