/* durable.c - crash-safe file replacement and directory entries (see durable.h). */
#include "util/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static durable_fail_fn *durable_hook; /* (atomic) set once before any sync */
static void *durable_hook_arg;
static int durable_err; /* -errno of the first failed sync, 0 = none (atomic) */

void durable_on_fail(durable_fail_fn *fn, void *arg)
{
	__atomic_store_n(&durable_hook_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&durable_hook, fn, __ATOMIC_RELEASE);
}

bool durable_failed(void)
{
	return __atomic_load_n(&durable_err, __ATOMIC_ACQUIRE) != 0;
}

/* Latches the first failure and tells the hook about every one; returns err. */
static int durable_fail(int err)
{
	int none = 0;
	durable_fail_fn *fn;

	__atomic_compare_exchange_n(&durable_err, &none, err, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	fn = __atomic_load_n(&durable_hook, __ATOMIC_ACQUIRE);
	if (fn)
		fn(__atomic_load_n(&durable_hook_arg, __ATOMIC_ACQUIRE), err);
	return err;
}

int durable_fsync(int fd)
{
	return fsync(fd) < 0 ? durable_fail(-errno) : 0;
}

int durable_fdatasync(int fd)
{
	return fdatasync(fd) < 0 ? durable_fail(-errno) : 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* durable_replace(), with sync false durable_replace_unsynced(). */
static int replace_file(int dir_fd, const char *name, const void *data, size_t len, bool sync)
{
	char tmp[NAME_MAX + 1];
	int fd, rc;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, data, len);
	if (!rc && sync)
		rc = durable_fsync(fd);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dir_fd, tmp, dir_fd, name) < 0)
		rc = -errno;
	if (rc)
		unlinkat(dir_fd, tmp, 0);
	else if (sync)
		rc = durable_fsync(dir_fd);
	return rc;
}

int durable_replace(int dir_fd, const char *name, const void *data, size_t len)
{
	return replace_file(dir_fd, name, data, len, true);
}

int durable_replace_unsynced(int dir_fd, const char *name, const void *data, size_t len)
{
	return replace_file(dir_fd, name, data, len, false);
}

/* Splits path into its directory (OUT: dir, "." when none) and last name. */
static const char *path_split(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		snprintf(dir, cap, ".");
		return path;
	}
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= cap)
		n = cap - 1;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return slash + 1;
}

int durable_sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = durable_fsync(fd);
	close(fd);
	return rc;
}

int durable_sync_parent(const char *path)
{
	char dir[PATH_MAX];

	path_split(path, dir, sizeof(dir));
	return durable_sync_dir(dir);
}

int durable_replace_path(const char *path, const void *data, size_t len)
{
	char dir[PATH_MAX];
	const char *name = path_split(path, dir, sizeof(dir));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = durable_replace(fd, name, data, len);
	close(fd);
	return rc;
}

int durable_mkdir(const char *path, unsigned mode)
{
	if (mkdir(path, (mode_t)mode) < 0)
		return errno == EEXIST ? 0 : -errno;
	return durable_sync_parent(path);
}

int durable_write_new(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc;

	if (fd < 0)
		return -errno;
	rc = write_all(fd, data, len);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
	return rc;
}

int durable_syncfs(int fd)
{
	return syncfs(fd) < 0 ? durable_fail(-errno) : 0;
}

int durable_rename(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		return -errno;
	return durable_sync_parent(to);
}
