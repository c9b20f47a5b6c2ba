/*
 * The part checker: every part that enters the shard (a publication or a
 * merge output) is checked on a thread of its own, in the order the parts
 * entered, so that reading a part back never holds up the merge that made
 * it or the next publication.
 *
 * Design:
 *  1. A job pins its part with a view taken when the part entered (the
 *     part is surely in the inventory then); the view is released once the
 *     part is checked, so a part merged away meanwhile is still read.
 *  2. Jobs run in submission order. A part is submitted when it enters,
 *     and a merge's inputs entered before the merge was dispatched, so
 *     their ledgers are known when the merge's output is reconciled.
 *  3. The gates drain the queue (ms__checker_drain) before they read the
 *     counts; closing stops the thread and releases what is left unread.
 *  4. The thread gives way (ms__give_way): nothing the replay does next
 *     waits for a check during the primary phase, so on a busy machine
 *     the checks fall behind and catch up while the controller waits for
 *     merges; the cooldown begins once they have caught up (parts waiting
 *     keep their handles, which must not add up with the finalize's
 *     memory), and the gates wait for the last ones.
 * States: idle (queue empty) -> busy (a job taken) -> idle; stopped after
 * ms__checker_stop, when a submitted job is released unread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ms_rusage.h"
#include "ms_thread.h"
#include "replay_int.h"

/* Nice value of the threads beside the replay's critical path. */
#define GIVE_WAY_NICE 10

void
ms__give_way(void)
{
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
	                  GIVE_WAY_NICE);
}

static void *
checker_main(void *arg)
{
	ms_replay *r = arg;
	ms_rusage_name_thread("ms-checker");
	ms__give_way();
	pthread_mutex_lock(&r->check_mu);
	for (;;) {
		while (!r->check_head && !r->check_stop)
			pthread_cond_wait(&r->check_cv, &r->check_mu);
		if (r->check_stop)
			break;
		ms__check_job *j = r->check_head;
		r->check_head = j->next;
		if (!r->check_head)
			r->check_tail = NULL;
		r->check_busy = true;
		pthread_mutex_unlock(&r->check_mu);
		ms__test_delay(r->test.check_delay_ns);
		ms__replay_check(r, j);
		ms_view_release(j->view);
		free(j);
		pthread_mutex_lock(&r->check_mu);
		r->check_busy = false;
		pthread_cond_broadcast(&r->check_cv);
	}
	pthread_mutex_unlock(&r->check_mu);
	return NULL;
}

int
ms__checker_start(ms_replay *r)
{
	pthread_mutex_init(&r->check_mu, NULL);
	pthread_cond_init(&r->check_cv, NULL);
	r->check_init = true;
	int e = ms_thread_start(&r->check_thread, MS_THREAD_STACK, checker_main,
	                        r);
	if (e) {
		errno = e;
		return MS_ERR_IO;
	}
	r->check_started = true;
	return 0;
}

void
ms__checker_submit(ms_replay *r, ms_view *v, uint64_t id, size_t slot,
                   const ms_dispatch *d, uint64_t rows_dropped)
{
	size_t n = d ? d->ninputs : 0;
	ms__check_job *j = calloc(1, sizeof(*j) + n * sizeof(j->inputs[0]));
	ms__check_job one;
	if (!j) {
		/* No memory for the queue: check here and now instead. */
		memset(&one, 0, sizeof(one));
		j = &one;
		n = 0;
		d = NULL;
		one.lost_inputs = true;
	}
	j->view = v;
	j->id = id;
	j->slot = slot;
	j->merge = d != NULL || j->lost_inputs;
	j->seq = d ? d->seq : 0;
	j->rows_dropped = rows_dropped;
	j->ninputs = n;
	for (size_t i = 0; i < n; i++)
		j->inputs[i] = d->inputs[i].id;
	if (j == &one) {
		if (id) {
			pthread_mutex_lock(&r->check_mu);
			r->check_submitted++;
			pthread_mutex_unlock(&r->check_mu);
		}
		ms__replay_check(r, j);
		ms_view_release(v);
		return;
	}
	pthread_mutex_lock(&r->check_mu);
	if (!r->check_started || r->check_stop) {
		pthread_mutex_unlock(&r->check_mu);
		ms_view_release(v);
		free(j);
		return;
	}
	if (id)
		r->check_submitted++;
	if (r->check_tail)
		r->check_tail->next = j;
	else
		r->check_head = j;
	r->check_tail = j;
	pthread_cond_broadcast(&r->check_cv);
	pthread_mutex_unlock(&r->check_mu);
}

void
ms__checker_drain(ms_replay *r)
{
	while (!ms__checker_idle_within(r, 1000000000))
		;
}

bool
ms__checker_idle_within(ms_replay *r, int64_t ns)
{
	if (!r->check_started)
		return true;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* check_cv's clock */
	int64_t at = (int64_t)ts.tv_nsec + ns;
	ts.tv_sec += (time_t)(at / 1000000000);
	ts.tv_nsec = (long)(at % 1000000000);
	pthread_mutex_lock(&r->check_mu);
	while ((r->check_head || r->check_busy) && !r->check_stop)
		if (pthread_cond_timedwait(&r->check_cv, &r->check_mu, &ts) ==
		    ETIMEDOUT)
			break;
	bool idle = !(r->check_head || r->check_busy) || r->check_stop;
	pthread_mutex_unlock(&r->check_mu);
	return idle;
}

void
ms__checker_stop(ms_replay *r)
{
	if (!r->check_init)
		return;
	pthread_mutex_lock(&r->check_mu);
	r->check_stop = true;
	pthread_cond_broadcast(&r->check_cv);
	pthread_mutex_unlock(&r->check_mu);
	if (r->check_started)
		pthread_join(r->check_thread, NULL);
	/* Under the lock: a merge still finishing (the engine closes after
	 * this) reads these in ms__checker_submit and, seeing check_stop,
	 * queues nothing more. */
	pthread_mutex_lock(&r->check_mu);
	r->check_started = false;
	ms__check_job *left = r->check_head;
	r->check_head = r->check_tail = NULL;
	pthread_mutex_unlock(&r->check_mu);
	while (left) {
		ms__check_job *j = left;
		left = j->next;
		ms_view_release(j->view);
		free(j);
	}
}

void
ms__checker_release(ms_replay *r)
{
	if (!r->check_init)
		return;
	ms__checker_stop(r);
	pthread_cond_destroy(&r->check_cv);
	pthread_mutex_destroy(&r->check_mu);
	r->check_init = false;
}
