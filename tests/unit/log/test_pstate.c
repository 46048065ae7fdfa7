/*
 * test_pstate.c - producer state: the sequence check's verdicts, the 5-batch
 * window, sequence wrap, epochs, expiry, head truncation, the snapshot image
 * (round trip, CRC, Kafka's one-entry-per-producer form) and files (newest
 * valid <= LEO, pruning), and the partition's rebuild from snapshots and the
 * log after close, kill and roll.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/partition.h"
#include "log/pstate.h"
#include "proto/records.h"
#include "util/crc32c.h"

/* A header as the log would hold it after append. */
static struct batch_hdr hdr(int64_t pid, int16_t epoch, int32_t seq, int32_t n, int64_t base, int64_t ts)
{
	struct batch_hdr h = { 0 };

	h.producer_id = pid;
	h.producer_epoch = epoch;
	h.base_sequence = seq;
	h.last_offset_delta = n - 1;
	h.record_count = n;
	h.base_offset = base;
	h.max_timestamp = ts;
	h.magic = 2;
	return h;
}

static enum pstate_verdict check(struct pstate *ps, int64_t pid, int16_t epoch, int32_t seq, int32_t n,
				 struct pstate_batch *dup)
{
	struct batch_hdr h = hdr(pid, epoch, seq, n, 0, 0);

	return pstate_check(ps, &h, dup);
}

static void apply(struct pstate *ps, int64_t pid, int16_t epoch, int32_t seq, int32_t n, int64_t base, int64_t ts)
{
	struct batch_hdr h = hdr(pid, epoch, seq, n, base, ts);

	assert_int_equal(pstate_apply(ps, &h), 0);
}

static void test_verdicts(void **state)
{
	struct pstate ps;
	struct pstate_batch dup;

	(void)state;
	pstate_init(&ps);
	assert_int_equal(check(&ps, 7, 0, 0, 3, &dup), PSTATE_APPEND);
	assert_int_equal(check(&ps, 7, 0, 5, 3, &dup), PSTATE_UNKNOWN_PRODUCER);
	apply(&ps, 7, 0, 0, 3, 100, 1);
	assert_int_equal(check(&ps, 7, 0, 3, 2, &dup), PSTATE_APPEND);
	assert_int_equal(check(&ps, 7, 0, 4, 2, &dup), PSTATE_OUT_OF_ORDER);
	assert_int_equal(check(&ps, 7, 0, 0, 3, &dup), PSTATE_DUPLICATE);
	assert_int_equal(dup.first_offset, 100);
	assert_int_equal(dup.last_offset, 102);
	assert_int_equal(check(&ps, 7, 0, 0, 2, &dup), PSTATE_OUT_OF_ORDER); /* overlapping, not equal */
	/* epochs */
	assert_int_equal(check(&ps, 7, 1, 3, 1, &dup), PSTATE_OUT_OF_ORDER);
	assert_int_equal(check(&ps, 7, 1, 0, 1, &dup), PSTATE_APPEND);
	apply(&ps, 7, 1, 0, 1, 103, 2);
	assert_int_equal(check(&ps, 7, 0, 3, 1, &dup), PSTATE_STALE_EPOCH);
	assert_int_equal(check(&ps, 7, 0, 0, 3, &dup), PSTATE_STALE_EPOCH); /* old epoch's batch is no duplicate */
	assert_int_equal(check(&ps, 7, 1, 0, 1, &dup), PSTATE_DUPLICATE);
	assert_int_equal(dup.first_offset, 103);
	/* other producers are independent */
	assert_int_equal(check(&ps, 8, 0, 0, 1, &dup), PSTATE_APPEND);
	assert_int_equal(ps.count, 1);
	pstate_release(&ps);
}

