/*
 * fuzz_file.h - for the harnesses whose parser reads a file: each input
 * written as one file in a directory of the harness's own (in /dev/shm
 * when it is writable, else /tmp), removed at exit.
 */
#ifndef MS_FUZZ_FILE_H
#define MS_FUZZ_FILE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[128], fuzz_file[192];

static void
fuzz_file_cleanup(void)
{
	unlink(fuzz_file);
	rmdir(fuzz_dir);
}

/* Write data as DIR/name, DIR made (msfuzz-TAG-PID) at the first call;
 * aborts when it cannot be written. The file's path is fuzz_file. */
static void
fuzz_file_write(const char *tag, const char *name, const uint8_t *data,
                size_t size)
{
	if (!fuzz_dir[0]) {
		const char *root =
		        access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/msfuzz-%s-%d", root,
		         tag, (int)getpid());
		snprintf(fuzz_file, sizeof(fuzz_file), "%s/%s", fuzz_dir,
		         name);
		mkdir(fuzz_dir, 0755);
		atexit(fuzz_file_cleanup);
	}
	int fd = open(fuzz_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) { /* someone cleaned /dev/shm under us */
		mkdir(fuzz_dir, 0755);
		fd = open(fuzz_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	}
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

#endif
