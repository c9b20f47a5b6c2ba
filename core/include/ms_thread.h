/*
 * ms_thread.h - starting a thread with a stack of a chosen size, and
 * saying why one did not start.
 *
 * A thread's stack is address space from the moment it starts: with the
 * C library's default (the soft `ulimit -s`, 8 MiB on most systems) a
 * dozen threads take 96 MiB of what `ulimit -v` allows, while each of
 * core's threads touches a few dozen KiB of it. Every thread core and the
 * replay start goes through ms_thread_start, with MS_THREAD_STACK for
 * their own code, or MS_THREAD_STACK_DEFAULT where it runs code whose
 * stack need nobody measured (a plugin's callbacks: ms_plugin.h).
 *
 * Ownership: none; the thread is the caller's to join or detach.
 * Threads: any thread.
 */
#ifndef MS_THREAD_H
#define MS_THREAD_H

#include "ms_err.h"

#include <pthread.h>
#include <stddef.h>

/*
 * The stack of every thread that runs core's code and the callbacks of
 * its callers (ms_engine_opts' dispatch hook, event and on_drop; a shard's
 * step callback), as measured in a plain RelWithDebInfo build by the
 * deepest page each thread touched, static TLS and the thread descriptor
 * included (a preloaded pthread_create that gave each thread a fresh
 * mapping and read its residency with mincore at exit), over the smoke day
 * with skywalking and the tests of the engine, merge, chain, staging,
 * shard, freeze, gates, replay, seek, the live TUI and the run command:
 *
 *   merge worker (fast, slow, finalize; replay's event callbacks)  48 KiB
 *   dispatcher (replay's barrier hook, freezing a shard)           16 KiB
 *   shard reaper (deleting merged-away parts)                      12 KiB
 *   plugin host watcher (poll on one socket)                        8 KiB
 *
 * The replay's threads (replay/, tui/cmd_tui.c), measured the same way
 * over the smoke day with skywalking and the tests of the replay, seek,
 * freeze, gates, recorder, export, report, the live TUI, the CLI and the
 * TUI end to end, start with MS_THREAD_STACK too, but for the controller:
 *
 *   controller (ms-replay; copying a part from another file system)  80 KiB
 *   verdict oracle (ms-oracle)                                       20 KiB
 *   part checker (ms-checker)                                        16 KiB
 *   live reader (ms-live), recorder's commit timer, RSS sampler      12 KiB
 *   the TUI's signal taker (cmd_tui.c)                                8 KiB
 *
 * 256 KiB is more than five times the deepest of core's and, but for the
 * controller's (which gets four times that: replay_int.h), of the
 * replay's. A program's static TLS comes out of the same stack (a test
 * with 100 KiB of thread-locals saw 112 KiB on its reaper). A sanitizer build
 * grows every frame (redzones, its runtime's calls), so there it is 1 MiB.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MS_THREAD_STACK ((size_t)1 << 20)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MS_THREAD_STACK ((size_t)1 << 20)
#endif
#endif
#ifndef MS_THREAD_STACK
#define MS_THREAD_STACK ((size_t)256 << 10)
#endif
/* The C library's default for new threads: the soft `ulimit -s` (2 MiB
 * with glibc when unlimited), what any program's threads get. */
#define MS_THREAD_STACK_DEFAULT ((size_t)0)

/*
 * pthread_create(t, attr, fn, arg) with attr a stack of `stack` bytes
 * (MS_THREAD_STACK_DEFAULT: the default attributes). Returns 0 or the
 * error number pthread_create returned, as pthread_create does (EAGAIN:
 * no address space or threads left, see ulimit -v and -u); *t is set only
 * on success.
 */
int ms_thread_start(pthread_t *t, size_t stack, void *(*fn)(void *), void *arg);

/*
 * A thread that could not start, for `return ms_thread_fail(...)`: formats
 * into eb (NULL: nothing) what fmt says, ": ", the system's reason for
 * err (what ms_thread_start or pthread_create returned) and, for EAGAIN
 * or ENOMEM, that the address space or the thread limit may be too small
 * (ulimit -v, ulimit -u); returns rc. The one wording of every thread
 * start that fails in core and replay.
 */
int ms_thread_fail(ms_errbuf *eb, int rc, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#endif
