/*
 * ms_fs.h - the small file-system helpers every layer shares: create a
 * directory and its parents, remove a tree, make a directory's entries
 * durable.
 *
 * They exist once so that the shard, the replay's scratch shards, the
 * fixture builder and the command line agree on what "mkdir -p" and
 * "rm -r" mean (modes, depth, what counts as success).
 *
 * Contract shared by every function:
 *  1. 0 on success, else a negative enum ms_err (ms_err_from_errno for a
 *     failed system call, MS_ERR_RANGE for a path or depth over the limit).
 *  2. On failure eb (may be NULL) names the path that failed and why, and
 *     errno holds the cause, so a caller may word its own message with
 *     strerror(errno) instead.
 *  3. Nothing is printed; no state is kept; any thread may call them.
 * The two predicates at the end answer true or false instead (errno
 * holds the cause of a false).
 */
#ifndef MS_FS_H
#define MS_FS_H

#include "ms_err.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* Longest path the helpers build (bytes, with the NUL). */
#define MS_FS_PATH_MAX 4096
/* Deepest tree ms_fs_rm_tree descends into below its root. */
#define MS_FS_MAX_DEPTH 16

/* mkdir -p: create path and every missing parent with mode (less the
 * umask). An existing directory is success; an existing non-directory at
 * path fails with ENOTDIR. Messages: "COMPONENT: strerror". */
int ms_fs_mkdir_p(const char *path, mode_t mode, ms_errbuf *eb);

/* rm -r: remove path and, if it is a directory, everything below it,
 * without following symbolic links. A path that does not exist (or an entry
 * that vanishes meanwhile) is success, and so are entries created in a
 * directory while it is removed (walked again, a few times at most, before
 * "Directory not empty"). On an error it goes on removing what
 * it can and returns the first error ("remove PATH: strerror"); a tree
 * deeper than MS_FS_MAX_DEPTH is left in place below that depth
 * (MS_ERR_RANGE, errno ELOOP, "remove PATH: more than 16 directory levels
 * below the one removed: left in place"). */
int ms_fs_rm_tree(const char *path, ms_errbuf *eb);

/* fsync a directory, so the entries created, renamed or removed in it
 * survive a crash. Message: "DIR: fsync: strerror". */
int ms_fs_fsync_dir(const char *dir, ms_errbuf *eb);

/* The directory holding path, into out (n bytes): trailing slashes are
 * ignored, "." when path has no slash, "/" for an entry of the root.
 * MS_ERR_RANGE if it does not fit. */
int ms_fs_parent(char *out, size_t n, const char *path);

/* A name beside path, "<path><suffix>" (".tmp-PID", ".lock"), into out
 * (n bytes), path's last name cut short where the whole would pass
 * NAME_MAX: a name the directory accepts gets a name beside it that it
 * accepts too (two names alike in their first ~240 bytes may share one).
 * MS_ERR_RANGE if it does not fit in n. */
int ms_fs_name_beside(char *out, size_t n, const char *path,
                      const char *suffix);

/* ms_fs_fsync_dir of the directory holding path (ms_fs_parent): makes a
 * rename onto path durable. */
int ms_fs_fsync_parent(const char *path, ms_errbuf *eb);

/* Whether path names a directory / a regular file (following links);
 * false for NULL or "". */
bool ms_fs_is_dir(const char *path);
bool ms_fs_is_file(const char *path);

/* How many entries directory path holds, "." and ".." not counted; 0 when
 * it cannot be opened. */
size_t ms_fs_count_entries(const char *path);

/* pread exactly n bytes at off of fd into p (retrying on EINTR): 0,
 * MS_ERR_CORRUPT when the file ends before them, or an errno-mapped
 * error. */
int ms_fs_pread_all(int fd, void *p, size_t n, uint64_t off);

/* write exactly n bytes of p at fd's position (retrying on EINTR and
 * short writes): 0, MS_ERR_NOSPACE on a full disk or quota, or another
 * errno-mapped error. */
int ms_fs_write_all(int fd, const void *p, size_t n);

/* Whether the file system holding path (or open file fd) keeps its files
 * in memory (tmpfs, ramfs): a file written there is RAM the process no
 * longer counts, not RAM saved. false when it cannot be told. */
bool ms_fs_in_memory(const char *path);

/* Bytes an unprivileged writer may still use on path's file system
 * (statvfs: f_bavail * f_frsize) into *out. -errno when it cannot be
 * read (*out untouched). */
int ms_fs_free_bytes(const char *path, uint64_t *out);
bool ms_fs_fd_in_memory(int fd);

/* Whether path is dir itself or lies below it, after symbolic links and
 * "." and ".." are resolved as far as the paths exist (the rest taken as
 * written; relative paths from the working directory). Neither needs to
 * exist. false when either cannot be resolved: callers use it to refuse a
 * path that something is about to delete, so a path it cannot tell about
 * is one they let through. */
bool ms_fs_path_within(const char *path, const char *dir);

#endif
