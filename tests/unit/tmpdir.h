/*
 * tmpdir.h - a fresh directory under /tmp for one unit test's files, and
 * its removal with everything in it: the fixtures that open partitions and
 * coordinator stores all need the pair (header only; include it after
 * <cmocka.h>).
 */
#ifndef GREGOR_UNIT_TMPDIR_H
#define GREGOR_UNIT_TMPDIR_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Makes /tmp/gregor-<what>-XXXXXX and writes its path to dir (cap bytes). */
static inline void tmpdir_make(char *dir, size_t cap, const char *what)
{
	snprintf(dir, cap, "/tmp/gregor-%s-XXXXXX", what);
	assert_non_null(mkdtemp(dir));
}

/* Removes dir and everything below it. */
static inline void tmpdir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

#endif
