/* checkpoint.c - atomically replaced small text files (see checkpoint.h). */
#include "log/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/durable.h"

int checkpoint_write(int dir_fd, const char *name, const char *text)
{
	return durable_replace(dir_fd, name, text, strlen(text));
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
