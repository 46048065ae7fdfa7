/*
 * fds.h - how many descriptors this process holds open below a path: the
 * unit tests of the log's descriptor budget (idxfile, segcache) count them
 * through /proc/self/fd (header only; include it after <cmocka.h>).
 */
#ifndef GREGOR_UNIT_FDS_H
#define GREGOR_UNIT_FDS_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Descriptors of this process open on files whose path starts with prefix. */
static inline int fds_under(const char *prefix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char link[300], target[PATH_MAX];
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		n += !strncmp(target, prefix, strlen(prefix));
	}
	closedir(d);
	return n;
}

#endif
