/*
 * limits_int.h - private to core: the cgroup path lookup that limit
 * detection (limits.c) and the resource envelope (envelope.c) share.
 */
#ifndef MS_LIMITS_INT_H
#define MS_LIMITS_INT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * This process's path for a controller in a /proc/<pid>/cgroup file
 * (proc_file). want NULL: the cgroup v2 line ("0::/path"); else the v1
 * line whose controller list contains want. Copies the path ("/" for
 * the root) into out; false when there is no such line.
 */
bool ms__cgroup_path(const char *proc_file, const char *want, char *out,
                     size_t n);

#endif
