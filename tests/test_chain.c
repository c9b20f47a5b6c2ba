/*
 * test_chain.c - the chain of sampler links (core/chain.c): keep
 * masks are ANDed over every link; a link that errors, returns the wrong
 * number of verdicts, a value other than 0/1, or overruns the Decide
 * timeout is bypassed (fails open) with its reason in the link stats; a
 * timed-out call keeps reading a batch the caller already released; three
 * consecutive timeouts, or timeouts in three of the last six batches, open
 * the circuit and everything is kept; a plugin host loads the file the
 * chain checksummed, not what its path names by then; a call
 * that never returns does not keep the chain from closing. A link's
 * open() runs on a worker too and is bounded the same way: one that never
 * returns fails the chain's open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "mem_testlib.h"
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MS_TEST_TSAN 1
#endif
#endif
#ifndef MS_TEST_TSAN
#define MS_TEST_TSAN 0
#endif
#include "alloc_testlib.h"
#include "child_testlib.h"
#include "san_testlib.h"
#include "testdir.h"
#include "thread_testlib.h"

#include "ms_clock.h"
#include "ms_pipeline.h"
#include "pipeline_int.h"
#include "plugin_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NT 10

/* Ten traces "tr-0" .. "tr-9", two rows each. */
typedef struct rows10 {
	char ids[NT][8];
	ms_row rows[NT * 2];
} rows10;

static void
make_rows(rows10 *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NT; i++) {
		snprintf(r->ids[i], sizeof(r->ids[i]), "tr-%d", i);
		for (int k = 0; k < 2; k++) {
			ms_row *w = &r->rows[i * 2 + k];
			w->trace_id = (const uint8_t *)r->ids[i];
			w->trace_id_len = (uint32_t)strlen(r->ids[i]);
			w->start_ns = 1000 + k;
			w->latency_ms = 1;
		}
	}
}

/* make_rows, with two tags on row 3. */
static void
make_rows_tagged(rows10 *r)
{
	static const char *tags[] = { "http.status=500", "db=x" };
	make_rows(r);
	r->rows[3].tags = tags;
	r->rows[3].ntags = 2;
}

static void
path_of(char *buf, size_t n, const char *name)
{
	if (strncmp(name, "tp_", 3) == 0)
		snprintf(buf, n, "%s/%s.so", MS_TEST_PLUGIN_DIR, name);
	else
		snprintf(buf, n, "%s/%s.so", MS_PLUGIN_DIR, name);
}

typedef struct fx {
	ms_mem mem;
	ms_chain *c;
	ms_batch *b;
	rows10 rows;
	char paths[4][512];
} fx;

static void
open_chain_log(fx *f, const char *const *names, const char *const *configs,
               size_t n, uint64_t timeout_ns, enum ms_plugin_host_mode mode,
               ms_chain_log_fn log, void *log_ctx)
{
	ms_chain_link_spec links[4];
	for (size_t i = 0; i < n; i++) {
		path_of(f->paths[i], sizeof(f->paths[i]), names[i]);
		links[i].path = f->paths[i];
		links[i].config = configs ? configs[i] : "";
	}
	ms_mem_init(&f->mem, NULL);
	ms_chain_opts o = { .mem = &f->mem,
		            .decide_timeout_ns = timeout_ns,
		            .host_mode = mode,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope",
		            .log = log,
		            .log_ctx = log_ctx };
	ms_errbuf eb;
	if (ms_chain_open(&f->c, links, n, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	make_rows(&f->rows);
	assert_int_equal(ms_batch_from_rows(&f->b, &f->mem, MS_PROJ_ALL,
	                                    f->rows.rows, NT * 2, &eb),
	                 0);
}

static void
open_chain_mode(fx *f, const char *const *names, const char *const *configs,
                size_t n, uint64_t timeout_ns, enum ms_plugin_host_mode mode)
{
	open_chain_log(f, names, configs, n, timeout_ns, mode, NULL, NULL);
}

static void
open_chain(fx *f, const char *const *names, const char *const *configs,
           size_t n, uint64_t timeout_ns)
{
	open_chain_mode(f, names, configs, n, timeout_ns,
	                MS_PLUGIN_HOST_INPROC);
}

static void
close_chain(fx *f)
{
	ms_batch_release(f->b);
	ms_chain_close(f->c);
	tl_assert_no_live(&f->mem);
}

static int
count_kept(const uint8_t *keep)
{
	int n = 0;
	for (int i = 0; i < NT; i++)
		n += keep[i];
	return n;
}

/* One Decide of f's batch, which returns 0: how many traces it keeps. */
static int
decide_kept(fx *f, ms_chain_call *call)
{
	uint8_t keep[NT];
	assert_int_equal(ms_chain_decide(f->c, f->b, keep, call), 0);
	return count_kept(keep);
}

/* The counters of f's link i. */
static ms_link_stats
link_stats(fx *f, size_t i)
{
	ms_link_stats ls;
	ms_chain_link_stats(f->c, i, &ls);
	return ls;
}

static void
test_batch_columns(void **st)
{
	(void)st;
	rows10 r;
	make_rows_tagged(&r);
	r.rows[3].is_error = true;
	r.rows[3].latency_ms = 7;
	ms_batch *b;
	ms_errbuf eb;
	assert_int_equal(ms_batch_from_rows(&b, NULL,
	                                    MS_PROJ_TAGS | MS_PROJ_LATENCY,
	                                    r.rows, NT * 2, &eb),
	                 0);
	const ms_plugin_batch *v = ms_batch_view(b);
	assert_int_equal(v->ntraces, NT);
	assert_int_equal(v->nrows, NT * 2);
	assert_null(v->start_ns); /* not projected */
	assert_null(v->is_error);
	assert_null(v->service);
	assert_non_null(v->latency_ms);
	assert_int_equal(v->latency_ms[3], 7);
	assert_int_equal(v->traces[1].row_first, 2);
	assert_int_equal(v->traces[1].row_count, 2);
	assert_memory_equal(v->traces[1].trace_id, "tr-1", 4);
	assert_int_equal(v->traces[1].max_end_ns, 1001 + 7 * 1000000);
	assert_int_equal(v->traces[1].min_start_ns, 1000);
	assert_int_equal(v->ntags, 2);
	assert_int_equal(v->tag_first[3], 0);
	assert_int_equal(v->tag_first[4], 2);
	assert_string_equal(v->tags[0], "http.status=500");
	assert_int_equal(v->tag_len[1], 4);
	ms_batch_release(b);

	/* Out of order or split traces are refused. */
	ms_row two[2] = { r.rows[2], r.rows[0] };
	assert_int_equal(ms_batch_from_rows(&b, NULL, 0, two, 2, &eb),
	                 MS_ERR_INVAL);
}

static void
test_and_over_links(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask", "tp_mask", "tp_mask" };
	const char *cfg[] = { "13", "5", "9" };
	open_chain(&f, names, cfg, 3, 0);
	uint8_t keep[NT];
	ms_chain_call call;
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	for (int i = 0; i < NT; i++)
		assert_int_equal(keep[i],
		                 !(i == 1 || i == 3 || i == 5 || i == 9));
	assert_int_equal(call.kept, 6);
	assert_int_equal(call.links_ok, 3);
	ms_link_stats ls = link_stats(&f, 0);
	assert_string_equal(ls.name, "tp_mask");
	assert_int_equal(ls.calls, 1);
	assert_int_equal(ls.traces, NT);
	assert_int_equal(ls.kept, 8);
	assert_int_equal(ls.dropped, 2);
	assert_int_equal(ls.results[MS_LINK_OK], 1);
	uint64_t h = 0;
	for (int i = 0; i < MS_LINK_HIST_BUCKETS; i++)
		h += ls.hist[i];
	assert_int_equal(h, 1);
	close_chain(&f);
}

static void
fail_open_case(const char *bad, enum ms_link_result want, const char *why)
{
	fx f;
	const char *names[] = { bad, "tp_mask" };
	const char *cfg[] = { "", "02" };
	open_chain(&f, names, cfg, 2, 0);
	uint8_t keep[NT];
	ms_chain_call call;
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	/* The bad link is ignored; the good one still applies. */
	assert_int_equal(count_kept(keep), NT - 2);
	assert_false(keep[0]);
	assert_false(keep[2]);
	assert_int_equal(call.links_failed, 1);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[want], 1);
	assert_int_equal(ls.last_result, want);
	if (!strstr(ls.last_fail, why))
		fail_msg("'%s' not in '%s'", why, ls.last_fail);
	assert_int_equal(ls.kept + ls.dropped, 0);
	close_chain(&f);

	/* Alone, the failing link keeps everything. */
	open_chain(&f, &bad, NULL, 1, 0);
	assert_int_equal(decide_kept(&f, &call), NT);
	close_chain(&f);
}

static void
test_fail_open_error(void **st)
{
	(void)st;
	fail_open_case("tp_fail", MS_LINK_ERROR, "error -3");
}

static void
test_fail_open_wrong_length(void **st)
{
	(void)st;
	fail_open_case("tp_short", MS_LINK_WRONG_LENGTH, "9 verdicts for 10");
}

static void
test_fail_open_bad_value(void **st)
{
	(void)st;
	fail_open_case("tp_badval", MS_LINK_BAD_VALUE, "verdict 9 is 2");
}

/* No room for a thread (what `ulimit -v` leaves a process: pthread_create
 * failing with EAGAIN, thread_testlib.h): a link whose worker for open()
 * cannot start fails the chain's open, and one whose worker for Decide
 * cannot start fails open, each naming the system's reason and where to
 * look. Both said only "could not start a worker thread". */
static void
test_worker_without_threads(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask" };
	const char *cfg[] = { "02" };
	path_of(f.paths[0], sizeof(f.paths[0]), names[0]);
	ms_chain_link_spec link = { f.paths[0], cfg[0] };
	ms_mem_init(&f.mem, NULL);
	ms_chain_opts o = { .mem = &f.mem };
	ms_errbuf eb = { { 0 } };
	f.c = NULL;
	tl_threads_fail_all(true);
	int rc = ms_chain_open(&f.c, &link, 1, &o, &eb);
	tl_threads_fail_all(false);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_true(rc < 0);
	assert_null(f.c);
	assert_non_null(strstr(eb.msg, f.paths[0]));
	assert_non_null(strstr(eb.msg, "could not start a worker thread for "
	                               "its open(): "));
	assert_non_null(strstr(eb.msg, strerror(EAGAIN)));
	assert_non_null(strstr(eb.msg, "ulimit -v"));
	tl_assert_no_live(&f.mem);

	open_chain(&f, names, cfg, 1, 0);
	uint8_t keep[NT];
	ms_chain_call call;
	tl_threads_fail_all(true);
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	tl_threads_fail_all(false);
	assert_int_equal(count_kept(keep), NT);
	assert_int_equal(call.links_failed, 1);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.last_result, MS_LINK_HOST_ERROR);
	if (!strstr(ls.last_fail, "could not start a worker thread: ") ||
	    !strstr(ls.last_fail, strerror(EAGAIN)) ||
	    !strstr(ls.last_fail, "ulimit -v"))
		fail_msg("link failed open with \"%s\"", ls.last_fail);
	close_chain(&f);
}