static void test_window_and_wrap(void **state)
{
	struct pstate ps;
	struct pstate_batch dup;
	const struct pstate_entry *e;

	(void)state;
	pstate_init(&ps);
	for (int i = 0; i < 7; i++)
		apply(&ps, 1, 0, i * 2, 2, i * 2, i);
	e = pstate_find(&ps, 1);
	assert_non_null(e);
	assert_int_equal(e->nbatches, PSTATE_BATCHES_MAX);
	assert_int_equal(pstate_entry_batch(e, 0)->first_seq, 4);
	for (int i = 2; i < 7; i++) {
		assert_int_equal(check(&ps, 1, 0, i * 2, 2, &dup), PSTATE_DUPLICATE);
		assert_int_equal(dup.first_offset, i * 2);
	}
	assert_int_equal(check(&ps, 1, 0, 2, 2, &dup), PSTATE_OUT_OF_ORDER); /* fell out of the window */
	assert_int_equal(check(&ps, 1, 0, 14, 1, &dup), PSTATE_APPEND);
	/* sequence numbers wrap at INT32_MAX */
	assert_int_equal(pstate_last_seq(INT32_MAX - 1, 3), 1);
	apply(&ps, 2, 0, 0, 1, 50, 0);
	apply(&ps, 2, 0, 1, INT32_MAX - 1, 51, 0); /* last seq INT32_MAX - 1 */
	apply(&ps, 2, 0, INT32_MAX - 1 + 1, 1, 60, 0);
	assert_int_equal(check(&ps, 2, 0, 0, 5, &dup), PSTATE_APPEND);
	apply(&ps, 2, 0, 0, 5, 61, 0);
	assert_int_equal(check(&ps, 2, 0, INT32_MAX, 1, &dup), PSTATE_DUPLICATE);
	assert_int_equal(check(&ps, 2, 0, 5, 1, &dup), PSTATE_APPEND);
	pstate_release(&ps);
}

static void test_many_producers_expire_truncate(void **state)
{
	struct pstate ps;
	struct pstate_batch dup;

	(void)state;
	pstate_init(&ps);
	for (int64_t pid = 0; pid < 1000; pid++)
		apply(&ps, pid * 7919, 0, 0, 1, pid, pid < 500 ? 1000 : 5000);
	assert_int_equal(ps.count, 1000);
	for (int64_t pid = 0; pid < 1000; pid++)
		assert_non_null(pstate_find(&ps, pid * 7919));
	/* expiry: last batch max timestamp older than now - expiration */
	assert_int_equal(pstate_expire(&ps, 6000, 2000), 500);
	assert_null(pstate_find(&ps, 0));
	assert_non_null(pstate_find(&ps, 999 * 7919));
	assert_int_equal(check(&ps, 7919, 0, 1, 1, &dup), PSTATE_UNKNOWN_PRODUCER);
	/* an open transaction keeps its producer */
	struct batch_hdr h = hdr(42, 0, 0, 1, 2000, 1);

	h.attributes = RECORDS_ATTR_TRANSACTIONAL;
	assert_int_equal(pstate_apply(&ps, &h), 0);
	assert_int_equal(pstate_find(&ps, 42)->txn_first_offset, 2000);
	assert_int_equal(pstate_expire(&ps, 100000, 2000), 500);
	assert_int_equal(ps.count, 1);
	/* a control batch ends it; head truncation drops producers below the log start */
	h = hdr(42, 0, -1, 1, 2001, 1);
	h.attributes = RECORDS_ATTR_TRANSACTIONAL | RECORDS_ATTR_CONTROL;
	assert_int_equal(pstate_apply(&ps, &h), 0);
	assert_int_equal(pstate_find(&ps, 42)->txn_first_offset, -1);
	assert_int_equal(pstate_find(&ps, 42)->nbatches, 1);
	apply(&ps, 43, 0, 0, 1, 3000, 1);
	assert_int_equal(pstate_truncate_head(&ps, 2001), 1);
	assert_null(pstate_find(&ps, 42));
	assert_non_null(pstate_find(&ps, 43));
	pstate_release(&ps);
}

