/*
 * syncshim.c - the LD_PRELOAD library of the durability and crash-safety
 * tests (driven by tests/lib/syncshim.py): it puts fdatasync(2) and
 * fsync(2) under a test's control and logs the broker's durability-relevant
 * file system calls.
 *
 * SIGKILL keeps the page cache, so it cannot show what a power loss takes
 * back, nor a missing fsync.  This shim records what each successful sync
 * covered, so a test can cut every file back to the length it had when it
 * was last synced (the power cut); it can make a sync fail or wait, so a
 * test can see what the broker answers then; and it can log every create,
 * sync, rename, mkdir and removal in order, and stop the broker at an exact
 * point of a multi-step change.
 *
 * Controls in the directory $GREGOR_SYNCSHIM_DIR (changed while the broker
 * runs; none of them without it):
 *   journal  appended to after every successful sync of a regular file:
 *            "<size>\t<path>\n", size taken by fstat before the real call
 *            (what was written before the call is what the call covers)
 *   hold     while it exists, syncs of regular files whose path contains
 *            the text it holds (empty: any file) wait (polled every 5 ms)
 *            before doing anything
 *   fail     if it exists and the synced file's path contains the text it
 *            holds (empty: any file), the call that manages to unlink it
 *            fails with EIO without syncing: one failure per file created
 * Directories are synced as usual and never recorded, held or failed there.
 *   hold-syncfs, fail-syncfs
 *            the same for syncfs(2) of the file system holding a path
 *            (the broker's log dir when it makes topics in rounds)
 *
 * Environment (read at each call; set before the broker starts):
 *   GREGOR_SYNCSHIM_TRACE=<file>
 *            one line per successful call, appended:
 *              open <path>            (a file O_CREAT made)
 *              fsync <path>           (fsync and fdatasync alike, any file)
 *              syncfs <path>          (the whole file system holding path)
 *              fail-fsync <path>      (failed by GREGOR_SYNCSHIM_FAIL)
 *              rename <from> <to>
 *              mkdir <path>
 *              unlink <path>
 *              rmdir <path>
 *            paths are absolute (fds and dirfds resolved through /proc/self/fd)
 *   GREGOR_SYNCSHIM_STOP=<op>:<substring>
 *            after the first successful <op> whose trace line contains
 *            <substring>, writes "stopped" to the trace and stops the whole
 *            process with SIGSTOP (the test then SIGKILLs it: a crash at
 *            exactly that point)
 *   GREGOR_SYNCSHIM_FAIL=<substring>
 *            every fsync and fdatasync of a path (file or directory)
 *            containing <substring> fails with EIO (a disk gone bad)
 *   GREGOR_SYNCSHIM_FALLOCATE_ENOSPC=1
 *            every fallocate(2) that allocates and sets the length (mode
 *            0) grows the file to the length asked and fails with ENOSPC
 *            (an allocation that ran out of space at its last blocks: the
 *            length may have grown all the same)
 *
 * Calls made inside libc (fopen's open, ...) are not seen; the broker makes
 * its durability calls directly.  The shim's own file calls go to the real
 * functions, so they are never traced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PBUF (2 * PATH_MAX) /* a directory path plus a name */
#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

/* ---- paths ---- */

static void fd_path(int fd, char *buf, size_t cap)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* dirfd + name as an absolute path. */
static void at_path(int dirfd, const char *name, char *buf, size_t cap)
{
	char dir[PATH_MAX];

	if (name[0] == '/' || dirfd == AT_FDCWD) {
		if (name[0] != '/' && getcwd(dir, sizeof(dir)))
			snprintf(buf, cap, "%s/%s", dir, name);
		else
			snprintf(buf, cap, "%s", name);
		return;
	}
	fd_path(dirfd, dir, sizeof(dir));
	snprintf(buf, cap, "%s/%s", dir, name);
}

/* ---- the trace and the stop point ---- */