/* One Decide of f's batch whose only link fails open with want before
 * reaching its plugin: the call is counted all the same, in the link's
 * counters and in the call's called_mask, with one result, so that
 * calls + circuit-open skips = Decide calls holds. Before, such a call
 * left a result but no call, and plugin_health failed the run on its
 * call count. */
static void
expect_unreached_call(fx *f, enum ms_link_result want, bool no_threads)
{
	ms_chain_call call;
	tl_threads_fail_all(no_threads);
	assert_int_equal(decide_kept(f, &call), NT);
	tl_threads_fail_all(false);
	ms_link_stats ls = link_stats(f, 0);
	if (ls.last_result != want)
		fail_msg("%s: %s", ms_link_result_name(ls.last_result),
		         ls.last_fail);
	uint64_t results = 0;
	for (int k = 0; k < MS_LINK_RESULT_COUNT; k++)
		results += ls.results[k];
	assert_int_equal(call.links_failed, 1);
	assert_int_equal(call.called_mask, 1);
	assert_int_equal(ls.calls, 1);
	assert_int_equal(results, 1);
	assert_int_equal(ls.traces, 0); /* none reached the plugin */
}

static void
test_call_counted_when_host_does_not_start(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask" };
	const char *cfg[] = { "02" };
	/* In process: its worker thread does not start. */
	open_chain(&f, names, cfg, 1, 0);
	expect_unreached_call(&f, MS_LINK_HOST_ERROR, true);
	close_chain(&f);
	/* In a plugin host: the host dies in the plugin's open(). */
	const char *crash[] = { "tp_cbcrash" };
	const char *where[] = { "open@host" };
	open_chain_mode(&f, crash, where, 1, 0, MS_PLUGIN_HOST_PROCESS);
	expect_unreached_call(&f, MS_LINK_CRASHED, false);
	close_chain(&f);
}

/* A chain of two links (tp_mask, alwayskeep) in one host mode, with a
 * batch decided once: what one call of the out-of-memory sweep does. */
typedef struct oom_ctx {
	enum ms_plugin_host_mode mode;
	char paths[2][512];
	ms_batch *b;
	unsigned decide_failed; /* calls whose Decide met the failure */
} oom_ctx;

static int
chain_open_decide_close(void *ctx, ms_errbuf *eb)
{
	oom_ctx *x = ctx;
	ms_chain_link_spec links[2] = { { x->paths[0], "02" },
		                        { x->paths[1], "" } };
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_chain_opts o = { .mem = &mem,
		            .host_mode = x->mode,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope" };
	ms_chain *c = NULL;
	int rc = ms_chain_open(&c, links, 2, &o, eb);
	if (rc == 0) {
		uint8_t keep[NT];
		ms_chain_call call;
		assert_int_equal(ms_chain_decide(c, x->b, keep, &call), 0);
		for (size_t i = 0; i < 2 && call.links_failed; i++) {
			ms_link_stats ls;
			ms_chain_link_stats(c, i, &ls);
			if (ls.last_result != MS_LINK_HOST_ERROR)
				continue;
			if (!strstr(ls.last_fail, "out of memory for ") ||
			    !strstr(ls.last_fail, " bytes)"))
				fail_msg("link %zu failed open with \"%s\"",
				         i + 1, ls.last_fail);
			x->decide_failed++;
		}
	}
	ms_chain_close(c);
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	if (st.live != 0)
		fail_msg("%lld bytes left (\"%s\")", (long long)st.live,
		         rc ? eb->msg : "");
	if (rc && !strstr(eb->msg, " bytes)"))
		fail_msg("no size in \"%s\"", eb->msg);
	return rc;
}

/* A chain out of memory at each allocation of its open (its own memory
 * and the plain malloc of its abandon record, log relay and plugin host)
 * and of a Decide, in either host mode, says what the memory was for and
 * how many bytes, and leaves nothing allocated (a Decide fails the link
 * open, saying so in its stats). It said only "chain: out of memory" and
 * "plugin host: out of memory"; a Decide said "out of memory for
 * verdicts". */
static void
test_chain_out_of_memory(void **st)
{
	(void)st;
	oom_ctx x;
	memset(&x, 0, sizeof(x));
	path_of(x.paths[0], sizeof(x.paths[0]), "tp_mask");
	path_of(x.paths[1], sizeof(x.paths[1]), "alwayskeep");
	rows10 r;
	make_rows(&r);
	ms_errbuf eb;
	assert_int_equal(ms_batch_from_rows(&x.b, NULL, MS_PROJ_ALL, r.rows,
	                                    NT * 2, &eb),
	                 0);
	const enum ms_plugin_host_mode modes[2] = { MS_PLUGIN_HOST_INPROC,
		                                    MS_PLUGIN_HOST_PROCESS };
	for (int i = 0; i < 2; i++) {
		x.mode = modes[i];
		x.decide_failed = 0;
		unsigned failed =
		        tl_alloc_sweep(chain_open_decide_close, &x, "chain");
		fprintf(stderr,
		        "host mode %d: %u opens and %u Decides "
		        "failed\n",
		        i, failed, x.decide_failed);
		assert_true(failed >= 8);
		assert_true(x.decide_failed >= 2);
	}
	ms_batch_release(x.b);
}

/* A batch out of memory at each of its allocations says for what and
 * how many bytes, and leaves nothing allocated: it said only "batch: out
 * of memory". */
static int
batch_from_rows10(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	rows10 *r = ctx;
	ms_batch *b = NULL;
	int rc = ms_batch_from_rows(&b, mem, MS_PROJ_ALL, r->rows, NT * 2, eb);
	if (rc == 0)
		assert_int_equal(ms_batch_view(b)->ntraces, NT);
	ms_batch_release(b);
	return rc;
}

static void
test_batch_out_of_memory(void **st)
{
	(void)st;
	rows10 r;
	make_rows_tagged(&r);
	assert_true(tl_mem_sweep(batch_from_rows10, &r, "batch: ") >= 5);
}

/* A Decide that writes past its n verdicts (8 more, all "keep") and
 * returns n: caught by the guard bytes after the verdict buffer and
 * failed open as wrong_length, in either host mode. Before, the call
 * counted as a success and the bytes landed in whatever followed. */
static void
test_verdict_overrun_is_wrong_length(void **st)
{
	(void)st;
	fail_open_case("tp_overrun", MS_LINK_WRONG_LENGTH,
	               "wrote past its 10 verdicts");
	const enum ms_plugin_host_mode modes[2] = { MS_PLUGIN_HOST_INPROC,
		                                    MS_PLUGIN_HOST_PROCESS };
	for (int i = 0; i < 2; i++) {
		fx f;
		const char *names[] = { "tp_overrun" };
		open_chain_mode(&f, names, NULL, 1, 0, modes[i]);
		uint8_t keep[NT];
		ms_chain_call call;
		assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
		ms_link_stats ls = link_stats(&f, 0);
		if (ls.last_result != MS_LINK_WRONG_LENGTH ||
		    !strstr(ls.last_fail, "wrote past its 10 verdicts"))
			fail_msg("%s: %s: %s",
			         ms_plugin_host_mode_name(modes[i]),
			         ms_link_result_name(ls.last_result),
			         ls.last_fail);
		close_chain(&f);
	}
}

/* A Decide in a plugin host that writes before its verdicts, over the
 * batch and the header of the shared region: the parent finds its
 * verdicts where it put them, not where the scribbled header says (it
 * read them from there, far outside the region: the workbench died of
 * the plugin's fault), and fails the call open. The host lives on, and
 * the next call gets a fresh header. */
static void
test_verdict_underrun_in_host_fails_open(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_underrun" };
	open_chain_mode(&f, names, NULL, 1, 0, MS_PLUGIN_HOST_PROCESS);
	for (int call = 0; call < 2; call++) {
		uint8_t keep[NT];
		ms_chain_call res;
		assert_int_equal(ms_chain_decide(f.c, f.b, keep, &res), 0);
		assert_int_equal(count_kept(keep), NT);
		assert_int_equal(res.links_failed, 1);
		ms_link_stats ls = link_stats(&f, 0);
		if (ls.last_result != MS_LINK_HOST_ERROR ||
		    !strstr(ls.last_fail, "wrote outside its 10 verdicts"))
			fail_msg("%s: %s", ms_link_result_name(ls.last_result),
			         ls.last_fail);
	}
	close_chain(&f);
}

static void
test_timeout_abandons_and_keeps_batch(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_slow", "tp_mask" };
	/* The timeout is per call, so the mask link must also be scheduled
	 * within it: 250 ms leaves room on a loaded machine, and the slow
	 * link sleeps six times that. */
	const char *cfg[] = { "1500", "1" };
	open_chain(&f, names, cfg, 2, 250 * 1000000ull); /* 250 ms */
	ms_chain_call call;
	/* The mask still applies. */
	assert_int_equal(decide_kept(&f, &call), NT - 1);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 1);
	assert_non_null(strstr(ls.last_fail, "timeout"));
	assert_true(ls.max_ns >= 250 * 1000000ull);
	assert_int_equal(ms_chain_abandoned(f.c), 1);
	assert_false(ms_chain_circuit_is_open(f.c));
	/* Release our reference now: the slow call still reads the batch
	 * (the sanitizer build would catch a use after free). */
	ms_batch_release(f.b);
	f.b = NULL;
	ms_plugin *slow = ms_chain_plugin(f.c, 0);
	ms_chain_close(f.c);
	(void)slow;
	tl_assert_no_live(&f.mem);
}

