/*
 * owner.c - owner records of scratch directories (ms_owner.h): written
 * when a directory is made, read to tell a live owner from a dead one.
 */
#define _GNU_SOURCE
#include "ms_owner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OWNER_MAGIC "mergescope-owner 1"

/* Field 22 (starttime) of /proc/PID/stat; 0 if it cannot be read. The
 * command name (field 2) may hold spaces and parentheses: fields are
 * counted after its last ')'. */
static uint64_t
proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* p is just before field 3; starttime is field 22. */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	return p ? strtoull(p + 1, NULL, 10) : 0;
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
	o->start = proc_start(o->pid);
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
	ms_owner o;
	int rc = ms_owner_self(&o, kind, note, eb);
	if (rc)
		return rc;
	char path[4200], tmp[4300];
	if ((rc = record_path(path, sizeof(path), dir, eb)))
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path,
	                     (long)o.pid) >= sizeof(tmp))
		return ms_fail(eb, MS_ERR_RANGE,
		               "owner record in %s: path too long", dir);
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
	char path[4200], line[4200];
	memset(o, 0, sizeof(*o));
	int rc = record_path(path, sizeof(path), dir, eb);
	if (rc)
		return rc;
	FILE *f = fopen(path, "re");
	if (!f)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "%s: %s", path, strerror(errno));
	bool magic = false, has_pid = false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
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
		if (!strcmp(line, "kind"))
			snprintf(o->kind, sizeof(o->kind), "%s", v);
		else if (!strcmp(line, "pid"))
			o->pid = (pid_t)strtol(v, NULL, 10), has_pid = true;
		else if (!strcmp(line, "start"))
			o->start = strtoull(v, NULL, 10);
		else if (!strcmp(line, "boot"))
			snprintf(o->boot, sizeof(o->boot), "%s", v);
		else if (!strcmp(line, "note"))
			snprintf(o->note, sizeof(o->note), "%s", v);
	}
	fclose(f);
	if (!magic || !has_pid || o->pid <= 0 || !o->kind[0])
		rc = ms_fail(eb, MS_ERR_FORMAT,
		             "%s: not an owner record (expected \"%s\" with "
		             "kind and pid)",
		             path, OWNER_MAGIC);
	return rc;
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
	uint64_t start = proc_start(o->pid);
	if (start == 0)
		return kill(o->pid, 0) == 0 || errno == EPERM;
	return o->start == 0 || start == o->start;
}
