/*
 * syncshim.c - an LD_PRELOAD library that puts fdatasync(2) and fsync(2)
 * under a test's control, for the durability tests (tests/lib/syncshim.py).
 *
 * SIGKILL keeps the page cache, so it cannot show what a power loss takes
 * back.  This shim records what each successful sync covered, so a test
 * can cut every file back to the length it had when it was last synced
 * (the power cut), and it can make a sync fail or wait, so a test can see
 * what the broker answers then.
 *
 * Everything is driven by files in the directory $GREGOR_SYNCSHIM_DIR
 * (the shim does nothing without it):
 *   journal  appended to after every successful sync of a regular file:
 *            "<size>\t<path>\n", size taken by fstat before the real call
 *            (what was written before the call is what the call covers)
 *   hold     while it exists, syncs of regular files whose path contains
 *            the text it holds (empty: any file) wait (polled every 5 ms)
 *            before doing anything
 *   fail     if it exists and the synced file's path contains the text it
 *            holds (empty: any file), the call that manages to unlink it
 *            fails with EIO without syncing: one failure per file created
 * Directories are synced as usual and never recorded, held or failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int sync_fn(int fd);

static const char *shim_dir(void)
{
	const char *d = getenv("GREGOR_SYNCSHIM_DIR");

	return d && d[0] ? d : NULL;
}

static void shim_path(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", shim_dir(), name);
}

/*
 * True if the control file name exists and path contains the text it
 * holds (empty: any path).  OUT *control: its full path.
 */
static int shim_matches(const char *name, const char *path, char control[PATH_MAX])
{
	char want[PATH_MAX] = "";
	int fd;
	ssize_t n;

	shim_path(name, control, PATH_MAX);
	fd = open(control, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, want, sizeof(want) - 1);
	close(fd);
	want[n > 0 ? n : 0] = '\0';
	want[strcspn(want, "\n")] = '\0';
	return !want[0] || strstr(path, want) != NULL;
}

static void shim_wait_hold(const char *path)
{
	char hold[PATH_MAX];
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	while (shim_matches("hold", path, hold))
		nanosleep(&ts, NULL);
}

/* True if this call must fail: the fail file matches path and this call removed it. */
static int shim_take_fail(const char *path)
{
	char fail[PATH_MAX];

	return shim_matches("fail", path, fail) && unlink(fail) == 0;
}

static void shim_journal(const char *path, off_t size)
{
	char journal[PATH_MAX], line[PATH_MAX + 32];
	int fd, n;

	shim_path("journal", journal, sizeof(journal));
	fd = open(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%lld\t%s\n", (long long)size, path);
	if (write(fd, line, (size_t)n) != n)
		(void)0; /* the test sees a short journal */
	close(fd);
}

static int shim_sync(int fd, const char *name)
{
	sync_fn *real = (sync_fn *)dlsym(RTLD_NEXT, name);
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;
	int rc;

	if (!shim_dir() || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return real(fd);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	shim_wait_hold(path);
	if (fstat(fd, &st) < 0)
		return real(fd);
	if (shim_take_fail(path)) {
		errno = EIO;
		return -1;
	}
	rc = real(fd);
	if (rc == 0)
		shim_journal(path, st.st_size);
	return rc;
}

int fdatasync(int fd)
{
	return shim_sync(fd, "fdatasync");
}

int fsync(int fd)
{
	return shim_sync(fd, "fsync");
}
