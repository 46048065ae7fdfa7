/*
 * test_idxfile.c - a writable index file held as a mapping with no
 * descriptor: the file exactly as long as its entries after every append
 * (across the mapping's growth), room reserved past its end while written
 * and freed at sync and close, entries read back after a reopen, parked
 * (unmapped) and mapped again, reset, and no descriptor left open on the
 * file at any point.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../fds.h"
#include "../tmpdir.h"

#include "log/offidx.h"

#define ENTRIES 2000 /* about four pages of 8-byte entries: the mapping grows twice */

static struct stat stat_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st;
}

static int sync_ok(int fd)
{
	return fdatasync(fd) < 0 ? -errno : 0;
}

static void test_writable_mapped(void **state)
{
	char dir[64], path[128];
	struct offidx oi;

	(void)state;
	tmpdir_make(dir, sizeof(dir), "idxfile");
	snprintf(path, sizeof(path), "%s/00000000000000000000.index", dir);
	assert_int_equal(offidx_open(&oi, path, 1 << 20, true, false), 0);
	assert_null(oi.f.raw); /* nothing mapped before the first entry */
	assert_int_equal(fds_under(dir), 0);
	for (int32_t i = 0; i < ENTRIES; i++) {
		assert_int_equal(offidx_append(&oi, i, i * 100), 0);
		assert_int_equal(stat_of(path).st_size, (int64_t)(i + 1) * OFFIDX_ENTRY_SIZE);
		if (i == 0) /* the room of the first page is reserved on disk */
			assert_true(stat_of(path).st_blocks * 512 >= 4096);
	}
	assert_int_equal(fds_under(dir), 0);
	assert_int_equal(offidx_lookup(&oi, 1234), 123400);
	assert_int_equal(idxfile_sync(&oi.f, sync_ok), 0);
	/* the reserved room past the end is freed once written: at most the entries' blocks */
	assert_true(stat_of(path).st_blocks * 512 <= (ENTRIES * OFFIDX_ENTRY_SIZE + 4095) / 4096 * 4096);
	assert_int_equal(offidx_append(&oi, ENTRIES, ENTRIES * 100), 0); /* reserves anew */
	offidx_close(&oi);
	assert_int_equal(stat_of(path).st_size, (int64_t)(ENTRIES + 1) * OFFIDX_ENTRY_SIZE);
	assert_true(stat_of(path).st_blocks * 512 <= ((ENTRIES + 1) * OFFIDX_ENTRY_SIZE + 4095) / 4096 * 4096);

	assert_int_equal(offidx_open(&oi, path, 1 << 20, false, false), 0);
	assert_int_equal(oi.f.n, ENTRIES + 1);
	assert_false(oi.f.bad);
	assert_true(offidx_valid(&oi, (int64_t)ENTRIES * 100 + 1));
	for (int32_t i = 0; i <= ENTRIES; i++)
		assert_int_equal(offidx_ent(&oi, i).pos, i * 100);
	idxfile_park(&oi.f); /* an idle active segment: no mapping, entries still counted */
	assert_null(oi.f.raw);
	assert_int_equal(oi.f.n, ENTRIES + 1);
	assert_int_equal(idxfile_wake(&oi.f), 0);
	assert_int_equal(offidx_lookup(&oi, 1500), 150000);
	idxfile_park(&oi.f); /* an append maps it again */
	assert_int_equal(offidx_append(&oi, ENTRIES + 1, (ENTRIES + 1) * 100), 0);
	assert_int_equal(offidx_ent(&oi, ENTRIES).pos, ENTRIES * 100);
	assert_int_equal(stat_of(path).st_size, (int64_t)(ENTRIES + 2) * OFFIDX_ENTRY_SIZE);
	assert_int_equal(fds_under(dir), 0);
	assert_int_equal(offidx_reset(&oi), 0);
	assert_int_equal(stat_of(path).st_size, 0);
	assert_int_equal(offidx_append(&oi, 7, 70), 0);
	assert_int_equal(stat_of(path).st_size, OFFIDX_ENTRY_SIZE);
	offidx_close(&oi);
	assert_int_equal(offidx_map(&oi, path), 0); /* read back as a sealed segment does */
	assert_int_equal(oi.f.n, 1);
	assert_int_equal(offidx_ent(&oi, 0).rel, 7);
	offidx_close(&oi);
	tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writable_mapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