static void test_image(void **state)
{
	struct pstate ps, back;
	struct pstate_batch dup;
	struct wr w;

	(void)state;
	pstate_init(&ps);
	pstate_init(&back);
	for (int i = 0; i < 8; i++)
		apply(&ps, 5, 3, i * 10, 10, 1000 + i * 10, 77 + i);
	apply(&ps, 6, 0, 0, 1, 2000, 9);
	wr_init(&w);
	assert_int_equal(pstate_encode(&ps, &w), 0);
	assert_int_equal(w.len, 10 + 6 * 46);
	assert_int_equal(w.buf[0] << 8 | w.buf[1], 1); /* version */
	assert_int_equal(pstate_decode(&back, w.buf, w.len), 0);
	assert_int_equal(back.count, 2);
	for (int i = 3; i < 8; i++) {
		assert_int_equal(check(&back, 5, 3, i * 10, 10, &dup), PSTATE_DUPLICATE);
		assert_int_equal(dup.first_offset, 1000 + i * 10);
		assert_int_equal(dup.max_ts, 77 + i);
	}
	assert_int_equal(check(&back, 5, 3, 80, 1, &dup), PSTATE_APPEND);
	assert_int_equal(check(&back, 6, 0, 0, 1, &dup), PSTATE_DUPLICATE);
	/* any flipped byte fails the CRC or the layout */
	for (size_t i = 0; i < w.len; i++) {
		w.buf[i] ^= 0x40;
		assert_int_not_equal(pstate_decode(&back, w.buf, w.len), 0);
		assert_int_equal(back.count, 0);
		w.buf[i] ^= 0x40;
	}
	assert_int_equal(pstate_decode(&back, w.buf, w.len - 1), -EBADMSG);
	wr_release(&w);
	pstate_release(&ps);
	pstate_release(&back);
}

/* ---- files and the partition ---- */

struct fx {
	char dir[64];
	int dir_fd;
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->dir, sizeof(fx->dir), "pstate");
	fx->dir_fd = open(fx->dir, O_RDONLY | O_DIRECTORY);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	close(fx->dir_fd);
	tmpdir_remove(fx->dir);
	free(fx);
	return 0;
}

static bool file_exists(const struct fx *fx, const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	return access(path, F_OK) == 0;
}

static void test_snapshot_files(void **state)
{
	struct fx *fx = *state;
	struct pstate ps, back;
	struct pstate_batch dup;
	int64_t off;
	char path[160];
	int fd;

	pstate_init(&ps);
	pstate_init(&back);
	apply(&ps, 1, 0, 0, 1, 0, 1);
	assert_int_equal(pstate_snapshot_write(&ps, fx->dir_fd, fx->dir, 1, true), 0);
	apply(&ps, 1, 0, 1, 1, 1, 1);
	assert_int_equal(pstate_snapshot_write(&ps, fx->dir_fd, fx->dir, 2, true), 0);
	apply(&ps, 1, 0, 2, 1, 2, 1);
	assert_int_equal(pstate_snapshot_write(&ps, fx->dir_fd, fx->dir, 3, true), 0);
	assert_false(file_exists(fx, "00000000000000000001.snapshot")); /* only 2 kept */
	assert_true(file_exists(fx, "00000000000000000002.snapshot"));
	assert_true(file_exists(fx, "00000000000000000003.snapshot"));
	/* the log was truncated to 2: the snapshot at 3 goes, the one at 2 loads */
	assert_int_equal(pstate_snapshot_load(&back, fx->dir_fd, fx->dir, 2, &off), 0);
	assert_int_equal(off, 2);
	assert_false(file_exists(fx, "00000000000000000003.snapshot"));
	assert_int_equal(check(&back, 1, 0, 1, 1, &dup), PSTATE_DUPLICATE);
	assert_int_equal(check(&back, 1, 0, 2, 1, &dup), PSTATE_APPEND);
	/* a torn newest snapshot is skipped for the older one */
	assert_int_equal(pstate_snapshot_write(&ps, fx->dir_fd, fx->dir, 3, true), 0);
	snprintf(path, sizeof(path), "%s/00000000000000000003.snapshot", fx->dir);
	fd = open(path, O_WRONLY);
	assert_int_equal(ftruncate(fd, 20), 0);
	close(fd);
	assert_int_equal(pstate_snapshot_load(&back, fx->dir_fd, fx->dir, 10, &off), 0);
	assert_int_equal(off, 2);
	/* nothing valid: empty state */
	pstate_snapshot_delete_below(&back, fx->dir_fd, fx->dir, 3);
	assert_int_equal(pstate_snapshot_load(&back, fx->dir_fd, fx->dir, 10, &off), 0);
	assert_int_equal(off, -1);
	assert_int_equal(back.count, 0);
	pstate_release(&ps);
	pstate_release(&back);
}

