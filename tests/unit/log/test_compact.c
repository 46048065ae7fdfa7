/*
 * test_compact.c - a compaction pass over a real partition directory
 * (log/compact.h): the swap into the log, the completion of a swap a crash
 * interrupted, the leftovers deleted at open, and a pass dropped because
 * the log's head moved meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/compact.h"
#include "log/partition.h"
#include "log/scan.h"
#include "proto/records.h"

#define KEYS 20
#define ROUNDS 10

struct fx {
	char root[64];
	char dir[128];
	struct part_cfg cfg;
	struct compact_cfg cc;
	struct clean_map *map;
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "compact");
	snprintf(fx->dir, sizeof(fx->dir), "%s/topic-0", fx->root);
	part_cfg_default(&fx->cfg);
	fx->cfg.retention_ms = -1;
	fx->cfg.segment_bytes = 1500; /* several segments per round of keys */
	fx->cfg.retention_delete = false;
	fx->cc = (struct compact_cfg){ .min_ratio = 0.01, .max_lag_ms = INT64_MAX, .max_records_bytes = 1 << 20 };
	assert_int_equal(clean_map_new(1 << 16, CLEAN_LOAD_FACTOR_DEFAULT, &fx->map), 0);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	clean_map_free(fx->map);
	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

/* ROUNDS rounds of KEYS keyed records (value "r<round>"), one record a batch, then one more to roll. */
static void fill(struct part *part)
{
	for (int r = 0; r <= ROUNDS; r++)
		for (int k = 0; k < (r == ROUNDS ? 1 : KEYS); k++) {
			char key[16], val[16];
			struct rec_kv kv;
			struct part_append_info info;
			struct wr w;

			snprintf(key, sizeof(key), "k%02d", r == ROUNDS ? 99 : k);
			snprintf(val, sizeof(val), "r%d", r);
			kv = (struct rec_kv){ key, (int32_t)strlen(key), val, (int32_t)strlen(val) };
			wr_init(&w);
			assert_int_equal(records_build(&w, 0, 1000 + r, &kv, 1), 0);
			assert_int_equal(part_append(part, w.buf, w.len, 1000 + r, &info), 0);
			wr_release(&w);
		}
	assert_int_equal(part_sync(part), 0);
}

struct seen {
	int records;
	char latest[KEYS][16];
};

static int seen_record(void *arg, const struct record *rec)
{
	struct seen *s = arg;
	int k = atoi((const char *)rec->key.p + 1);

	s->records++;
	if (k < KEYS)
		snprintf(s->latest[k], sizeof(s->latest[k]), "%.*s", (int)rec->value.len, (const char *)rec->value.p);
	return 0;
}

static void seen_batch(void *arg, const uint8_t *p, const struct batch_hdr *h)
{
	assert_true(records_batch_crc_ok(p, h));
	assert_int_equal(records_foreach(p, h, seen_record, arg), 0);
}

/* Every key's latest value is that of the last round; returns the records read. */
static int check_latest(struct part *part)
{
	struct seen s = { 0 };

	assert_int_equal(part_scan(part, seen_batch, &s), 0);
	for (int k = 0; k < KEYS; k++)
		assert_string_equal(s.latest[k], "r9");
	return s.records;
}

/* Plans and runs a pass over part; the job is the caller's. */
static struct compact_job *run_pass(struct fx *fx, struct part *part)
{
	struct cleanable_log l;
	struct cleanable_seg *segs;
	struct cleanable m;
	struct compact_job *job;
	int cancel = 0;

	assert_int_equal(compact_describe(part, &fx->cc, &l, &segs), 0);
	cleanable_measure(&l, 5000, &m);
	free(segs);
	assert_true(cleanable_due(&m, fx->cc.min_ratio));
	job = compact_plan(part, &fx->cc, &m, 5000);
	assert_non_null(job);
	compact_run(job, fx->map, &cancel, 0);
	assert_int_equal(job->err, 0);
	return job;
}

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name), k = strlen(suffix);

		n += len > k && !strcmp(de->d_name + len - k, suffix);
	}
	closedir(d);
	return n;
}

static void test_swap(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct compact_job *job;
	int64_t before_bytes;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	fill(part);
	assert_true(part_segment_count(part) > 3);
	before_bytes = part_size_bytes(part);
	assert_int_equal(check_latest(part), KEYS * ROUNDS + 1);
	job = run_pass(fx, part);
	assert_int_equal(count_files(fx->dir, ".log.swap"), job->nout);
	assert_int_equal(compact_swap(part, job), 0);
	assert_int_equal(compact_finish(job), 0);
	compact_free(job);
	assert_int_equal(count_files(fx->dir, ".swap"), 0);
	/* every key once below the active segment, plus the rolling record */
	assert_int_equal(check_latest(part), KEYS + 1);
	assert_true(part_size_bytes(part) * 5 < before_bytes);
	assert_int_equal(part_log_end_offset(part), KEYS * ROUNDS + 1);
	assert_int_equal(part_clean_offset(part), part_log_end_offset(part) - 1);
	assert_int_equal(part_close(part), 0);
	/* and so after a restart, from the files alone */
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	assert_int_equal(check_latest(part), KEYS + 1);
	part_abandon(part);
}

static void test_interrupted_swap_completed(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct compact_job *job;
	char path[256];
	FILE *f;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	fill(part);
	job = run_pass(fx, part);
	compact_free(job); /* "crash" after the *.swap files were synced, before the swap */
	part_abandon(part);
	snprintf(path, sizeof(path), "%s/00000000000000000007.log.cleaned", fx->dir);
	f = fopen(path, "w"); /* a pass that had not finished */
	assert_non_null(f);
	fclose(f);
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	assert_int_equal(count_files(fx->dir, ".swap"), 0);
	assert_int_equal(count_files(fx->dir, ".cleaned"), 0);
	assert_int_equal(check_latest(part), KEYS + 1);
	assert_int_equal(part_log_end_offset(part), KEYS * ROUNDS + 1);
	part_abandon(part);
}

static void test_stale_pass_dropped(void **state)
{
	struct fx *fx = *state;
	struct part *part;
	struct compact_job *job;

	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &part), 0);
	fill(part);
	job = run_pass(fx, part);
	assert_int_equal(part_delete_records(part, KEYS), 0); /* the head moved */
	assert_int_equal(compact_swap(part, job), -ESTALE);
	compact_free(job);
	assert_int_equal(count_files(fx->dir, ".swap"), 0);
	assert_int_equal(check_latest(part), KEYS * (ROUNDS - 1) + 1);
	part_abandon(part);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swap, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_interrupted_swap_completed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_stale_pass_dropped, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
