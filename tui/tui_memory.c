/*
 * tui_memory.c - what the TUI remembers of a fixture between sessions:
 * the breakpoints and the event filter in use when the last session on it
 * ended, offered (y/N) when the next one starts.
 *
 * File: "<cache>/tui/<fixture dir name>-<FNV-1a 64 of its real path>.last",
 * text, one item a line: "break SPEC" or "filter TEXT"; other lines are
 * ignored, so an older or damaged file costs nothing. Written to a temp
 * file and renamed over the old one.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
ms__tui_memory_path(char *buf, size_t n, const char *fixture_dir)
{
	char root[PATH_MAX], real[PATH_MAX];
	int rc = ms__cache_root(root, sizeof(root));
	if (rc)
		return rc;
	if (!realpath(fixture_dir, real))
		snprintf(real, sizeof(real), "%s", fixture_dir);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = real; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	const char *base = strrchr(real, '/');
	base = base && base[1] ? base + 1 : real;
	char dir[PATH_MAX + 8];
	snprintf(dir, sizeof(dir), "%s/tui", root);
	if (ms_fs_mkdir_p(dir, 0755, NULL) != 0)
		return MS_ERR_IO;
	int k = snprintf(buf, n, "%s/%.64s-%016llx.last", dir, base,
	                 (unsigned long long)h);
	return k < 0 || (size_t)k >= n ? MS_ERR_RANGE : 0;
}

bool
ms__tui_memory_load(const char *path, ms__tui_memory *m)
{
	memset(m, 0, sizeof(*m));
	FILE *fp = fopen(path, "r");
	if (!fp)
		return false;
	/* Whole lines, however long: a line longer than a fixed buffer
	 * would go on as a line of its own ("break ..." inside a long
	 * filter read as a breakpoint). */
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, fp)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (strncmp(line, "break ", 6) == 0 && line[6] &&
		    m->nbreaks < MS__MEMORY_BREAKS)
			snprintf(m->breaks[m->nbreaks++], sizeof(m->breaks[0]),
			         "%.63s", line + 6);
		else if (strncmp(line, "filter ", 7) == 0)
			snprintf(m->filter, sizeof(m->filter), "%.255s",
			         line + 7);
	}
	free(line);
	fclose(fp);
	return m->nbreaks > 0 || m->filter[0];
}

int
ms__tui_memory_save(const char *path, const ms__tui_memory *m)
{
	if (m->nbreaks == 0 && !m->filter[0]) {
		unlink(path);
		return 0;
	}
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	FILE *fp = fopen(tmp, "w");
	if (!fp)
		return MS_ERR_IO;
	for (size_t i = 0; i < m->nbreaks; i++)
		fprintf(fp, "break %s\n", m->breaks[i]);
	if (m->filter[0])
		fprintf(fp, "filter %s\n", m->filter);
	if (fclose(fp) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return MS_ERR_IO;
	}
	return 0;
}