static void
test_circuit_opens_after_three_timeouts(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_slow", "tp_mask" };
	const char *cfg[] = { "200", "0" };
	open_chain(&f, names, cfg, 1, 20 * 1000000ull);
	ms_chain_call call;
	for (int i = 0; i < 3; i++) {
		assert_false(ms_chain_circuit_is_open(f.c));
		assert_int_equal(decide_kept(&f, &call), NT);
	}
	assert_true(ms_chain_circuit_is_open(f.c));
	assert_non_null(strstr(ms_chain_circuit_reason(f.c),
	                       "3 consecutive Decide timeouts"));
	assert_true(call.circuit_open);
	assert_int_equal(decide_kept(&f, &call), NT);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.calls, 3); /* not called once open */
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 3);
	assert_int_equal(ls.results[MS_LINK_CIRCUIT_OPEN], 1);
	close_chain(&f);
}

static void
test_circuit_open_keeps_everything(void **st)
{
	(void)st;
	/* A dropping link after a slow one: once the circuit opens, even
	 * the dropping link's verdicts no longer apply. */
	fx f;
	const char *names[] = { "tp_mask", "tp_slow" };
	/* 250 ms per call: the mask link's calls must finish within it on
	 * a loaded machine; the slow link sleeps six times that. */
	const char *cfg[] = { "0123", "1500" };
	open_chain(&f, names, cfg, 2, 250 * 1000000ull);
	uint8_t keep[NT];
	ms_chain_call call;
	for (int i = 0; i < 2; i++) {
		ms_chain_decide(f.c, f.b, keep, &call);
		assert_int_equal(count_kept(keep), NT - 4);
	}
	ms_chain_decide(f.c, f.b, keep, &call); /* third timeout */
	assert_true(call.circuit_open);
	assert_int_equal(count_kept(keep), NT);
	close_chain(&f);
}

static void
test_successful_batch_resets_timeout_count(void **st)
{
	(void)st;
	/* The slow link sleeps on calls 1, 4, 7 only: timeouts are never
	 * consecutive and never 3 of the last 6 batches, so the circuit
	 * stays closed. The other calls must finish within the timeout on
	 * a loaded machine (at 50 ms one did not under a load average of 5,
	 * at 300 ms one did not under 15), so it is 1 s and the slow calls
	 * sleep 1.5 s. */
	fx f;
	const char *names[] = { "tp_slow" };
	const char *cfg[] = { "1500/3" };
	open_chain(&f, names, cfg, 1, 1000 * 1000000ull);
	uint8_t keep[NT];
	for (int i = 0; i < 9; i++)
		ms_chain_decide(f.c, f.b, keep, NULL);
	assert_false(ms_chain_circuit_is_open(f.c));
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 3);
	assert_int_equal(ls.results[MS_LINK_OK], 6);
	close_chain(&f);
}

/* A link that overruns on every other call (1, 3, 5, ...) never times
 * out twice in a row, but 3 of the last 6 batches open the circuit: on
 * the fifth call, and the sixth keeps everything without calling it.
 * Before, only timeouts in a row counted and it never opened. */
static void
test_circuit_opens_on_failure_rate(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_slow" };
	const char *cfg[] = { "1500/2" };
	open_chain(&f, names, cfg, 1, 1000 * 1000000ull);
	ms_chain_call call;
	for (int i = 0; i < 5; i++) {
		assert_false(ms_chain_circuit_is_open(f.c));
		assert_int_equal(decide_kept(&f, &call), NT);
	}
	assert_true(ms_chain_circuit_is_open(f.c));
	fprintf(stderr, "circuit: %s\n", ms_chain_circuit_reason(f.c));
	assert_non_null(strstr(ms_chain_circuit_reason(f.c),
	                       "in 3 of the last 6 batches (last on link "
	                       "'tp_slow')"));
	assert_int_equal(decide_kept(&f, &call), NT);
	assert_true(call.circuit_open);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.calls, 5);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 3);
	assert_int_equal(ls.results[MS_LINK_OK], 2);
	close_chain(&f);
}

static void
test_overlapping_abandoned_calls(void **st)
{
	(void)st;
	/* Every batch abandons a slow call while the next starts: several
	 * calls run at once on old batches; closing waits for all. */
	fx f;
	const char *names[] = { "tp_slow", "tp_mask" };
	const char *cfg[] = { "300", "" };
	open_chain(&f, names, cfg, 2, 30 * 1000000ull);
	uint8_t keep[NT];
	for (int i = 0; i < 4; i++) {
		ms_batch *b;
		ms_errbuf eb;
		assert_int_equal(ms_batch_from_rows(&b, &f.mem, MS_PROJ_ALL,
		                                    f.rows.rows, NT * 2, &eb),
		                 0);
		ms_chain_decide(f.c, b, keep, NULL);
		ms_batch_release(b);
	}
	assert_true(ms_chain_abandoned(f.c) >= 1);
	close_chain(&f);
}

/* Open a chain of the one plugin name with config and options o, whose
 * memory accounting *o->mem is initialised here. */
static int
open_one(ms_chain **c, const char *name, const char *config,
         const ms_chain_opts *o, ms_errbuf *eb)
{
	char path[512];
	path_of(path, sizeof(path), name);
	ms_chain_link_spec link = { path, config };
	ms_mem_init(o->mem, NULL);
	return ms_chain_open(c, &link, 1, o, eb);
}

/* A config the plugin refuses is MS_ERR_CONFIG under either host, named
 * by the chain link, the plugin and the plugin's words; an open() out of
 * memory is MS_ERR_NOMEM, not a refused config. The process host's path
 * for it had no test. */
static void
test_open_refusal_under_both_hosts(void **st)
{
	(void)st;
	const enum ms_plugin_host_mode modes[2] = { MS_PLUGIN_HOST_INPROC,
		                                    MS_PLUGIN_HOST_PROCESS };
	const struct {
		const char *config, *said;
		int want;
	} cases[] = {
		{ "", "open: unknown key \"bogus\"", MS_ERR_CONFIG },
		{ "nomem", "open: out of memory (not its config): no memory",
		  MS_ERR_NOMEM },
	};
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < 2; k++) {
			ms_mem mem;
			ms_chain_opts o = { .mem = &mem,
				            .host_mode = modes[i],
				            .host_exe = MS_BINARY_DIR
				            "/tui/mergescope" };
			ms_chain *c = NULL;
			ms_errbuf eb = { "" };
			int rc = open_one(&c, "tp_openfail", cases[k].config,
			                  &o, &eb);
			assert_null(c);
			fprintf(stderr, "%s: %s\n",
			        ms_plugin_host_mode_name(modes[i]), eb.msg);
			if (rc != cases[k].want ||
			    !strstr(eb.msg, "tp_openfail.so") ||
			    !strstr(eb.msg, cases[k].said))
				fail_msg("%s, config \"%s\": %d: %s",
				         ms_plugin_host_mode_name(modes[i]),
				         cases[k].config, rc, eb.msg);
			tl_assert_no_live(&mem);
		}
	}
}

static void
test_stuck_call_never_blocks_close(void **st)
{
	(void)st;
	/* tp_loop never returns: three timeouts open the circuit, and
	 * closing waits its grace and leaves the three calls behind. Were
	 * the chain to join them, this test would never end. */
	ms_mem mem;
	ms_chain_opts o = { .mem = &mem,
		            .decide_timeout_ns = 20 * 1000000ull,
		            .close_grace_ns = 50 * 1000000ull };
	ms_chain *c;
	ms_errbuf eb;
	if (open_one(&c, "tp_loop", "", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	static rows10 rows; /* may be read by the calls left behind */
	make_rows(&rows);
	ms_batch *b;
	assert_int_equal(ms_batch_from_rows(&b, &mem, MS_PROJ_ALL, rows.rows,
	                                    NT * 2, &eb),
	                 0);
	uint8_t keep[NT];
	ms_chain_call call;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ms_chain_decide(c, b, keep, &call), 0);
		assert_int_equal(count_kept(keep), NT);
	}
	assert_true(call.circuit_open);
	assert_int_equal(ms_chain_abandoned(c), 3);
	ms_link_stats ls;
	ms_chain_link_stats(c, 0, &ls);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 3);
	assert_int_equal(ls.results[MS_LINK_CIRCUIT_OPEN], 1);
	ms_batch_release(b);
	ms_chain_close(c);
	/* The calls left behind keep their batch and buffers (never freed,
	 * and mem is never touched again, so it may go out of scope). */
	ms_mem_stats ms;
	ms_mem_stats_get(&mem, &ms);
	assert_true(ms.live > 0);
}

/* ---- open(): on the link's worker, bounded ------------------------- */

/* An open() that never returns fails the chain's open once the open
 * timeout has passed, in either host mode, naming the link and the
 * plugin's file; the call is left behind as a stuck Decide is. Were the
 * chain to wait for it, this test would never end. The timeout is long
 * enough for the good link before it (a host process to start, under
 * the sanitizers, on a loaded machine) to load within it. */
