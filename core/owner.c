/*
 * owner.c - owner records of scratch directories (ms_owner.h): written
 * when a directory is made, read to tell a live owner from a dead one.
 */
#define _GNU_SOURCE
#include "ms_owner.h"
#include "ms_fs.h"
#include "procfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OWNER_MAGIC "mergescope-owner 1"

uint64_t
ms__proc_stat_start(const char *text, char *state)
{
	*state = '\0';
	const char *p = strrchr(text, ')');
	if (!p)
		return 0;
	p++;
	if (p[0] != ' ')
		return 0; /* fields are counted from the space after ')' */
	*state = p[1];
	/* p is just before field 3; starttime is field 22. */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	/* Digits only, the whole field: strtoull would take a sign or
	 * blanks too, and stop at anything. */
	if (!p || p[1] < '0' || p[1] > '9')
		return 0;
	char *end;
	errno = 0;
	uint64_t v = strtoull(p + 1, &end, 10);
	return errno == 0 && (*end == ' ' || *end == '\n' || *end == '\0') ? v
	                                                                   : 0;
}

/* Field 22 (starttime) of /proc/PID/stat and its field 3 into *state, as
 * ms__proc_stat_start reads them; 0 if it cannot be read. */
static uint64_t
proc_start(pid_t pid, char *state)
{
	char path[64], buf[1024];
	*state = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return ms__proc_stat_start(buf, state);
}

static void
boot_id(char *out, size_t n)
{
	out[0] = '\0';
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (fgets(out, (int)n, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

int
ms_owner_self(ms_owner *o, const char *kind, const char *note, ms_errbuf *eb)
{
	memset(o, 0, sizeof(*o));
	if (!kind || strlen(kind) >= sizeof(o->kind) || strchr(kind, ' ') ||
	    (note && (strlen(note) >= sizeof(o->note) || strchr(note, '\n'))))
		return ms_fail(eb, MS_ERR_INVAL,
		               "owner record: kind '%s' or note not storable",
		               kind ? kind : "");
	snprintf(o->kind, sizeof(o->kind), "%s", kind);
	snprintf(o->note, sizeof(o->note), "%s", note ? note : "");
	o->pid = getpid();
	char state;
	o->start = proc_start(o->pid, &state);
	boot_id(o->boot, sizeof(o->boot));
	return 0;
}

/* dir/MS_OWNER_FILE into path (n bytes). */
static int
record_path(char *path, size_t n, const char *dir, ms_errbuf *eb)
{
	if ((size_t)snprintf(path, n, "%s/%s", dir, MS_OWNER_FILE) >= n)
		return ms_fail(eb, MS_ERR_RANGE,
		               "owner record in %s: path too long", dir);
	return 0;
}

int
ms_owner_write(const char *dir, const char *kind, const char *note,
               ms_errbuf *eb)
{
	char path[4200];
	int rc = record_path(path, sizeof(path), dir, eb);
	return rc ? rc : ms_owner_write_file(path, kind, note, eb);
}

int
ms_owner_write_file(const char *path, const char *kind, const char *note,
                    ms_errbuf *eb)
{
	return ms_owner_write_beside(path, "", kind, note, eb);
}

int
ms_owner_write_beside(const char *base, const char *suffix, const char *kind,
                      const char *note, ms_errbuf *eb)
{
	ms_owner o;
	int rc = ms_owner_self(&o, kind, note, eb);
	if (rc)
		return rc;
	char path[4300], tmp[4300], sfx[64];
	snprintf(sfx, sizeof(sfx), "%s.tmp-%ld", suffix, (long)o.pid);
	if (strlen(suffix) + 32 > sizeof(sfx) ||
	    ms_fs_name_beside(path, sizeof(path), base, suffix) != 0 ||
	    ms_fs_name_beside(tmp, sizeof(tmp), base, sfx) != 0)
		return ms_fail(eb, MS_ERR_RANGE,
		               "owner record %s%s: path too long", base,
		               suffix);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", tmp,
		               strerror(errno));
	fprintf(f,
	        "%s\nkind %s\npid %ld\nstart %" PRIu64 "\nboot %s\nnote %s\n",
	        OWNER_MAGIC, o.kind, (long)o.pid, o.start, o.boot, o.note);
	if (fclose(f) != 0) {
		int e = errno;
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(e), "%s: %s", tmp,
		               strerror(e));
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(e), "%s: %s", path,
		               strerror(e));
	}
	return 0;
}

