/*
 * rsswatch.c - the peaks of the run's resident set by kind (anonymous,
 * mapped files, shared memory) while a phase runs. The kernel keeps a
 * high-water mark of the whole resident set only; which kind made a peak
 * (a merge's heap, its mapped inputs, a tmpfs shard's pages) shows only by
 * sampling, so a thread reads /proc/self/status every few milliseconds and
 * keeps each kind's maximum, and the maximum of their sum (the whole
 * resident set at one instant).
 *
 * Design: one mutex guards the peaks and the stop and quiet flags; the
 * thread waits on the condition variable between samples, so
 * ms__rsswatch_stop wakes it at once. ms__rsswatch_take returns the peaks
 * since the previous take (or the start) and restarts them from the
 * current levels.
 *
 * Quiet: while the run is stopped (paused, at a barrier, done) the thread
 * sleeps without a timeout, so a paused TUI costs no sampling (200 reads
 * of /proc a second otherwise). It is sampled as it goes quiet and again
 * as it wakes. What it did not see in between cannot raise the total
 * unseen: the kernel's high-water mark (VmHWM) covers every instant, so
 * when it rose while quiet, that mark is the highest whole resident set of
 * the quiet stretch and is folded into the total peak.
 */
#include "replay_int.h"

#include "ms_rusage.h"
#include "ms_thread.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void
sample(ms__rsswatch *w)
{
	int64_t a, f, s;
	if (ms_rusage_rss_split(&a, &f, &s) != 0)
		return;
	pthread_mutex_lock(&w->mu);
	if (a > w->peak.anon)
		w->peak.anon = a;
	if (f > w->peak.file)
		w->peak.file = f;
	if (s > w->peak.shmem)
		w->peak.shmem = s;
	if (a + f + s > w->peak.total)
		w->peak.total = a + f + s;
	w->samples++;
	pthread_mutex_unlock(&w->mu);
}

static int64_t
hwm_now(void)
{
	ms_rusage ru;
	ms_rusage_sample(&ru, NULL);
	return ru.peak_rss_bytes;
}

/* A high-water mark that rose while quiet: the total peak. mu held. */
static void
fold_hwm(ms__rsswatch *w, int64_t hwm)
{
	if (w->quiet_hwm > 0 && hwm > w->quiet_hwm && hwm > w->peak.total)
		w->peak.total = hwm;
}

static void *
watch(void *arg)
{
	ms_rusage_name_thread("ms-rsswatch");
	ms__rsswatch *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		if (w->quiet) {
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		pthread_mutex_unlock(&w->mu);
		sample(w);
		pthread_mutex_lock(&w->mu);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)w->period_ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (!w->stop && !w->quiet &&
		       pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int
ms__rsswatch_start(ms__rsswatch *w, unsigned period_ms, ms_errbuf *eb)
{
	memset(w, 0, sizeof(*w));
	w->period_ms = period_ms ? period_ms : 5;
	pthread_condattr_t ca;
	int e = pthread_mutex_init(&w->mu, NULL);
	if (e)
		return ms_thread_fail(eb, MS_ERR_NOMEM, e,
		                      "RSS sampler: cannot make its mutex");
	if ((e = pthread_condattr_init(&ca)) != 0 ||
	    (e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) != 0 ||
	    (e = pthread_cond_init(&w->cv, &ca)) != 0) {
		pthread_mutex_destroy(&w->mu);
		return ms_thread_fail(eb, MS_ERR_NOMEM, e,
		                      "RSS sampler: cannot make its condition "
		                      "variable");
	}
	pthread_condattr_destroy(&ca);
	sample(w);
	if ((e = ms_thread_start(&w->th, MS_THREAD_STACK, watch, w)) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		return ms_thread_fail(eb, MS_ERR_IO, e,
		                      "cannot start the RSS sampler's thread");
	}
	w->started = true;
	return 0;
}

void
ms__rsswatch_take(ms__rsswatch *w, ms__rss_peaks *out)
{
	if (!w->started) {
		out->anon = out->file = out->shmem = out->total = 0;
		return;
	}
	sample(w);
	int64_t hwm = hwm_now();
	pthread_mutex_lock(&w->mu);
	fold_hwm(w, hwm);
	if (w->quiet)
		w->quiet_hwm = hwm; /* folded: the next take starts here */
	*out = w->peak;
	pthread_mutex_unlock(&w->mu);
	/* Restart from the levels now. */
	int64_t a, f, s;
	if (ms_rusage_rss_split(&a, &f, &s) != 0)
		a = f = s = 0;
	pthread_mutex_lock(&w->mu);
	w->peak.anon = a;
	w->peak.file = f;
	w->peak.shmem = s;
	w->peak.total = a + f + s;
	pthread_mutex_unlock(&w->mu);
}

void
ms__rsswatch_stop(ms__rsswatch *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	w->started = false;
}

void
ms__rsswatch_quiet(ms__rsswatch *w, bool quiet)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	bool was = w->quiet;
	pthread_mutex_unlock(&w->mu);
	if (was == quiet)
		return;
	sample(w);
	int64_t hwm = hwm_now();
	pthread_mutex_lock(&w->mu);
	if (quiet) {
		w->quiet_hwm = hwm;
	} else {
		fold_hwm(w, hwm);
		w->quiet_hwm = 0;
	}
	w->quiet = quiet;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}
