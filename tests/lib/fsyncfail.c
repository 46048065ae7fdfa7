/*
 * fsyncfail.c - an LD_PRELOAD shim for durability tests: fdatasync() of a
 * file whose path contains $GREGOR_FSYNC_FAIL_PATH fails with EIO while
 * the file $GREGOR_FSYNC_FAIL_FLAG exists, so a test can turn the fault
 * on and off while the broker runs.  Everything else goes to the real
 * fdatasync.  Built by the tests that use it (tests/lib/gregor.py
 * fsyncfail_shim()).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int (*real_fdatasync)(int fd);

static int fsyncfail_match(int fd)
{
	const char *flag = getenv("GREGOR_FSYNC_FAIL_FLAG"), *match = getenv("GREGOR_FSYNC_FAIL_PATH");
	char link[64], path[4096];
	ssize_t n;

	if (!flag || !match || access(flag, F_OK) != 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strstr(path, match) != NULL;
}

int fdatasync(int fd)
{
	if (!real_fdatasync)
		real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	if (fsyncfail_match(fd)) {
		errno = EIO;
		return -1;
	}
	return real_fdatasync(fd);
}