static void
test_open_hang_fails_chain_open(void **st)
{
	(void)st;
	/* The calls left behind keep their worker and plugin allocated
	 * (never freed, and the allocator is never touched again). */
	static ms_mem mem[2];
	char ok[512], hang[512];
	path_of(ok, sizeof(ok), "tp_mask");
	path_of(hang, sizeof(hang), "tp_openhang");
	ms_chain_link_spec links[2] = { { ok, "1" }, { hang, "" } };
	const enum ms_plugin_host_mode modes[2] = { MS_PLUGIN_HOST_INPROC,
		                                    MS_PLUGIN_HOST_PROCESS };
	for (int i = 0; i < 2; i++) {
		ms_mem_init(&mem[i], NULL);
		ms_chain_opts o = { .mem = &mem[i],
			            .open_timeout_ns = 2000 * 1000000ull,
			            .close_grace_ns = 50 * 1000000ull,
			            .host_mode = modes[i],
			            .host_exe = MS_BINARY_DIR "/tui/mergescope" };
		ms_chain *c = NULL;
		ms_errbuf eb;
		assert_int_equal(ms_chain_open(&c, links, 2, &o, &eb),
		                 MS_ERR_PLUGIN);
		assert_null(c);
		if (!strstr(eb.msg, "chain link 2: ") ||
		    !strstr(eb.msg, hang) ||
		    !strstr(eb.msg, "open() did not return within 2.000 s"))
			fail_msg("%s: %s", ms_plugin_host_mode_name(modes[i]),
			         eb.msg);
	}
}

/* An open() that returns after its timeout: the chain's open fails, and
 * closing the half-open chain waits for the call (close_grace_ns), whose
 * worker then closes the plugin and frees what it took over: nothing of
 * the chain is left. One that returns in time loads.
 * The timeout covers the load (dlopen, the entry point) before open():
 * a load still running when it ends is MS_ERR_TIMEOUT, not this test's
 * case, so the timeout leaves a loaded machine (and the sanitizers) a
 * second for it; open() returns two seconds after the timeout, which
 * the waiting thread has to wake before (else the call counts as in
 * time). With 50 ms and 300 ms either could run out under load. */
static void
test_late_open_is_cleaned_up(void **st)
{
	(void)st;
	ms_mem mem;
	ms_chain_opts o = { .mem = &mem,
		            .open_timeout_ns = 1000 * 1000000ull,
		            .close_grace_ns = 60 * 1000000000ull };
	ms_chain *c = NULL;
	ms_errbuf eb;
	/* open() sleeps 3 s, three times its timeout. */
	int rc = open_one(&c, "tp_openhang", "3000", &o, &eb);
	if (rc != MS_ERR_PLUGIN)
		fail_msg("rc %d, not MS_ERR_PLUGIN: %s", rc, eb.msg);
	assert_null(c);
	assert_non_null(strstr(eb.msg, "open() did not return"));
	tl_assert_no_live(&mem);

	/* One that returns within the (default, 5 s) timeout loads. */
	o.open_timeout_ns = 0;
	if (open_one(&c, "tp_openhang", "20", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	assert_string_equal(ms_plugin_name(ms_chain_plugin(c, 0)),
	                    "tp_openhang");
	ms_chain_close(c);
	tl_assert_no_live(&mem);
}

/* A hang in the plugin's entry point, at dlopen, fails the chain's open
 * after the open timeout like a hang in open() does, naming the file
 * (MS_ERR_TIMEOUT: the process may have to end without exit()).
 * Before, the load ran on the caller's thread, unbounded: SIGALRM (its
 * default action) ends the test then. */
static void
test_entry_hang_fails_chain_open(void **st)
{
	(void)st;
	static ms_mem mem; /* the call left behind keeps what it holds */
	ms_chain_opts o = { .mem = &mem,
		            .open_timeout_ns = 200 * 1000000ull,
		            .close_grace_ns = 50 * 1000000ull };
	ms_chain *c = NULL;
	ms_errbuf eb;
	alarm(60);
	assert_int_equal(open_one(&c, "tp_entryhang", "", &o, &eb),
	                 MS_ERR_TIMEOUT);
	alarm(0);
	assert_null(c);
	if (!strstr(eb.msg, "tp_entryhang.so: loading it") ||
	    !strstr(eb.msg, "did not return within 0.200 s"))
		fail_msg("%s", eb.msg);
}

/* The child of test_constructor_hang_fails_chain_open: a chain of
 * tp_ctorhang opened, its message written to fd; 0 when the open timed
 * out. */
static int
open_ctorhang(void *arg, int fd)
{
	(void)arg;
	alarm(60);
	ms_chain_opts o = { .open_timeout_ns = 200 * 1000000ull,
		            .close_grace_ns = 50 * 1000000ull };
	char path[512];
	path_of(path, sizeof(path), "tp_ctorhang");
	ms_chain_link_spec link = { path, "" };
	ms_chain *c = NULL;
	ms_errbuf eb = { "" };
	int rc = ms_chain_open(&c, &link, 1, &o, &eb);
	if (write(fd, eb.msg, strlen(eb.msg)) < 0)
		return 3;
	return rc == MS_ERR_TIMEOUT ? 0 : 1;
}

/* The same for a library constructor that never returns. It hangs
 * inside dlopen, holding the dynamic loader's lock for good, so it runs
 * in a child process that ends with _exit. */
static void
test_constructor_hang_fails_chain_open(void **st)
{
	(void)st;
#if defined(__SANITIZE_THREAD__) || MS_TEST_TSAN
	/* ThreadSanitizer refuses a thread started in a child forked from
	 * a threaded process (the earlier tests' abandoned calls): the
	 * plain and AddressSanitizer builds run this test. */
	skip();
#endif
	int rfd;
	pid_t pid = ms_test_child(open_ctorhang, NULL, &rfd);
	char msg[600] = "";
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(msg) - 1 &&
	       (r = read(rfd, msg + got, sizeof(msg) - 1 - got)) > 0)
		got += (size_t)r;
	close(rfd);
	int status = ms_test_child_wait(pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child status %d: %s", status, msg);
	if (!strstr(msg, "tp_ctorhang.so: loading it") ||
	    !strstr(msg, "did not return within 0.200 s"))
		fail_msg("%s", msg);
}

/* A stats() that never returns: reading the link's counters gives up
 * after the open timeout and returns none, then and from then on without
 * calling it again. Before, it was called on the reader's thread. */
static void
test_stats_hang_is_bounded(void **st)
{
	(void)st;
	static ms_mem mem; /* the call left behind keeps what it holds */
	/* The timeout also bounds the load and open() (a second, for a
	 * loaded machine); a second wait for stats() would take as long. */
	const int64_t timeout = 1000 * 1000000ll;
	ms_chain_opts o = { .mem = &mem,
		            .open_timeout_ns = (uint64_t)timeout,
		            .close_grace_ns = 50 * 1000000ull };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (open_one(&c, "tp_statshang", "", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	ms_plugin_stat s[8];
	alarm(60);
	assert_int_equal(ms_chain_link_plugin_stats(c, 0, s, 8, NULL), 0);
	int64_t t0 = ms_mono_ns();
	assert_int_equal(ms_chain_link_plugin_stats(c, 0, s, 8, NULL), 0);
	/* Not called again: no second wait of the timeout. */
	assert_true(ms_mono_ns() - t0 < timeout);
	assert_int_equal(ms_chain_abandoned(c), 1);
	ms_chain_close(c);
	alarm(0);

	/* A plugin whose stats() returns is read through the same worker.
	 * Its stats() and close() return at once, but on threads of their
	 * own: the bounds are the defaults and a long close grace, which a
	 * loaded machine cannot run out (a close() past a 50 ms grace left
	 * the plugin loaded and its memory live). */
	ms_mem mem2;
	o = (ms_chain_opts){ .mem = &mem2,
		             .close_grace_ns = 60 * 1000000000ull };
	if (open_one(&c, "tp_mask", "", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	assert_int_equal(ms_chain_link_plugin_stats(c, 0, s, 8, NULL), 2);
	assert_string_equal(s[0].name, "calls");
	ms_chain_close(c);
	tl_assert_no_live(&mem2);
}

typedef struct log_cap {
	char msg[1024];
	int n;
} log_cap;

static void
log_capture(void *ctx, const ms_chain_log_line *ln)
{
	log_cap *lc = ctx;
	snprintf(lc->msg, sizeof(lc->msg), "%s", ln->msg ? ln->msg : "");
	lc->n++;
}

/* A plugin whose close() finds no thread to run on (no room for one, or
 * no memory for its record) is closed on the closing thread, and the log
 * says why, with ms_thread_fail's wording. It was closed there without a
 * word: a close() that then hung held the chain's close for ever with
 * nothing to say why the grace did not apply. */
static void
test_closer_without_threads(void **st)
{
	(void)st;
	ms_mem mem;
	log_cap lc;
	memset(&lc, 0, sizeof(lc));
	ms_chain_opts o = { .mem = &mem, .log = log_capture, .log_ctx = &lc };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (open_one(&c, "tp_mask", "02", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	tl_threads_fail_all(true);
	ms_chain_close(c);
	tl_threads_fail_all(false);
	tl_assert_no_live(&mem);
	fprintf(stderr, "logged: %s\n", lc.msg);
	assert_int_equal(lc.n, 1);
	assert_non_null(strstr(lc.msg, "tp_mask.so (tp_mask): could not "
	                               "start a thread for its close(): "));
	assert_non_null(strstr(lc.msg, strerror(EAGAIN)));
	assert_non_null(strstr(lc.msg, "ulimit -v"));
	assert_non_null(strstr(lc.msg, "close() runs on the closing thread"));

	/* Each allocation of the close failed in turn: the closer's record
	 * is one, and its failure is said the same way. */
	unsigned said = 0;
	for (long k = 0;; k++) {
		memset(&lc, 0, sizeof(lc));
		if (open_one(&c, "tp_mask", "02", &o, &eb))
			fail_msg("chain: %s", eb.msg);
		tl_alloc_fail_nth(k);
		ms_chain_close(c);
		if (!tl_alloc_disarm())
			break;
		tl_assert_no_live(&mem);
		if (lc.n == 0)
			continue;
		fprintf(stderr, "logged: %s\n", lc.msg);
		if (!strstr(lc.msg, "(tp_mask): out of memory for the record "
		                    "of its close() thread (") ||
		    !strstr(lc.msg, " bytes); close() runs on the closing "
		                    "thread"))
			fail_msg("allocation %ld: \"%s\"", k, lc.msg);
		said++;
	}
	assert_int_equal(said, 1);
}

/* A close() that never returns: closing the chain waits close_grace_ns
 * for it, then leaves it running and says so in the log. Before, the
 * chain's close waited for ever (and with it the run's end). */
static void
test_close_hang_is_bounded(void **st)
{
	(void)st;
	static ms_mem mem; /* the plugin left loaded stays allocated */
	static log_cap lc;
	ms_chain_opts o = { .mem = &mem,
		            .close_grace_ns = 300 * 1000000ull,
		            .log = log_capture,
		            .log_ctx = &lc };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (open_one(&c, "tp_closehang", "", &o, &eb))
		fail_msg("chain: %s", eb.msg);
	alarm(60);
	ms_chain_close(c);
	alarm(0);
	assert_int_equal(lc.n, 1);
	if (!strstr(lc.msg, "tp_closehang.so (tp_closehang): close() did "
	                    "not return within 0.300 s"))
		fail_msg("log: %s", lc.msg);
}

/* What a chain's sink got, per link. */
typedef struct log_tally {
	pthread_mutex_t mu;
	uint64_t lines[2], lost[2];
	char first[2][256];
	bool bad_link;
} log_tally;

static void
log_tally_line(void *ctx, const ms_chain_log_line *ln)
{
	log_tally *t = ctx;
	pthread_mutex_lock(&t->mu);
	if (ln->link >= 2) {
		t->bad_link = true;
	} else if (ln->msg) {
		if (!t->lines[ln->link]++)
			snprintf(t->first[ln->link], sizeof(t->first[0]),
			         "%s %s", ln->plugin, ln->msg);
	} else {
		t->lost[ln->link] += ln->lost;
	}
	pthread_mutex_unlock(&t->mu);
}

/* Two links of a plugin that logs: every line it logged reaches the sink
 * with its link's index, cleaned to one printable line, or is counted as
 * lost (a host's full channel and queue; never in process), and a host
 * loses its later lines, not its first. Before, the chain gave the sink
 * only the plugin's name (the links could not be told apart), and a
 * plugin host logged nowhere. */
static void
check_link_logs(enum ms_plugin_host_mode mode)
{
	static log_tally t = { .mu = PTHREAD_MUTEX_INITIALIZER };
	memset(t.lines, 0, sizeof(t.lines));
	memset(t.lost, 0, sizeof(t.lost));
	fx f;
	const char *names[] = { "tp_log", "tp_log" };
	const char *cfg[] = { "300", "2" };
	open_chain_log(&f, names, cfg, 2, 0, mode, log_tally_line, &t);
	uint8_t keep[NT];
	ms_chain_call call;
	for (int rep = 0; rep < 3; rep++) {
		assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
		assert_int_equal(call.links_ok, 2);
	}
	close_chain(&f);
	/* open() logs once in this process, and in process mode once more
	 * in the link's host. */
	uint64_t opens = mode == MS_PLUGIN_HOST_PROCESS ? 2 : 1;
	assert_false(t.bad_link);
	assert_int_equal(t.lines[0] + t.lost[0], opens + 3 * 300);
	assert_int_equal(t.lines[1] + t.lost[1], opens + 3 * 2);
	assert_int_equal(t.lost[1], 0);
	assert_true(t.lines[0] >= opens + 256);
	if (mode == MS_PLUGIN_HOST_INPROC) {
		assert_int_equal(t.lost[0], 0);
		assert_int_equal(t.lost[1], 0);
	}
	assert_string_equal(t.first[0], "tp_log opened ?[31mred");
	assert_string_equal(t.first[1], "tp_log opened ?[31mred");
}

static void
test_link_logs_inproc(void **st)
{
	(void)st;
	check_link_logs(MS_PLUGIN_HOST_INPROC);
}

static void
test_link_logs_process(void **st)
{
	(void)st;
	check_link_logs(MS_PLUGIN_HOST_PROCESS);
}

/* ---- Process mode: the links run in host processes ---------------- */

static void
test_process_and_over_links(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask", "tp_mask", "tp_slow" };
	const char *cfg[] = { "13", "5", "0" };
	open_chain_mode(&f, names, cfg, 3, 0, MS_PLUGIN_HOST_PROCESS);
	uint8_t keep[NT];
	ms_chain_call call;
	for (int rep = 0; rep < 2; rep++) {
		assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
		assert_int_equal(call.links_ok, 3);
		for (int i = 0; i < NT; i++)
			assert_int_equal(keep[i],
			                 !(i == 1 || i == 3 || i == 5));
	}
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_OK], 2);
	assert_int_equal(ls.dropped, 4);
	/* The plugins' own counters come from their hosts, which decided
	 * (the workbench's copy never does). */
	ms_plugin_stat ps[8];
	unsigned starts = 0;
	assert_int_equal(ms_chain_link_plugin_stats(f.c, 2, ps, 8, &starts), 4);
	assert_int_equal(starts, 1);
	assert_string_equal(ps[0].name, "calls");
	assert_int_equal(ps[0].value, 2);
	assert_int_equal(ms_plugin_stats(ms_chain_plugin(f.c, 2), ps, 8), 4);
	assert_int_equal(ps[0].value, 0);
	close_chain(&f);
}

/* The host of kind dies in its first call: fail-open "crashed" with how
 * it ended; the next call runs in a new host. */
static void
crash_case_process(const char *name, const char *how)
{
	fx f;
	const char *names[] = { name, "tp_mask" };
	const char *cfg[] = { "1", "0" }; /* calls 1, 3 ... of a host crash */
	open_chain_mode(&f, names, cfg, 2, 0, MS_PLUGIN_HOST_PROCESS);
	uint8_t keep[NT];
	ms_chain_call call;
	/* Host 1: call 0 fine, call 1 dies. Host 2: call 0 fine. */
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	assert_int_equal(call.links_ok, 2);
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	assert_int_equal(call.links_failed, 1);
	assert_int_equal(count_kept(keep), NT - 1); /* mask still applies */
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.last_result, MS_LINK_CRASHED);
	if (!strstr(ls.last_fail, how))
		fail_msg("last_fail \"%s\" lacks \"%s\"", ls.last_fail, how);
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	assert_int_equal(call.links_ok, 2);
	ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_OK], 2);
	assert_int_equal(ls.results[MS_LINK_CRASHED], 1);
	assert_string_equal(ms_link_result_name(MS_LINK_CRASHED), "crashed");
	/* The counters are the second host's: one call since it started. */
	ms_plugin_stat ps[4];
	unsigned starts = 0;
	assert_int_equal(ms_chain_link_plugin_stats(f.c, 0, ps, 4, &starts), 2);
	assert_int_equal(starts, 2);
	assert_string_equal(ps[0].name, "calls");
	assert_int_equal(ps[0].value, 1);
	close_chain(&f);
}

static void
test_process_segv_fails_open(void **st)
{
	(void)st;
	crash_case_process("tp_segv", "killed by signal 11");
}

static void
test_process_abort_fails_open(void **st)
{
	(void)st;
	crash_case_process("tp_abort", "killed by signal 6");
}

static void
test_process_exit_fails_open(void **st)
{
	(void)st;
	crash_case_process("tp_exit", "exited with status 3");
}

static void
test_process_crashes_open_the_circuit(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_segv" };
	open_chain_mode(&f, names, NULL, 1, 0, MS_PLUGIN_HOST_PROCESS);
	ms_chain_call call;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(decide_kept(&f, &call), NT);
	}
	assert_true(call.circuit_open);
	assert_non_null(strstr(ms_chain_circuit_reason(f.c),
	                       "3 consecutive Decide timeouts or crashes"));
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_CRASHED], 3);
	assert_int_equal(ls.results[MS_LINK_CIRCUIT_OPEN], 1);
	close_chain(&f);
}