int
ms_owner_read(const char *dir, ms_owner *o, ms_errbuf *eb)
{
	char path[4200];
	memset(o, 0, sizeof(*o));
	int rc = record_path(path, sizeof(path), dir, eb);
	return rc ? rc : ms_owner_read_file(path, o, eb);
}

int
ms_owner_read_file(const char *path, ms_owner *o, ms_errbuf *eb)
{
	char line[4200];
	int rc = 0;
	memset(o, 0, sizeof(*o));
	FILE *f = fopen(path, "re");
	if (!f)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "%s: %s", path, strerror(errno));
	/* Every line is there, each ended by its newline, the numbers whole:
	 * a record cut short (a disk that filled, a copy interrupted) could
	 * name another pid, so it names none. */
	enum { K_KIND = 1, K_PID = 2, K_START = 4, K_BOOT = 8, K_NOTE = 16 };
	unsigned seen = 0;
	bool magic = false, bad = false;
	while (!bad && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");
		if (line[len] != '\n') {
			bad = true; /* cut short, or a line too long */
			break;
		}
		line[len] = '\0';
		if (!magic) {
			magic = strcmp(line, OWNER_MAGIC) == 0;
			if (!magic)
				break;
			continue;
		}
		char *sp = strchr(line, ' ');
		const char *v = sp ? sp + 1 : "";
		if (sp)
			*sp = '\0';
		char *end = NULL;
		if (!strcmp(line, "kind")) {
			snprintf(o->kind, sizeof(o->kind), "%s", v);
			seen |= K_KIND;
		} else if (!strcmp(line, "pid")) {
			errno = 0;
			long pid = *v >= '0' && *v <= '9' ? strtol(v, &end, 10)
			                                  : 0;
			bad = !end || *end || errno || pid <= 0 ||
			      pid != (long)(pid_t)pid;
			o->pid = bad ? 0 : (pid_t)pid;
			seen |= K_PID;
		} else if (!strcmp(line, "start")) {
			errno = 0;
			o->start = *v >= '0' && *v <= '9'
			                   ? strtoull(v, &end, 10)
			                   : 0;
			bad = !end || *end || errno;
			seen |= K_START;
		} else if (!strcmp(line, "boot")) {
			snprintf(o->boot, sizeof(o->boot), "%s", v);
			seen |= K_BOOT;
		} else if (!strcmp(line, "note")) {
			snprintf(o->note, sizeof(o->note), "%s", v);
			seen |= K_NOTE;
		}
	}
	bool rerr = ferror(f);
	fclose(f);
	const unsigned all = K_KIND | K_PID | K_START | K_BOOT | K_NOTE;
	if (rerr)
		rc = ms_fail(eb, MS_ERR_IO, "%s: read failed", path);
	else if (!magic || bad || seen != all || !o->kind[0])
		rc = ms_fail(eb, MS_ERR_FORMAT,
		             "%s: not a whole owner record (expected \"%s\" "
		             "and a line each for kind, pid, start, boot and "
		             "note)",
		             path, OWNER_MAGIC);
	if (rc) {
		o->pid = 0;
		o->kind[0] = '\0';
	}
	return rc;
}

/* Does /proc/PID/task list a thread besides the leader? */
static bool
other_threads(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool other = false;
	struct dirent *de;
	while (!other && (de = readdir(d)))
		other = de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		        strtol(de->d_name, NULL, 10) != (long)pid;
	closedir(d);
	return other;
}

bool
ms_owner_alive(const ms_owner *o)
{
	char boot[40];
	boot_id(boot, sizeof(boot));
	if (o->boot[0] && boot[0] && strcmp(o->boot, boot) != 0)
		return false; /* rebooted since */
	if (o->pid <= 0)
		return false;
	if (kill(o->pid, 0) != 0 && errno == ESRCH)
		return false;
	char state;
	uint64_t start = proc_start(o->pid, &state);
	/* A process killed whose parent has not reaped it yet (a container
	 * whose init does not reap, a stopped parent) holds nothing; a
	 * leader that ended alone while its other threads run still does. */
	if ((state == 'Z' || state == 'X' || state == 'x') &&
	    !other_threads(o->pid))
		return false;
	if (start == 0)
		return kill(o->pid, 0) == 0 || errno == EPERM;
	return o->start == 0 || start == o->start;
}
