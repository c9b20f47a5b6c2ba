/*
 * ms_owner.h - owner records: which process a scratch directory belongs to.
 *
 * Every directory mergescope creates for a while (a run's scratch shard, a
 * frozen shard, the temporary directory of a fixture build or a freeze)
 * carries a small file MS_OWNER_FILE naming the process that made it: its
 * pid, its start time (field 22 of /proc/PID/stat, clock ticks since boot)
 * and the boot ID. A pid alone can be reused; the three together name one
 * process, so whether the owner is still alive can be told for sure, and
 * what a killed process left behind can be found and removed.
 *
 * Format (text, version 1), one "key value" per line:
 *
 *     mergescope-owner 1
 *     kind scratch            scratch | frozen | frozen-tmp | fixture-tmp |
 *                             kept | database (a file: a run's event database)
 *     pid 12345
 *     start 987654            /proc/PID/stat starttime
 *     boot 4c1e...            /proc/sys/kernel/random/boot_id
 *     note /path/run.sqlite   free text (the run's database), may be empty
 */
#ifndef MS_OWNER_H
#define MS_OWNER_H

#include "ms_err.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MS_OWNER_FILE ".mergescope-owner"

typedef struct ms_owner {
	char kind[16];
	pid_t pid;
	uint64_t start; /* 0 when it could not be read */
	char boot[40];
	char note[4096];
} ms_owner;

/* This process as an owner of `kind` with `note` (may be NULL). */
int ms_owner_self(ms_owner *o, const char *kind, const char *note,
                  ms_errbuf *eb);
/* Write dir/MS_OWNER_FILE for this process (replacing any: written to a
 * temporary name and renamed). Errors name the file. */
int ms_owner_write(const char *dir, const char *kind, const char *note,
                   ms_errbuf *eb);
/* The same record at path itself: for what is not a directory (a run's
 * event database has its record beside it, DB-owner). */
int ms_owner_write_file(const char *path, const char *kind, const char *note,
                        ms_errbuf *eb);
/* The same record beside base, at ms_fs_name_beside(base, suffix) ("DB"
 * and "-owner"), written through the temporary name ms_fs_name_beside(base,
 * suffix ".tmp-PID"): base's last name is cut short where either would pass
 * NAME_MAX, so a name the directory accepts gets a record beside it. */
int ms_owner_write_beside(const char *base, const char *suffix,
                          const char *kind, const char *note, ms_errbuf *eb);
/* Read dir/MS_OWNER_FILE: 0, MS_ERR_NOTFOUND (no record), MS_ERR_FORMAT
 * (not a record of this version), MS_ERR_IO. */
int ms_owner_read(const char *dir, ms_owner *o, ms_errbuf *eb);
/* The same for a record at path itself. */
int ms_owner_read_file(const char *path, ms_owner *o, ms_errbuf *eb);
/* Is the process the record names still running? False after a reboot, when
 * the pid is gone, or when the pid now belongs to a process started at
 * another time. */
bool ms_owner_alive(const ms_owner *o);

#endif