/* One idempotent batch of n records. */
static void mk_idem_batch(struct wr *w, int64_t pid, int16_t epoch, int32_t seq, int n)
{
	struct rec_kv kv[16];
	size_t at = w->len;
	uint8_t *p;

	for (int i = 0; i < n; i++)
		kv[i] = (struct rec_kv){ NULL, -1, "value", 5 };
	assert_int_equal(records_build(w, 0, 1700000000000LL, kv, n), 0);
	p = w->buf + at;
	for (int i = 0; i < 8; i++)
		p[43 + i] = (uint8_t)(pid >> (56 - 8 * i));
	p[51] = (uint8_t)(epoch >> 8);
	p[52] = (uint8_t)epoch;
	for (int i = 0; i < 4; i++)
		p[53 + i] = (uint8_t)(seq >> (24 - 8 * i));
	uint32_t crc = crc32c(p + RECORDS_ATTR_OFF, w->len - at - RECORDS_ATTR_OFF);

	for (int i = 0; i < 4; i++)
		p[RECORDS_CRC_OFF + i] = (uint8_t)(crc >> (24 - 8 * i));
}

static void append_idem(struct part *part, int64_t pid, int32_t seq, int n, int64_t want_base)
{
	struct part_append_info info;
	struct wr w;

	wr_init(&w);
	mk_idem_batch(&w, pid, 0, seq, n);
	assert_int_equal(part_append(part, w.buf, w.len, 1700000000000LL, &info), 0);
	assert_int_equal(info.base_offset, want_base);
	wr_release(&w);
}

static void expect_dup(struct part *part, int64_t pid, int32_t seq, int n, int64_t want_base)
{
	struct batch_hdr h = hdr(pid, 0, seq, n, 0, 0);
	struct pstate_batch dup;

	assert_int_equal(pstate_check(part_pstate(part), &h, &dup), PSTATE_DUPLICATE);
	assert_int_equal(dup.first_offset, want_base);
}

static void test_partition_rebuild(void **state)
{
	struct fx *fx = *state;
	struct part_cfg cfg;
	struct part *part;
	char pdir[128], path[512];

	part_cfg_default(&cfg);
	cfg.retention_ms = -1;
	cfg.producer_id_expiration_ms = INT64_MAX / 4; /* batches are from 2023 */
	cfg.segment_bytes = 300;
	snprintf(pdir, sizeof(pdir), "%s/t-0", fx->dir);
	assert_int_equal(part_open(pdir, &cfg, -1, 0, &part), 0);
	for (int i = 0; i < 12; i++)
		append_idem(part, 9, i * 3, 3, i * 3);
	assert_true(part_segment_count(part) > 3);
	expect_dup(part, 9, 33, 3, 33);
	part_close(part); /* snapshot at 36 */
	snprintf(path, sizeof(path), "%s/00000000000000000036.snapshot", pdir);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(part_open(pdir, &cfg, INT64_MAX, 0, &part), 0);
	for (int i = 7; i < 12; i++)
		expect_dup(part, 9, i * 3, 3, i * 3);
	append_idem(part, 9, 36, 3, 36);
	/* crash: a copy of the directory as it is now, opened without a close */
	part_sync(part);
	snprintf(path, sizeof(path), "cp -r '%s' '%s/crash'", pdir, fx->dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/crash", fx->dir);
	{
		struct part *crashed;

		assert_int_equal(part_open(path, &cfg, -1, 0, &crashed), 0);
		for (int i = 8; i < 13; i++)
			expect_dup(crashed, 9, i * 3, 3, i * 3);
		part_close(crashed);
	}
	part_close(part);
	/* no snapshot at all: rebuilt from the log start */
	snprintf(path, sizeof(path), "rm -f '%s'/*.snapshot", pdir);
	assert_int_equal(system(path), 0);
	assert_int_equal(part_open(pdir, &cfg, INT64_MAX, 0, &part), 0);
	for (int i = 8; i < 13; i++)
		expect_dup(part, 9, i * 3, 3, i * 3);
	/* DeleteRecords past the producer's last batch forgets it */
	assert_int_equal(part_delete_records(part, part_log_end_offset(part)), 0);
	assert_null(pstate_find(part_pstate(part), 9));
	part_close(part);
	assert_int_equal(part_open(pdir, &cfg, INT64_MAX, 0, &part), 0);
	assert_null(pstate_find(part_pstate(part), 9));
	part_close(part);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_window_and_wrap),
		cmocka_unit_test(test_many_producers_expire_truncate),
		cmocka_unit_test(test_image),
		cmocka_unit_test_setup_teardown(test_snapshot_files, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_partition_rebuild, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