static void
test_process_loop_times_out(void **st)
{
	(void)st;
	/* The host that never answers is killed: nothing is left behind.
	 * The timeout also bounds the healthy link's call, which starts its
	 * host (an exec and a dlopen, slow in a sanitizer build): 2 s. */
	fx f;
	const char *names[] = { "tp_loop", "tp_mask" };
	const char *cfg[] = { "", "0" };
	open_chain_mode(&f, names, cfg, 2, 2000 * 1000000ull,
	                MS_PLUGIN_HOST_PROCESS);
	ms_chain_call call;
	assert_int_equal(decide_kept(&f, &call), NT - 1);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 1);
	assert_non_null(strstr(ls.last_fail, "plugin host killed"));
	assert_int_equal(ms_chain_abandoned(f.c), 0);
	close_chain(&f);
}

/* A host whose plugin writes something other than an answer into the
 * channel to the workbench and carries on (here: never returns) is not
 * waited for without end: the call fails open within a second and the
 * host is killed. Before, the workbench took the broken channel for a
 * host that had died and waited for it to exit, for ever. SIGALRM (its
 * default action) ends a test that hangs. */
static void
test_process_garbled_channel_is_bounded(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_garble", "tp_mask" };
	const char *cfg[] = { "", "0" };
	open_chain_mode(&f, names, cfg, 2, 2000 * 1000000ull,
	                MS_PLUGIN_HOST_PROCESS);
	uint8_t keep[NT];
	ms_chain_call call;
	alarm(60);
	int64_t t0 = ms_mono_ns();
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	int64_t took = ms_mono_ns() - t0;
	alarm(0);
	assert_true(took < 30 * 1000000000ll);
	assert_int_equal(count_kept(keep), NT - 1); /* mask still applies */
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.last_result, MS_LINK_CRASHED);
	if (!strstr(ls.last_fail, "broke its channel"))
		fail_msg("last_fail \"%s\"", ls.last_fail);
	/* The next call starts a new host, which breaks its channel too. */
	assert_int_equal(ms_chain_decide(f.c, f.b, keep, &call), 0);
	ls = link_stats(&f, 0);
	assert_int_equal(ls.results[MS_LINK_CRASHED], 2);
	close_chain(&f);
}

