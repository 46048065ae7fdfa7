/* checkpoint.c - atomically replaced small text files (see checkpoint.h). */
#include "log/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int checkpoint_write(int dir_fd, const char *dir, const char *name, const char *text)
{
	char tmp[4096], path[4096];
	size_t len = strlen(text);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -ENOSPC;
	if (!rc && fdatasync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (!rc && fsync(dir_fd) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int checkpoint_read(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	if (n < 0)
		n = -errno;
	else if ((size_t)n >= cap)
		n = -EFBIG;
	else
		buf[n] = '\0';
	close(fd);
	return (int)n;
}
