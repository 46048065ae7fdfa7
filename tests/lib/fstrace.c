/*
 * fstrace.c - LD_PRELOAD shim that records the broker's durability-relevant
 * file system calls, in order, so tests can check crash-safety rules that
 * SIGKILL alone cannot show (a missing fsync leaves no trace in the page
 * cache), and can stop the broker at an exact point of a multi-step change.
 *
 *   FSTRACE_LOG=<file>   one line per successful call, appended:
 *                          open <path>            (a file O_CREAT made)
 *                          fsync <path>           (fsync and fdatasync alike)
 *                          rename <from> <to>
 *                          mkdir <path>
 *                          unlink <path>
 *                          rmdir <path>
 *                        paths are absolute (fds and dirfds resolved through
 *                        /proc/self/fd).
 *   FSTRACE_STOP=<op>:<substring>
 *                        after the first successful <op> whose line contains
 *                        <substring>, writes "stopped" to the log and stops
 *                        the whole process with SIGSTOP (the test then
 *                        SIGKILLs it: a crash at exactly that point).
 *   FSTRACE_FAIL=<substring>
 *                        fsync and fdatasync of a path containing <substring>
 *                        fail with EIO (a disk error at the sync).
 *
 * Calls made inside libc (fopen's open, ...) are not seen; the broker makes
 * its durability calls directly.
 */
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
#include <unistd.h>

#define PBUF (2 * PATH_MAX) /* a directory path plus a name */
#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

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

/* Appends one line to FSTRACE_LOG; stops the process if FSTRACE_STOP matches. */
static void trace(const char *op, const char *a, const char *b)
{
	const char *log = getenv("FSTRACE_LOG"), *stop = getenv("FSTRACE_STOP");
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
				unsetenv("FSTRACE_STOP");
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

static void trace_at(const char *op, int dirfd, const char *name)
{
	char p[PBUF];

	at_path(dirfd, name, p, sizeof(p));
	trace(op, p, NULL);
}

/*
 * The traced open behind open and openat: logs a file that O_CREAT made.
 * ap holds the mode argument, there with O_CREAT or O_TMPFILE.
 */
static int open_at(int dirfd, const char *path, int flags, va_list ap)
{
	mode_t mode = flags & (O_CREAT | O_TMPFILE) ? va_arg(ap, mode_t) : 0;
	bool existed = (flags & O_CREAT) && faccessat(dirfd, path, F_OK, 0) == 0;
	int fd = REAL(openat)(dirfd, path, flags, mode);

	if (fd >= 0 && (flags & O_CREAT) && !existed)
		trace_fd("open", fd);
	return fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_at(AT_FDCWD, path, flags, ap);
	va_end(ap);
	return fd;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_at(dirfd, path, flags, ap);
	va_end(ap);
	return fd;
}

/* True (errno EIO) if FSTRACE_FAIL names a part of fd's path. */
static bool sync_fails(int fd)
{
	const char *fail = getenv("FSTRACE_FAIL");
	char p[PBUF];

	if (!fail || !*fail)
		return false;
	fd_path(fd, p, sizeof(p));
	if (!strstr(p, fail))
		return false;
	trace("fail-fsync", p, NULL);
	errno = EIO;
	return true;
}

/* The traced sync behind fsync and fdatasync (both logged as "fsync"). */
static int sync_traced(int fd, int (*real)(int))
{
	int rc = sync_fails(fd) ? -1 : real(fd);

	if (rc == 0)
		trace_fd("fsync", fd);
	return rc;
}

int fsync(int fd)
{
	return sync_traced(fd, REAL(fsync));
}

int fdatasync(int fd)
{
	return sync_traced(fd, REAL(fdatasync));
}

/* The traced rename behind rename and renameat; paths taken before the call. */
static int rename_at(int fromfd, const char *from, int tofd, const char *to)
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

int rename(const char *from, const char *to)
{
	return rename_at(AT_FDCWD, from, AT_FDCWD, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	return rename_at(fromfd, from, tofd, to);
}

int mkdir(const char *path, mode_t mode)
{
	int rc = REAL(mkdir)(path, mode);

	if (rc == 0)
		trace_at("mkdir", AT_FDCWD, path);
	return rc;
}

/* The traced removal behind unlink, unlinkat and rmdir; the path is taken before the call. */
static int unlink_at(int dirfd, const char *path, int flags)
{
	char p[PBUF];
	int rc;

	at_path(dirfd, path, p, sizeof(p));
	rc = REAL(unlinkat)(dirfd, path, flags);
	if (rc == 0)
		trace(flags & AT_REMOVEDIR ? "rmdir" : "unlink", p, NULL);
	return rc;
}

int unlink(const char *path)
{
	return unlink_at(AT_FDCWD, path, 0);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	return unlink_at(dirfd, path, flags);
}

int rmdir(const char *path)
{
	return unlink_at(AT_FDCWD, path, AT_REMOVEDIR);
}