/* A plugin whose stats() never returns, in its host: the first call waits
 * the open timeout (the host's start), the plugin log says which plugin
 * and which call, and a host that does not call stats() makes the call:
 * no fail-open, as in process (test_stats_hang_is_bounded), and every
 * later call answers too. Before, that first call failed open as a
 * timeout (plugin_health failed in process mode only); before that,
 * each host started called it and hung until the timeout again. */
static void
test_process_stats_hang_costs_no_call(void **st)
{
	(void)st;
	char path[512];
	path_of(path, sizeof(path), "tp_statshang");
	ms_chain_link_spec link = { path, "" };
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	log_cap lc;
	memset(&lc, 0, sizeof(lc));
	/* The open timeout bounds the host's start (exec, the plugin's
	 * load) on the first call too: two seconds, which a loaded machine
	 * under the sanitizers needs (500 ms ran out). */
	ms_chain_opts o = { .mem = &mem,
		            .decide_timeout_ns = 30 * 1000000000ull,
		            .open_timeout_ns = 2000 * 1000000ull,
		            .host_mode = MS_PLUGIN_HOST_PROCESS,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope",
		            .log = log_capture,
		            .log_ctx = &lc };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (ms_chain_open(&c, &link, 1, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	rows10 rows;
	make_rows(&rows);
	ms_batch *b;
	assert_int_equal(ms_batch_from_rows(&b, &mem, MS_PROJ_ALL, rows.rows,
	                                    NT * 2, &eb),
	                 0);
	uint8_t keep[NT];
	ms_chain_call call;
	ms_link_stats ls;
	alarm(120);
	assert_int_equal(ms_chain_decide(c, b, keep, &call), 0);
	ms_chain_link_stats(c, 0, &ls);
	if (ls.last_result != MS_LINK_OK)
		fail_msg("call 1: %s: %s", ms_link_result_name(ls.last_result),
		         ls.last_fail);
	assert_false(call.failed_mask);
	fprintf(stderr, "logged: %s\n", lc.msg);
	assert_int_equal(lc.n, 1);
	assert_non_null(strstr(lc.msg, "tp_statshang.so (tp_statshang): "
	                               "stats() did not return within "
	                               "2.000 s"));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ms_chain_decide(c, b, keep, &call), 0);
		ms_chain_link_stats(c, 0, &ls);
		if (ls.last_result != MS_LINK_OK)
			fail_msg("call %d: %s: %s", i + 2,
			         ms_link_result_name(ls.last_result),
			         ls.last_fail);
	}
	alarm(0);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 0);
	assert_int_equal(ls.results[MS_LINK_OK], 4);
	assert_int_equal(lc.n, 1); /* said once */
	ms_batch_release(b);
	ms_chain_close(c);
	tl_assert_no_live(&mem);
}

/* A plugin whose stats() hangs only after a Decide has returned its
 * verdicts, in its host: the call costs the Decide timeout once, named in
 * the plugin log, and the verdicts it returned (drop tr-2, tr-5) stand.
 * Before: the call failed open as a timeout, keeping every trace. */
static void
stats_after_decide_case(const char *config, const char *said)
{
	char path[512];
	path_of(path, sizeof(path), "tp_statshang");
	ms_chain_link_spec link = { path, config };
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	log_cap lc;
	memset(&lc, 0, sizeof(lc));
	ms_chain_opts o = { .mem = &mem,
		            .decide_timeout_ns = 500 * 1000000ull,
		            .open_timeout_ns = 30 * 1000000000ull,
		            .host_mode = MS_PLUGIN_HOST_PROCESS,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope",
		            .log = log_capture,
		            .log_ctx = &lc };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (ms_chain_open(&c, &link, 1, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	rows10 rows;
	make_rows(&rows);
	ms_batch *b;
	assert_int_equal(ms_batch_from_rows(&b, &mem, MS_PROJ_ALL, rows.rows,
	                                    NT * 2, &eb),
	                 0);
	uint8_t keep[NT];
	ms_chain_call call;
	ms_link_stats ls;
	alarm(120);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ms_chain_decide(c, b, keep, &call), 0);
		ms_chain_link_stats(c, 0, &ls);
		if (ls.last_result != MS_LINK_OK)
			fail_msg("call %d: %s: %s", i + 1,
			         ms_link_result_name(ls.last_result),
			         ls.last_fail);
		assert_int_equal(count_kept(keep), NT - 2);
		assert_false(keep[2]);
		assert_false(keep[5]);
	}
	alarm(0);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 0);
	assert_int_equal(ls.dropped, 4);
	fprintf(stderr, "logged: %s\n", lc.msg);
	assert_int_equal(lc.n, 1); /* said once */
	assert_non_null(strstr(lc.msg, said));
	assert_non_null(strstr(lc.msg, "its verdicts stand"));
	assert_false(ms_chain_circuit_is_open(c));
	ms_batch_release(b);
	ms_chain_close(c);
	tl_assert_no_live(&mem);
}

static void
test_process_stats_hang_after_decide_keeps_verdicts(void **st)
{
	(void)st;
	stats_after_decide_case("25", "tp_statshang.so (tp_statshang): "
	                              "stats() after Decide did not return "
	                              "within the 0.500 s Decide timeout");
}

/* The same when that stats() crashes its host. */
static void
test_process_stats_crash_after_decide_keeps_verdicts(void **st)
{
	(void)st;
	stats_after_decide_case("!25", "tp_statshang.so (tp_statshang): "
	                               "stats() after Decide ended its "
	                               "plugin host (killed by signal 11");
}

/* A host whose plugin is loaded and opened but whose stats(), which the
 * host calls before it says it is ready, never returns: the start gets
 * the open timeout, not the (here much longer) Decide timeout, the
 * plugin log names stats(), and the call is made by a host that does not
 * call it. Before: the Decide timeout, and a host_error that said "no
 * answer before the timeout"; then a timeout naming stats(). */
static void
test_process_ready_stats_hang_gets_open_timeout(void **st)
{
	(void)st;
	char path[512];
	path_of(path, sizeof(path), "tp_statshang");
	ms_chain_link_spec link = { path, "" };
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	log_cap lc;
	memset(&lc, 0, sizeof(lc));
	ms_chain_opts o = { .mem = &mem,
		            .decide_timeout_ns = 30 * 1000000000ull,
		            .open_timeout_ns = 2000 * 1000000ull,
		            .host_mode = MS_PLUGIN_HOST_PROCESS,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope",
		            .log = log_capture,
		            .log_ctx = &lc };
	ms_chain *c = NULL;
	ms_errbuf eb;
	if (ms_chain_open(&c, &link, 1, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	rows10 rows;
	make_rows(&rows);
	ms_batch *b;
	assert_int_equal(ms_batch_from_rows(&b, &mem, MS_PROJ_ALL, rows.rows,
	                                    NT * 2, &eb),
	                 0);
	uint8_t keep[NT];
	ms_chain_call call;
	alarm(120);
	int64_t t0 = ms_mono_ns();
	assert_int_equal(ms_chain_decide(c, b, keep, &call), 0);
	int64_t took = ms_mono_ns() - t0;
	alarm(0);
	assert_int_equal(count_kept(keep), NT);
	ms_link_stats ls;
	ms_chain_link_stats(c, 0, &ls);
	if (ls.last_result != MS_LINK_OK)
		fail_msg("%s: %s", ms_link_result_name(ls.last_result),
		         ls.last_fail);
	if (!strstr(lc.msg, "stats() did not return within 2.000 s"))
		fail_msg("logged: %s", lc.msg);
	assert_true(took < 20 * 1000000000ll); /* not the Decide timeout */
	ms_batch_release(b);
	ms_chain_close(c);
	tl_assert_no_live(&mem);
}

/* A plugin host that dies outside Decide says in which of the plugin's
 * callbacks: open() or stats() while it starts, close() when it is
 * stopped. Before, a start said only how the host ended and a stop said
 * nothing. */
static void
test_process_crash_names_the_callback(void **st)
{
	(void)st;
	char path[512];
	path_of(path, sizeof(path), "tp_cbcrash");
	const ms__phost_start_opts so = { 10 * 1000000000ull, 0, NULL, false,
		                           NULL, NULL };
	static const struct {
		const char *where, *want;
	} starts[] = {
		{ "open", "in its plugin's open()" },
		{ "stats", "in its plugin's stats()" },
	};
	for (size_t i = 0; i < 2; i++) {
		ms__phost *h = NULL;
		enum ms__phost_result how = MS__PHOST_OK;
		ms_errbuf eb = { "" };
		assert_int_not_equal(
		        ms__phost_start(&h, MS_BINARY_DIR "/tui/mergescope",
		                        path, starts[i].where, &so, &how, &eb),
		        0);
		assert_null(h);
		assert_int_equal(how, MS__PHOST_CRASHED);
		if (!strstr(eb.msg, "killed by signal 11") ||
		    !strstr(eb.msg, starts[i].want))
			fail_msg("%s: %s", starts[i].where, eb.msg);
	}
	ms__phost *h = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms__phost_start(&h, MS_BINARY_DIR "/tui/mergescope",
	                                 path, "close", &so, NULL, &eb),
	                 0);
	char why[200] = "";
	assert_true(ms__phost_stop(h, 10 * 1000000000ull, why, sizeof(why)));
	if (!strstr(why, "killed by signal 11") || !strstr(why, "in close()"))
		fail_msg("close: %s", why);

	/* A host whose close() never returns is killed after the grace. */
	path_of(path, sizeof(path), "tp_closehang");
	assert_int_equal(ms__phost_start(&h, MS_BINARY_DIR "/tui/mergescope",
	                                 path, "", &so, NULL, &eb),
	                 0);
	assert_true(ms__phost_stop(h, 200 * 1000000ull, why, sizeof(why)));
	assert_non_null(strstr(why, "close() did not return within 0.200 s"));
}

/* The pid of the plugin host whose command line holds marker, or -1. */
static pid_t
host_with(const char *marker)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	struct dirent *de;
	pid_t found = -1;
	while (found < 0 && (de = readdir(d))) {
		char path[300], buf[4096];
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		bool host = false, mine = false;
		for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
			buf[n] = '\0';
			host |= strcmp(buf + i, "__plugin-host") == 0;
			mine |= strstr(buf + i, marker) != NULL;
		}
		if (host && mine)
			found = (pid_t)atol(de->d_name);
	}
	closedir(d);
	return found;
}

