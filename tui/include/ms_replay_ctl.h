/*
 * ms_replay_ctl.h - the TUI controller backed by a running replay.
 *
 * Ownership: the adapter is a heap object owned by the caller of
 * ms_replay_ctl_new; it borrows the replay, which must outlive it. After a
 * restart the caller owns the new replay (ms_replay_ctl_replay) and the
 * adapter has closed the old one. The ms_tui_ctl it fills points at the
 * adapter.
 */
#ifndef MS_REPLAY_CTL_H
#define MS_REPLAY_CTL_H

#include "ms_tui.h"

struct ms_replay;
struct ms_ev_filter;
typedef struct ms_replay_ctl ms_replay_ctl;

/* Fill *ctl with operations over replay. 0 or MS_ERR_NOMEM. */
int ms_replay_ctl_new(ms_replay_ctl **out, struct ms_replay *replay,
                      ms_tui_ctl *ctl);
void ms_replay_ctl_free(ms_replay_ctl *c);

/* How the adapter restarts the day (the ctl's `restart`): open a replay of
 * the same options recording to a new database, not started and with no
 * breakpoints, into *out. `running`: it must not stop before its first
 * publication even if the session started --paused (a run to a target
 * follows). On success the adapter then ends the replay it drove as every
 * run ends (ms_replay_close_fold); on failure *out is NULL and that
 * replay goes on as it was. */
typedef int (*ms_replay_reopen_fn)(void *arg, bool running,
                                   struct ms_replay **out, ms_errbuf *eb);
/* Without it, `restart` fails. */
void ms_replay_ctl_set_reopen(ms_replay_ctl *c, ms_replay_reopen_fn fn,
                              void *arg);
/* The replay the adapter drives now (a restart replaces it). */
struct ms_replay *ms_replay_ctl_replay(const ms_replay_ctl *c);

/* The runs restarts replaced whose event database was left in two files
 * (ms_replay_close_fold failed; the restart said so on the screen): how
 * many, and the paths of the first cap (at most MS_REPLAY_CTL_KEPT) of
 * their databases into dbs, owned by c (ms_evdb_fold_wal can try them
 * again). */
#define MS_REPLAY_CTL_KEPT 4
size_t ms_replay_ctl_kept(const ms_replay_ctl *c, const char **dbs, size_t cap);

/* Every run a restart replaced (`r`, or going back with no checkpoint),
 * first first: how many there were. The path of the i-th's event
 * database into *db and how it ended, as that database records it
 * ("complete", "aborted" or "failed"), into *status, both owned by c;
 * NULL for an i past the end or past those kept (all, unless memory
 * ran out). */
size_t ms_replay_ctl_replaced(const ms_replay_ctl *c, size_t i,
                              const char **db, const char **status);

/* Map an event-log filter as the TUI parses it (ms_tui_filter_parse) onto
 * the replay's, field for field; out borrows lane and text from f. 0, or
 * MS_ERR_INVAL naming an unknown class or reason. f NULL means "all". */
int ms_replay_ctl_filter(const ms_tui_filter *f, struct ms_ev_filter *out,
                         ms_errbuf *eb);

#endif
