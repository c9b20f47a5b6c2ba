/*
 * procfs_int.h - private to core: the pure readers of /proc text that
 * rusage.c (status, statm) and owner.c (stat) use on what they read, kept
 * apart from the reads so that tests and the fuzz harness reach them.
 */
#ifndef MS_PROCFS_INT_H
#define MS_PROCFS_INT_H

#include <stdint.h>

/*
 * The text of a /proc/PID/status file: VmHWM and the RSS split (RssAnon,
 * RssFile, RssShmem), each in bytes, or -1 when its line is absent or not
 * "KEY: N kB". A key counts only at the start of a line.
 */
void ms__proc_status_split(const char *text, int64_t *hwm, int64_t *anon,
                           int64_t *file, int64_t *shmem);

/*
 * The text of a /proc/PID/statm file with the page size: the mapped size
 * (VmSize) and resident set in bytes into *mapped and *rss, -1 each when
 * unreadable or out of range.
 */
void ms__proc_statm_parse(const char *text, long page, int64_t *mapped,
                          int64_t *rss);

/*
 * The text of a /proc/PID/stat file: field 22 (starttime), or 0 when
 * there is none or it is not all digits. The command name (field 2) may
 * hold spaces and parentheses: fields are counted from the space after
 * its last ')'. *state gets field 3 ('Z' for a zombie; '\0' when there
 * is none).
 */
uint64_t ms__proc_stat_start(const char *text, char *state);

#endif