/* Whether pid has ended (gone, or a zombie nobody reaps). */
static bool
ended(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

/* A plugin host volunteers as the kernel's first victim when memory runs
 * out, and its plugin may map only host_mem_max more than the host held
 * at its start: a plugin that leaks or asks for more is refused it in its
 * own process and fails open, and the workbench's memory is never its to
 * take. Before, the host took what it asked for (a leaking plugin in a
 * run's cgroup had the OOM killer take the workbench too). */
static void
test_process_host_memory_capped(void **st)
{
	(void)st;
	char cfg0[64];
	/* tp_hog: 128 MiB per call; the marker finds its host. */
	snprintf(cfg0, sizeof(cfg0), "128 hog-%ld", (long)getpid());
	fx f;
	ms_chain_link_spec link = { f.paths[0], cfg0 };
	path_of(f.paths[0], sizeof(f.paths[0]), "tp_hog");
	ms_mem_init(&f.mem, NULL);
	ms_chain_opts o = { .mem = &f.mem,
		            .host_mode = MS_PLUGIN_HOST_PROCESS,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope",
		            .host_mem_max = 32u << 20 };
	ms_errbuf eb;
	if (ms_chain_open(&f.c, &link, 1, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	make_rows(&f.rows);
	assert_int_equal(ms_batch_from_rows(&f.b, &f.mem, MS_PROJ_ALL,
	                                    f.rows.rows, NT * 2, &eb),
	                 0);
	ms_chain_call call;
	assert_int_equal(decide_kept(&f, &call), NT); /* failed open */
	assert_int_equal(call.links_failed, 1);
	ms_link_stats ls = link_stats(&f, 0);
	if (ls.last_result == MS_LINK_OK)
		fail_msg("a 128 MiB Decide ran in a host capped at 32 MiB");
	if (!strstr(ls.last_fail, "its host lets it allocate 32 MiB"))
		fail_msg("the cap is not named: \"%s\"", ls.last_fail);
	/* A plugin's error leaves its host serving (a sanitizer's allocator
	 * ends it instead: then there is none to look at). */
	pid_t host = host_with(cfg0 + 4);
	if (host > 0) {
		char path[64], adj[16] = "";
		snprintf(path, sizeof(path), "/proc/%ld/oom_score_adj",
		         (long)host);
		FILE *fp = fopen(path, "r");
		assert_non_null(fp);
		assert_non_null(fgets(adj, sizeof(adj), fp));
		fclose(fp);
		assert_int_equal(atoi(adj), 1000);
	}
	close_chain(&f);
}

/* The workbench of test_process_host_ends_with_workbench: this test
 * program run again as `--workbench MARKER` (a fresh process: a thread
 * started in a child forked from a threaded one is refused by
 * ThreadSanitizer), a chain of one tp_loop link in process mode, in a
 * Decide that never returns. */
static int
workbench_main(const char *marker)
{
	fx f;
	const char *names[] = { "tp_loop" };
	const char *cfg[] = { marker };
	open_chain_mode(&f, names, cfg, 1, 120 * 1000000000ull,
	                MS_PLUGIN_HOST_PROCESS);
	uint8_t keep[NT];
	ms_chain_call call;
	(void)ms_chain_decide(f.c, f.b, keep, &call);
	return 0;
}

/* A workbench that ends (here killed) while a host is in a Decide that
 * never returns takes the host with it: the host is not left running
 * under init for ever. */
static void
test_process_host_ends_with_workbench(void **st)
{
	(void)st;
	char marker[64];
	snprintf(marker, sizeof(marker), "0 orphan-%ld", (long)getpid());
	pid_t wb = fork();
	assert_true(wb >= 0);
	if (wb == 0) {
		execl("/proc/self/exe", "test_chain", "--workbench", marker,
		      (char *)NULL);
		_exit(127);
	}
	pid_t host = -1;
	for (int i = 0; i < 3000 && host < 0; i++) {
		struct timespec ts = { 0, 10000000L };
		nanosleep(&ts, NULL);
		host = host_with(marker);
	}
	assert_true(host > 0);
	struct timespec settle = { 0, 500000000L }; /* into its Decide */
	nanosleep(&settle, NULL);
	assert_int_equal(kill(wb, SIGKILL), 0);
	int wst;
	assert_int_equal(waitpid(wb, &wst, 0), wb);
	bool gone = false;
	for (int i = 0; i < 1000 && !gone; i++) {
		struct timespec ts = { 0, 10000000L };
		nanosleep(&ts, NULL);
		gone = ended(host);
	}
	if (!gone) {
		kill(host, SIGKILL);
		fail_msg("plugin host %ld outlived its workbench", (long)host);
	}
}

/* Copy test plugin name to file to (replacing it by a rename, as a
 * rebuild does). */
static void
put_plugin(const char *name, const char *to)
{
	char from[512], tmp[600];
	path_of(from, sizeof(from), name);
	snprintf(tmp, sizeof(tmp), "%s.new", to);
	FILE *in = fopen(from, "rb"), *out = fopen(tmp, "wb");
	assert_non_null(in);
	assert_non_null(out);
	char buf[8192];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, k, out), k);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(rename(tmp, to), 0);
}

/* A process-mode chain of the one plugin at path (config cfg), and a
 * batch of ten traces. */
static void
open_pinned_case(fx *f, const char *path, const char *cfg)
{
	ms_chain_link_spec link = { path, cfg };
	ms_mem_init(&f->mem, NULL);
	ms_chain_opts o = { .mem = &f->mem,
		            .host_mode = MS_PLUGIN_HOST_PROCESS,
		            .host_exe = MS_BINARY_DIR "/tui/mergescope" };
	ms_errbuf eb;
	if (ms_chain_open(&f->c, &link, 1, &o, &eb))
		fail_msg("chain: %s", eb.msg);
	make_rows(&f->rows);
	assert_int_equal(ms_batch_from_rows(&f->b, &f->mem, MS_PROJ_ALL,
	                                    f->rows.rows, NT * 2, &eb),
	                 0);
}

/* The plugin file is replaced (renamed over, as a rebuild does) after
 * the chain loaded and checksummed it, before its first host starts: the
 * host runs the file the run checksummed (tp_mask, dropping tr-0..3),
 * not the new one at the path (tp_fail, whose Decide errs). Before, each
 * host loaded whatever the path named then, unchecked. */
static void
test_process_host_loads_the_pinned_file(void **st)
{
	(void)st;
	char dir[512], path[600];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "ms-pin"));
	snprintf(path, sizeof(path), "%s/sampler.so", dir);
	put_plugin("tp_mask", path);
	fx f;
	open_pinned_case(&f, path, "0123");
	char sum[33];
	snprintf(sum, sizeof(sum), "%s",
	         ms_plugin_checksum(ms_chain_plugin(f.c, 0)));
	put_plugin("tp_fail", path);
	ms_chain_call call;
	alarm(60);
	for (int i = 0; i < 2; i++) {
		int kept = decide_kept(&f, &call);
		ms_link_stats ls = link_stats(&f, 0);
		if (ls.last_result != MS_LINK_OK)
			fail_msg("call %d: %s: %s", i + 1,
			         ms_link_result_name(ls.last_result),
			         ls.last_fail);
		assert_int_equal(kept, NT - 4);
	}
	alarm(0);
	assert_string_equal(ms_plugin_checksum(ms_chain_plugin(f.c, 0)), sum);
	close_chain(&f);
	assert_int_equal(ms_test_rmtree(dir), 0);
}

/* The plugin file's bytes change in place (appended to) after the chain
 * checksummed them: its host refuses the file, naming it and both
 * checksums, and the call fails open. Before, the host loaded the
 * changed file and its Decide ran. */
static void
test_process_host_refuses_a_changed_file(void **st)
{
	(void)st;
	char dir[512], path[600];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "ms-pin"));
	snprintf(path, sizeof(path), "%s/s.so", dir);
	put_plugin("tp_mask", path);
	fx f;
	open_pinned_case(&f, path, "0123");
	const char *sum = ms_plugin_checksum(ms_chain_plugin(f.c, 0));
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "changed", 7), 7);
	close(fd);
	ms_chain_call call;
	alarm(60);
	assert_int_equal(decide_kept(&f, &call), NT);
	alarm(0);
	ms_link_stats ls = link_stats(&f, 0);
	fprintf(stderr, "failed open: %s\n", ls.last_fail);
	assert_int_equal(ls.last_result, MS_LINK_HOST_ERROR);
	assert_non_null(strstr(ls.last_fail, path));
	assert_non_null(strstr(ls.last_fail, "changed since the run loaded"));
	char want[80];
	snprintf(want, sizeof(want), "(checksum %s then, ", sum);
	assert_non_null(strstr(ls.last_fail, want));
	assert_non_null(strstr(ls.last_fail, " now); not loaded"));
	close_chain(&f);
	assert_int_equal(ms_test_rmtree(dir), 0);
}

static void
test_process_needs_a_host(void **st)
{
	(void)st;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	char path[512];
	path_of(path, sizeof(path), "tp_mask");
	ms_chain_link_spec link = { path, "" };
	ms_chain_opts o = { .mem = &mem, .host_mode = MS_PLUGIN_HOST_PROCESS };
	ms_chain *c;
	ms_errbuf eb;
	assert_int_equal(ms_chain_open(&c, &link, 1, &o, &eb), MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "host executable"));
	enum ms_plugin_host_mode m;
	assert_true(ms_plugin_host_mode_parse("process", &m));
	assert_int_equal(m, MS_PLUGIN_HOST_PROCESS);
	assert_false(ms_plugin_host_mode_parse("thread", &m));
}

