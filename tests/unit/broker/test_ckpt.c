/* test_ckpt.c - the per-partition checkpoint files: hashed lookup, snapshots, the writer thread. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/ckpt.h"
#include "util/dirdel.h"

#define NTOPICS 500
#define NPARTS 20 /* 10,000 partitions */

static int dir_setup(void **state)
{
	char *dir = strdup("/tmp/gregor-test-ckpt-XXXXXX");

	assert_non_null(mkdtemp(dir));
	*state = dir;
	return 0;
}

static int dir_teardown(void **state)
{
	dirdel_remove(*state);
	free(*state);
	return 0;
}

static void topic_name(char *buf, size_t n, int t)
{
	snprintf(buf, n, "topic.%d_%c", t, 'a' + t % 26);
}

/* A snapshot of NTOPICS x NPARTS partitions: recovery point t*1000+p, cleaner offset only for odd p. */
static struct ckpt_snap *snap_big(void)
{
	struct ckpt_snap *s = ckpt_snap_new();
	char name[64];

	assert_non_null(s);
	for (int t = 0; t < NTOPICS; t++) {
		topic_name(name, sizeof(name), t);
		assert_int_equal(ckpt_snap_topic(s, name), 0);
		for (int p = 0; p < NPARTS; p++)
			assert_int_equal(ckpt_snap_part(s, p, (int64_t)t * 1000 + p, p % 2 ? p : -1), 0);
	}
	return s;
}

static void check_big(const char *dir)
{
	struct ckpt_map *rp = NULL, *cl = NULL;
	char name[64];

	assert_int_equal(ckpt_map_load(dir, CKPT_RECOVERY_FILE, &rp), 0);
	assert_int_equal(ckpt_map_load(dir, CKPT_CLEANER_FILE, &cl), 0);
	for (int t = 0; t < NTOPICS; t++) {
		topic_name(name, sizeof(name), t);
		for (int p = 0; p < NPARTS; p++) {
			assert_int_equal(ckpt_map_find(rp, name, p), (int64_t)t * 1000 + p);
			assert_int_equal(ckpt_map_find(cl, name, p), p % 2 ? p : -1);
		}
		assert_int_equal(ckpt_map_find(rp, name, NPARTS), -1);
	}
	assert_int_equal(ckpt_map_find(rp, "nosuch", 0), -1);
	assert_int_equal(ckpt_map_find(rp, "topic.1", 1), -1); /* a prefix is another topic */
	ckpt_map_free(rp);
	ckpt_map_free(cl);
}

static void test_round_trip(void **state)
{
	struct ckpt_snap *s = snap_big();

	assert_int_equal(ckpt_snap_write(s, *state), 0);
	ckpt_snap_free(s);
	check_big(*state);
}

static void test_writer_thread(void **state)
{
	struct ckpt_writer *w;
	struct ckpt_snap *s;

	assert_int_equal(ckpt_writer_start(*state, &w), 0);
	s = ckpt_snap_new();
	ckpt_snap_topic(s, "old");
	ckpt_snap_part(s, 0, 1, -1);
	ckpt_writer_submit(w, s);
	ckpt_writer_submit(w, snap_big()); /* the newest wins, whether or not the first was written */
	for (int i = 0; i < 500; i++) {    /* up to 5 s for the big one to land */
		struct ckpt_map *m = NULL;

		if (ckpt_map_load(*state, CKPT_CLEANER_FILE, &m) == 0 && ckpt_map_find(m, "topic.0_a", 1) == 1) {
			ckpt_map_free(m);
			break;
		}
		ckpt_map_free(m);
		usleep(10000);
	}
	ckpt_writer_stop(w);
	check_big(*state);
}

static void write_file(const char *dir, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, CKPT_RECOVERY_FILE);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_bad_files(void **state)
{
	struct ckpt_map *m = (struct ckpt_map *)1;

	assert_int_equal(ckpt_map_load(*state, CKPT_RECOVERY_FILE, &m), -ENOENT);
	assert_null(m);
	assert_int_equal(ckpt_map_find(NULL, "t", 0), -1);
	write_file(*state, "1\n1\nt 0 5\n");
	assert_int_equal(ckpt_map_load(*state, CKPT_RECOVERY_FILE, &m), -EBADMSG);
	write_file(*state, "0\n99999999999\n");
	assert_int_equal(ckpt_map_load(*state, CKPT_RECOVERY_FILE, &m), -EBADMSG);
	/* fewer lines than announced, then garbage: what parses is kept */
	write_file(*state, "0\n5\nt 0 5\nt 1 7\nt x 9\n");
	assert_int_equal(ckpt_map_load(*state, CKPT_RECOVERY_FILE, &m), 0);
	assert_int_equal(ckpt_map_find(m, "t", 0), 5);
	assert_int_equal(ckpt_map_find(m, "t", 1), 7);
	assert_int_equal(ckpt_map_find(m, "t", 2), -1);
	ckpt_map_free(m);
	/* an empty file's map finds nothing */
	write_file(*state, "0\n0\n");
	assert_int_equal(ckpt_map_load(*state, CKPT_RECOVERY_FILE, &m), 0);
	assert_int_equal(ckpt_map_find(m, "t", 0), -1);
	ckpt_map_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_writer_thread, dir_setup, dir_teardown),
		cmocka_unit_test_setup_teardown(test_bad_files, dir_setup, dir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
