/*
 * ms_rusage.h - resource counters of the process and the calling thread:
 * wall time, process CPU, thread CPU, peak and current resident memory,
 * and the address space left under `ulimit -v`.
 *
 * A merge or a phase samples before and after and keeps the difference
 * (ms_rusage_diff); per-merge CPU of a worker is its thread CPU, which the
 * kernel keeps per thread (CLOCK_THREAD_CPUTIME_ID). Peak RSS is the
 * process high-water mark (VmHWM, falling back to getrusage); on Linux it
 * can be reset with ms_rusage_reset_peak (which the whole process sees).
 *
 * Ownership: plain values, no state. Threads: any thread; thread CPU is the
 * caller's.
 */
#ifndef MS_RUSAGE_H
#define MS_RUSAGE_H

#include "ms_err.h"

#include <stdint.h>

typedef struct ms_rusage {
	int64_t wall_ns;        /* CLOCK_MONOTONIC */
	int64_t cpu_ns;         /* process CPU (user + system) */
	int64_t thread_cpu_ns;  /* CPU of the calling thread */
	int64_t peak_rss_bytes; /* high-water resident set since start/reset */
	int64_t rss_bytes;      /* resident set now */
	/* The resident set now by kind (RssAnon, RssFile, RssShmem of
	 * /proc/self/status; -1 where unreadable): anonymous memory, pages
	 * of mapped files, and shared memory, which includes mapped files
	 * on a tmpfs such as /dev/shm. */
	int64_t rss_anon_bytes, rss_file_bytes, rss_shmem_bytes;
} ms_rusage;

/* Fill *out with the counters now. 0, or MS_ERR_IO if a clock or the memory
 * figures cannot be read (fields that could not be read are -1). */
int ms_rusage_sample(ms_rusage *out, ms_errbuf *eb);
/* d = after - before for the time fields; the memory fields of d are
 * after's (levels, not amounts). d may alias after. */
void ms_rusage_diff(const ms_rusage *before, const ms_rusage *after,
                    ms_rusage *d);
/* CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID), or -1
 * if it cannot be read. Wall time is ms_mono_ns (ms_clock.h). */
int64_t ms_rusage_thread_cpu_ns(void);
/* Only the resident set by kind (the rss_*_bytes fields of ms_rusage),
 * from one read of /proc/self/status: for a sampler that watches peaks.
 * 0, or MS_ERR_IO (fields -1). */
int ms_rusage_rss_split(int64_t *anon, int64_t *file, int64_t *shmem);
/* The address space the process may still map: its soft RLIMIT_AS
 * (`ulimit -v`) less what it has mapped now (VmSize, /proc/self/statm),
 * 0 when that is over the limit. UINT64_MAX when there is no limit or the
 * mapped size cannot be read. A thread's stack and every allocation come
 * out of it. */
uint64_t ms_rusage_address_room(void);
/* Reset the process peak RSS to the current RSS (Linux: writes "5" to
 * /proc/self/clear_refs). The earlier peak is gone for the whole process:
 * getrusage's ru_maxrss and a parent's wait4 no longer report it. 0, or
 * MS_ERR_IO where the kernel refuses. */
int ms_rusage_reset_peak(ms_errbuf *eb);
/* Name the calling thread (Linux: its comm, at most 15 bytes; longer names
 * are cut), so that the per-thread figures of top -H, perf and
 * /proc/PID/task/TID/comm tell the engine's threads apart. Best effort:
 * nothing happens where the system has no such name. */
void ms_rusage_name_thread(const char *name);

#endif