static void
test_empty_chain_keeps_all(void **st)
{
	(void)st;
	fx f;
	open_chain(&f, NULL, NULL, 0, 0);
	uint8_t keep[NT];
	memset(keep, 0, sizeof(keep));
	ms_chain_call call;
	assert_int_equal(decide_kept(&f, &call), NT);
	assert_int_equal(ms_chain_projection(f.c), 0);
	close_chain(&f);
}

/* A chain of 8 links opens and reports each; a ninth is refused before
 * any link is loaded, naming the limit (the chain spec's and the replay
 * events' MS_CHAIN_MAX_LINKS). */
static void
test_chain_link_limit(void **st)
{
	(void)st;
	char path[512];
	path_of(path, sizeof(path), "alwayskeep");
	ms_chain_link_spec links[MS_CHAIN_MAX_LINKS + 1];
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS + 1; i++) {
		links[i].path = path;
		links[i].config = "";
	}
	assert_int_equal(MS_CHAIN_MAX_LINKS, 8);
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_chain_opts o = { .mem = &mem };
	ms_chain *c = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_chain_open(&c, links, 8, &o, &eb), 0);
	assert_int_equal(ms_chain_len(c), 8);
	ms_chain_close(c);
	c = NULL;
	assert_int_equal(ms_chain_open(&c, links, 9, &o, &eb), MS_ERR_RANGE);
	assert_null(c);
	assert_string_equal(eb.msg, "chain: 9 links, at most 8");
	tl_assert_no_live(&mem);
}

static void
test_evaluate_rows(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask" };
	const char *cfg[] = { "357" };
	open_chain(&f, names, cfg, 1, 0);
	uint8_t keep[NT];
	size_t nt;
	ms_errbuf eb;
	/* Batches of 3 traces: verdicts land at the right trace index. */
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, f.rows.rows,
	                                        NT * 2, 3, keep, NULL, NT, &nt,
	                                        NULL, &eb),
	                 0);
	assert_int_equal(nt, NT);
	for (int i = 0; i < NT; i++)
		assert_int_equal(keep[i], !(i == 3 || i == 5 || i == 7));
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.calls, 4);
	/* Too small a verdict array is an error, not an overrun. */
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, f.rows.rows,
	                                        NT * 2, 3, keep, NULL, 5, &nt,
	                                        NULL, &eb),
	                 MS_ERR_RANGE);
	/* A cancel already set: no call is made. */
	_Atomic bool cancel = true;
	ls = link_stats(&f, 0);
	uint64_t calls = ls.calls;
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, f.rows.rows,
	                                        NT * 2, 3, keep, NULL, NT, &nt,
	                                        &cancel, &eb),
	                 MS_ERR_CANCELED);
	ls = link_stats(&f, 0);
	assert_int_equal(ls.calls, calls);
	close_chain(&f);
}

/* A batch of 200 traces on which the link times out (it overruns on
 * calls 1, 3, 5, ...) is not evaluated again in halves: one call, one
 * timeout, every trace kept and marked as not judged by the link.
 * Before, each half was called again and every other call timed out
 * again (3 timeouts in 5 calls here; up to seven per batch of 4096). */
static void
test_evaluate_rows_timeout_not_split(void **st)
{
	(void)st;
	enum { NB = 200 };
	static char ids[NB][8];
	static ms_row rows[NB];
	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < NB; i++) {
		snprintf(ids[i], sizeof(ids[i]), "t%03d", i);
		rows[i].trace_id = (const uint8_t *)ids[i];
		rows[i].trace_id_len = 4;
		rows[i].start_ns = 1000;
		rows[i].latency_ms = 1;
	}
	fx f;
	const char *names[] = { "tp_slow" };
	const char *cfg[] = { "1500/2" };
	open_chain(&f, names, cfg, 1, 300 * 1000000ull);
	static uint8_t keep[NB];
	static uint16_t failed[NB];
	size_t nt;
	ms_errbuf eb;
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, rows, NB, NB,
	                                        keep, failed, NB, &nt, NULL,
	                                        &eb),
	                 0);
	assert_int_equal(nt, NB);
	ms_link_stats ls = link_stats(&f, 0);
	assert_int_equal(ls.calls, 1);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 1);
	for (int i = 0; i < NB; i++) {
		assert_int_equal(keep[i], 1);
		assert_int_equal(failed[i], 1);
	}
	close_chain(&f);
}

/* The links that failed open, per trace: a link failing on every call
 * leaves the other's verdicts and its own bit on every trace; one that
 * judges (here every batch of at most 3 traces) leaves none. */
static void
test_evaluate_rows_failed(void **st)
{
	(void)st;
	fx f;
	const char *names[] = { "tp_mask", "tp_fail" };
	const char *cfg[] = { "357", "" };
	open_chain(&f, names, cfg, 2, 0);
	uint8_t keep[NT];
	uint16_t failed[NT];
	size_t nt;
	ms_errbuf eb;
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, f.rows.rows,
	                                        NT * 2, 3, keep, failed, NT,
	                                        &nt, NULL, &eb),
	                 0);
	assert_int_equal(nt, NT);
	for (int i = 0; i < NT; i++) {
		assert_int_equal(keep[i], !(i == 3 || i == 5 || i == 7));
		assert_int_equal(failed[i], 2);
	}
	close_chain(&f);
	const char *cfg2[] = { "357", "{\"fail\":\"/3\"}" };
	open_chain(&f, names, cfg2, 2, 0);
	assert_int_equal(ms_chain_evaluate_rows(f.c, &f.mem, f.rows.rows,
	                                        NT * 2, 3, keep, failed, NT,
	                                        &nt, NULL, &eb),
	                 0);
	for (int i = 0; i < NT; i++) {
		assert_int_equal(keep[i], !(i == 3 || i == 5 || i == 7));
		assert_int_equal(failed[i], 0);
	}
	close_chain(&f);
}

static void
test_histogram_bounds(void **st)
{
	(void)st;
	assert_int_equal(ms_link_hist_bound_ns(0), 250000);
	assert_int_equal(ms_link_hist_bound_ns(3), 2500000);
	assert_int_equal(ms_link_hist_bound_ns(11), 1000000000);
	assert_true(ms_link_hist_bound_ns(12) == UINT64_MAX);
	assert_string_equal(ms_link_result_name(MS_LINK_WRONG_LENGTH),
	                    "wrong_length");
}

int
main(int argc, char **argv)
{
	/* The process-mode hosts are this build's executable: in the
	 * sanitizer build, leave the fatal signals to the default actions,
	 * as in a plain build, so a crash reads as the signal. */
	san_fatal_signals_default();
	if (argc == 3 && strcmp(argv[1], "--workbench") == 0)
		return workbench_main(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_columns),
		cmocka_unit_test(test_and_over_links),
		cmocka_unit_test(test_worker_without_threads),
		cmocka_unit_test(test_chain_out_of_memory),
		cmocka_unit_test(test_batch_out_of_memory),
		cmocka_unit_test(test_call_counted_when_host_does_not_start),
		cmocka_unit_test(test_fail_open_error),
		cmocka_unit_test(test_fail_open_wrong_length),
		cmocka_unit_test(test_fail_open_bad_value),
		cmocka_unit_test(test_verdict_overrun_is_wrong_length),
		cmocka_unit_test(test_verdict_underrun_in_host_fails_open),
		cmocka_unit_test(test_timeout_abandons_and_keeps_batch),
		cmocka_unit_test(test_circuit_opens_after_three_timeouts),
		cmocka_unit_test(test_circuit_open_keeps_everything),
		cmocka_unit_test(test_successful_batch_resets_timeout_count),
		cmocka_unit_test(test_circuit_opens_on_failure_rate),
		cmocka_unit_test(test_overlapping_abandoned_calls),
		cmocka_unit_test(test_open_refusal_under_both_hosts),
		cmocka_unit_test(test_stuck_call_never_blocks_close),
		cmocka_unit_test(test_open_hang_fails_chain_open),
		cmocka_unit_test(test_late_open_is_cleaned_up),
		cmocka_unit_test(test_entry_hang_fails_chain_open),
		cmocka_unit_test(test_constructor_hang_fails_chain_open),
		cmocka_unit_test(test_stats_hang_is_bounded),
		cmocka_unit_test(test_close_hang_is_bounded),
		cmocka_unit_test(test_closer_without_threads),
		cmocka_unit_test(test_process_and_over_links),
		cmocka_unit_test(test_process_segv_fails_open),
		cmocka_unit_test(test_process_abort_fails_open),
		cmocka_unit_test(test_process_exit_fails_open),
		cmocka_unit_test(test_process_crashes_open_the_circuit),
		cmocka_unit_test(test_process_host_memory_capped),
		cmocka_unit_test(test_process_loop_times_out),
		cmocka_unit_test(test_process_garbled_channel_is_bounded),
		cmocka_unit_test(
		        test_process_ready_stats_hang_gets_open_timeout),
		cmocka_unit_test(test_process_stats_hang_costs_no_call),
		cmocka_unit_test(
		        test_process_stats_hang_after_decide_keeps_verdicts),
		cmocka_unit_test(
		        test_process_stats_crash_after_decide_keeps_verdicts),
		cmocka_unit_test(test_process_crash_names_the_callback),
		cmocka_unit_test(test_process_host_ends_with_workbench),
		cmocka_unit_test(test_process_needs_a_host),
		cmocka_unit_test(test_process_host_loads_the_pinned_file),
		cmocka_unit_test(test_process_host_refuses_a_changed_file),
		cmocka_unit_test(test_empty_chain_keeps_all),
		cmocka_unit_test(test_chain_link_limit),
		cmocka_unit_test(test_evaluate_rows),
		cmocka_unit_test(test_evaluate_rows_failed),
		cmocka_unit_test(test_evaluate_rows_timeout_not_split),
		cmocka_unit_test(test_histogram_bounds),
		cmocka_unit_test(test_link_logs_inproc),
		cmocka_unit_test(test_link_logs_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