/* Appends one line to the trace; stops the process if GREGOR_SYNCSHIM_STOP matches. */
static void trace(const char *op, const char *a, const char *b)
{
	const char *log = getenv("GREGOR_SYNCSHIM_TRACE"), *stop = getenv("GREGOR_SYNCSHIM_STOP");
	char line[2 * PBUF + 32];
	int n, fd, saved = errno;

	n = snprintf(line, sizeof(line), "%s %s%s%s\n", op, a, b ? " " : "", b ? b : "");
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	if (log && (fd = REAL(open)(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) >= 0) {
		if (write(fd, line, (size_t)n) < 0) {
			/* nothing to do: tracing is best effort */
		}
		if (stop) {
			const char *colon = strchr(stop, ':');

			if (colon && !strncmp(stop, op, (size_t)(colon - stop)) && op[colon - stop] == '\0' &&
			    strstr(line, colon + 1)) {
				if (write(fd, "stopped\n", 8) < 0) {
					/* as above */
				}
				close(fd);
				unsetenv("GREGOR_SYNCSHIM_STOP");
				kill(getpid(), SIGSTOP);
				errno = saved;
				return;
			}
		}
		close(fd);
	}
	errno = saved;
}

static void trace_fd(const char *op, int fd)
{
	char p[PBUF];

	fd_path(fd, p, sizeof(p));
	trace(op, p, NULL);
}

/* ---- the control directory ---- */

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
static bool shim_matches(const char *name, const char *path, char control[PATH_MAX])
{
	char want[PATH_MAX] = "";
	int fd;
	ssize_t n;

	shim_path(name, control, PATH_MAX);
	fd = REAL(open)(control, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, want, sizeof(want) - 1);
	close(fd);
	want[n > 0 ? n : 0] = '\0';
	want[strcspn(want, "\n")] = '\0';
	return !want[0] || strstr(path, want) != NULL;
}

/* Waits while the control file name ("hold", "hold-syncfs") matches path. */
static void shim_wait_hold(const char *name, const char *path)
{
	char hold[PATH_MAX];
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	while (shim_matches(name, path, hold))
		nanosleep(&ts, NULL);
}

/* True if this call must fail: the control file name ("fail", "fail-syncfs") matches path and this call removed it. */
static bool shim_take_fail(const char *name, const char *path)
{
	char fail[PATH_MAX];

	return shim_matches(name, path, fail) && REAL(unlink)(fail) == 0;
}

static void shim_journal(const char *path, off_t size)
{
	char journal[PATH_MAX], line[PATH_MAX + 32];
	int fd, n;

	shim_path("journal", journal, sizeof(journal));
	fd = REAL(open)(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%lld\t%s\n", (long long)size, path);
	if (write(fd, line, (size_t)n) != n)
		(void)0; /* the test sees a short journal */
	close(fd);
}

/* ---- fsync, fdatasync ---- */

/* True (errno EIO) if GREGOR_SYNCSHIM_FAIL names a part of path. */
static bool shim_fails_always(const char *path)
{
	const char *fail = getenv("GREGOR_SYNCSHIM_FAIL");

	if (!fail || !*fail || !strstr(path, fail))
		return false;
	trace("fail-fsync", path, NULL);
	return true;
}

static int shim_sync(int fd, int (*real)(int))
{
	char path[PBUF];
	struct stat st;
	bool controlled;
	int rc;

	fd_path(fd, path, sizeof(path));
	controlled = shim_dir() && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (controlled)
		shim_wait_hold("hold", path);
	if (controlled && fstat(fd, &st) < 0)
		controlled = false;
	if (shim_fails_always(path) || (controlled && shim_take_fail("fail", path))) {
		errno = EIO;
		return -1;
	}
	rc = real(fd);
	if (rc == 0 && controlled)
		shim_journal(path, st.st_size);
	if (rc == 0)
		trace("fsync", path, NULL);
	return rc;
}

int fdatasync(int fd)
{
	return shim_sync(fd, REAL(fdatasync));
}

int fsync(int fd)
{
	return shim_sync(fd, REAL(fsync));
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	struct stat st;

	if (mode != 0 || !getenv("GREGOR_SYNCSHIM_FALLOCATE_ENOSPC"))
		return REAL(fallocate)(fd, mode, off, len);
	if (fstat(fd, &st) == 0 && off + len > st.st_size && ftruncate(fd, off + len) < 0)
		return -1;
	errno = ENOSPC;
	return -1;
}

/* syncfs: held by hold-syncfs, failed by fail-syncfs or GREGOR_SYNCSHIM_FAIL, traced (no journal entry). */
int syncfs(int fd)
{
	char path[PBUF];
	int rc;

	fd_path(fd, path, sizeof(path));
	if (shim_dir())
		shim_wait_hold("hold-syncfs", path);
	if (shim_fails_always(path) || (shim_dir() && shim_take_fail("fail-syncfs", path))) {
		errno = EIO;
		return -1;
	}
	rc = REAL(syncfs)(fd);
	if (rc == 0)
		trace("syncfs", path, NULL);
	return rc;
}

/* ---- traced calls ---- */

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	bool existed;
	int fd;

	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	existed = (flags & O_CREAT) && access(path, F_OK) == 0;
	fd = REAL(open)(path, flags, mode);
	if (fd >= 0 && (flags & O_CREAT) && !existed)
		trace_fd("open", fd);
	return fd;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	bool existed;
	int fd;

	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	existed = (flags & O_CREAT) && faccessat(dirfd, path, F_OK, 0) == 0;
	fd = REAL(openat)(dirfd, path, flags, mode);
	if (fd >= 0 && (flags & O_CREAT) && !existed)
		trace_fd("open", fd);
	return fd;
}

int rename(const char *from, const char *to)
{
	char a[PBUF], b[PBUF];
	int rc;

	at_path(AT_FDCWD, from, a, sizeof(a));
	at_path(AT_FDCWD, to, b, sizeof(b));
	rc = REAL(rename)(from, to);
	if (rc == 0)
		trace("rename", a, b);
	return rc;
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	char a[PBUF], b[PBUF];
	int rc;

	at_path(fromfd, from, a, sizeof(a));
	at_path(tofd, to, b, sizeof(b));
	rc = REAL(renameat)(fromfd, from, tofd, to);
	if (rc == 0)
		trace("rename", a, b);
	return rc;
}

int mkdir(const char *path, mode_t mode)
{
	char p[PBUF];
	int rc = REAL(mkdir)(path, mode);

	if (rc == 0) {
		at_path(AT_FDCWD, path, p, sizeof(p));
		trace("mkdir", p, NULL);
	}
	return rc;
}

int unlinkat(int dirfd, const char *path, int flags)
{
	char p[PBUF];
	int rc;

	at_path(dirfd, path, p, sizeof(p));
	rc = REAL(unlinkat)(dirfd, path, flags);
	if (rc == 0)
		trace(flags & AT_REMOVEDIR ? "rmdir" : "unlink", p, NULL);
	return rc;
}

/* unlink and rmdir are unlinkat on the current directory: one traced body */
int unlink(const char *path)
{
	return unlinkat(AT_FDCWD, path, 0);
}

int rmdir(const char *path)
{
	return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}
