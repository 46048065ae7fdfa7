/*
 * test_truncate.c - part_truncate_to() on a real partition directory: a
 * log of several segments written under three leader epochs by plain,
 * idempotent and transactional producers (two aborted transactions) is
 * cut back twice; after each cut, and after reopening it (both trusting
 * the files and recovering them), the offsets, reads, indexes, leader
 * epoch cache and its file, producer state (the next sequence the
 * surviving batches imply), snapshots, aborted-transaction index and last
 * stable offset must be what the surviving batches say, and appends must
 * continue from the new end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "log/marker.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "log/txnidx.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/crc32c.h"

#define IDEM_PID 100
#define SEQ_OFF 53   /* baseSequence in a batch v2 */
#define PID_OFF 43   /* producerId */
#define EPOCH_OFF 51 /* producerEpoch */

struct fx {
	char root[64];
	char dir[128];
	struct part_cfg cfg;
	struct part *part;
};

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "trunc");
	snprintf(fx->dir, sizeof(fx->dir), "%s/topic-0", fx->root);
	part_cfg_default(&fx->cfg);
	fx->cfg.retention_ms = -1;
	fx->cfg.segment_bytes = 300; /* a roll every few batches: several segments and snapshots */
	fx->cfg.index_interval_bytes = 1;
	fx->cfg.hw_on_sync = false;
	assert_int_equal(part_open(fx->dir, &fx->cfg, -1, 0, &fx->part), 0);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	if (fx->part)
		part_close(fx->part);
	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

static int64_t append_blob(struct part *part, struct wr *w)
{
	struct part_append_info info;

	wr_patch_u32(w, RECORDS_CRC_OFF, crc32c(w->buf + RECORDS_ATTR_OFF, w->len - RECORDS_ATTR_OFF));
	assert_int_equal(part_append(part, w->buf, w->len, clock_wall_ms(), &info), 0);
	wr_release(w);
	return info.base_offset;
}

/* n records; seq >= 0: of the idempotent producer IDEM_PID (epoch 0) with that base sequence. */
static int64_t append_batch(struct part *part, int n, int32_t seq)
{
	struct rec_kv kv[4] = { { "k", 1, "v", 1 }, { "k", 1, "v", 1 }, { "k", 1, "v", 1 }, { "k", 1, "v", 1 } };
	struct wr w;

	wr_init(&w);
	assert_int_equal(records_build(&w, 0, clock_wall_ms(), kv, n), 0);
	if (seq >= 0) {
		wr_patch_i32(&w, PID_OFF, 0);
		wr_patch_i32(&w, PID_OFF + 4, IDEM_PID);
		w.buf[EPOCH_OFF] = w.buf[EPOCH_OFF + 1] = 0; /* producerEpoch 0 (records_build writes -1) */
		wr_patch_i32(&w, SEQ_OFF, seq);
	}
	return append_blob(part, &w);
}

/* A one-record transaction of pid, then its ABORT marker; returns the marker's offset. */
static int64_t append_aborted(struct part *part, int64_t pid)
{
	struct rec_kv kv = { "t", 1, "x", 1 };
	struct marker m = { pid, 0, 0, false };
	struct part_append_info info;
	struct wr w;

	wr_init(&w);
	assert_int_equal(records_build_txn(&w, clock_wall_ms(), pid, 0, &kv, 1), 0);
	wr_patch_i32(&w, SEQ_OFF, 0);
	append_blob(part, &w);
	assert_int_equal(marker_append(part, &m, clock_wall_ms(), &info), 0);
	return info.base_offset;
}

/*
 * offsets  epoch  what
 *  0- 5     0     three plain batches of 2
 *  6- 9     0     IDEM_PID seq 0-1, 2-3
 * 10-11     2     pid 200: a record, ABORT
 * 12-13     2     IDEM_PID seq 4-5
 * 14-15     5     pid 300: a record, ABORT
 * 16-17     5     IDEM_PID seq 6-7
 * 18-19     5     a plain batch of 2
 */
static void build_log(struct part *part)
{
	for (int i = 0; i < 3; i++)
		assert_int_equal(append_batch(part, 2, -1), 2 * i);
	assert_int_equal(append_batch(part, 2, 0), 6);
	assert_int_equal(append_batch(part, 2, 2), 8);
	assert_int_equal(part_set_leader_epoch(part, 2), 0);
	assert_int_equal(append_aborted(part, 200), 11);
	assert_int_equal(append_batch(part, 2, 4), 12);
	assert_int_equal(part_set_leader_epoch(part, 5), 0);
	assert_int_equal(append_aborted(part, 300), 15);
	assert_int_equal(append_batch(part, 2, 6), 16);
	assert_int_equal(append_batch(part, 2, -1), 18);
	assert_int_equal(part_sync(part), 0);
	assert_int_equal(part_log_end_offset(part), 20);
	assert_true(part_segment_count(part) >= 4);
}

/* The last sequence IDEM_PID's newest cached batch ends at, -1 if the producer is unknown. */
static int32_t idem_last_seq(struct part *part)
{
	const struct pstate_entry *e = pstate_find(part_pstate(part), IDEM_PID);

	return e && e->nbatches ? pstate_entry_batch(e, e->nbatches - 1)->last_seq : -1;
}

/* The verdict on IDEM_PID's next batch of 2 at seq. */
static enum pstate_verdict idem_check(struct part *part, int32_t seq)
{
	struct rec_kv kv[2] = { { "k", 1, "v", 1 }, { "k", 1, "v", 1 } };
	struct pstate_batch dup;
	struct batch_hdr h;
	struct wr w;
	enum pstate_verdict v;

	wr_init(&w);
	assert_int_equal(records_build(&w, 0, clock_wall_ms(), kv, 2), 0);
	wr_patch_i32(&w, PID_OFF, 0);
	wr_patch_i32(&w, PID_OFF + 4, IDEM_PID);
	w.buf[EPOCH_OFF] = w.buf[EPOCH_OFF + 1] = 0;
	wr_patch_i32(&w, SEQ_OFF, seq);
	assert_int_equal(records_hdr_parse(w.buf, w.len, &h), 0);
	v = pstate_check(part_pstate(part), &h, &dup);
	wr_release(&w);
	return v;
}

static void expect_epoch(struct part *part, int32_t asked, bool found, int32_t epoch, int64_t end)
{
	int32_t e = -1;
	int64_t o = -1;

	assert_int_equal(part_epoch_end_offset(part, asked, &e, &o), found);
	if (found) {
		assert_int_equal(e, epoch);
		assert_int_equal(o, end);
	}
}

static void expect_file(const char *dir, const char *name, const char *want)
{
	char path[256], buf[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, want);
}

/* Highest <offset>.snapshot in dir, -1 if none. */
static int64_t newest_snapshot(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t best = -1;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strlen(de->d_name) == 29 && !strcmp(de->d_name + 20, ".snapshot") && atoll(de->d_name) > best)
			best = atoll(de->d_name);
	closedir(d);
	return best;
}

/* Every offset below leo reads back (base of the batch holding it), leo reads nothing, past it -ERANGE. */
static void expect_reads(struct part *part, int64_t leo)
{
	struct fslice s;

	for (int64_t o = 0; o < leo; o++) {
		assert_int_equal(part_read(part, o, leo, 1 << 20, true, &s), 0);
		assert_true(s.len > 0);
		fdref_put(s.ref);
	}
	assert_int_equal(part_read(part, leo, leo, 1 << 20, true, &s), 0);
	assert_int_equal(s.len, 0);
	assert_int_equal(part_read(part, leo + 1, leo, 1 << 20, true, &s), -ERANGE);
}

/* The state after cutting at 15 (inside nothing: the ABORT of pid 300 goes, its transaction reopens). */
static void check_cut15(struct part *part, const char *dir)
{
	assert_int_equal(part_log_end_offset(part), 15);
	assert_int_equal(part_high_watermark(part), 15);
	expect_reads(part, 15);
	expect_epoch(part, 5, true, 5, 15);
	expect_epoch(part, 2, true, 2, 14);
	assert_int_equal(txnidx_of(part)->n, 1);
	assert_int_equal(txnidx_of(part)->v[0].producer_id, 200);
	assert_int_equal(txnidx_last_stable_offset(part), 14); /* pid 300's transaction is open again */
	assert_int_equal(idem_last_seq(part), 5);
	assert_true(newest_snapshot(dir) <= 15);
}

/* The state after cutting at 13 (inside IDEM_PID's batch 12-13: the whole batch goes). */
static void check_cut13(struct part *part, const char *dir)
{
	assert_int_equal(part_log_end_offset(part), 12);
	expect_reads(part, 12);
	expect_epoch(part, 2, true, 2, 12);
	expect_epoch(part, 5, false, 0, 0);
	expect_epoch(part, 1, true, 0, 10);
	expect_file(dir, "leader-epoch-checkpoint", "0\n2\n0 0\n2 10\n");
	assert_int_equal(txnidx_of(part)->n, 1);
	assert_int_equal(txnidx_last_stable_offset(part), 12);
	assert_null(pstate_find(part_pstate(part), 300));
	assert_int_equal(idem_last_seq(part), 3);
	assert_int_equal(idem_check(part, 4), PSTATE_APPEND);
	assert_int_equal(idem_check(part, 6), PSTATE_OUT_OF_ORDER);
	assert_int_equal(idem_check(part, 2), PSTATE_DUPLICATE);
	assert_true(newest_snapshot(dir) <= 12);
}

/*
 * part_truncate_to, between two files made in the test's root
 * ("trunc-begin-<offset>", "trunc-end-<offset>"): a trace of the file
 * system calls (tests/lib/syncshim.c, test 5172) finds each truncation's
 * calls between them.
 */
static int truncate_marked(struct fx *fx, int64_t offset)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/trunc-begin-%lld", fx->root, (long long)offset);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	rc = part_truncate_to(fx->part, offset);
	snprintf(path, sizeof(path), "%s/trunc-end-%lld", fx->root, (long long)offset);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	return rc;
}

static void reopen(struct fx *fx, int64_t recovery_point)
{
	assert_int_equal(part_close(fx->part), 0);
	fx->part = NULL;
	assert_int_equal(part_open(fx->dir, &fx->cfg, recovery_point, -1, &fx->part), 0);
}

static void test_truncate_epochs_txns_producers(void **state)
{
	struct fx *fx = *state;
	int segs;

	build_log(fx->part);
	segs = part_segment_count(fx->part);
	assert_int_equal(part_truncate_to(fx->part, 25), 0); /* past the LEO: nothing */
	assert_int_equal(part_log_end_offset(fx->part), 20);
	assert_int_equal(truncate_marked(fx, 15), 0);
	check_cut15(fx->part, fx->dir);
	assert_true(part_segment_count(fx->part) <= segs);
	reopen(fx, -1); /* everything recovered from the files */
	check_cut15(fx->part, fx->dir);
	assert_int_equal(truncate_marked(fx, 13), 0);
	check_cut13(fx->part, fx->dir);
	reopen(fx, INT64_MAX); /* trusted as closed cleanly */
	check_cut13(fx->part, fx->dir);
	reopen(fx, 0);
	check_cut13(fx->part, fx->dir);
	/* appends continue from the new end, in the producer's sequence */
	assert_int_equal(append_batch(fx->part, 2, 4), 12);
	assert_int_equal(append_batch(fx->part, 2, -1), 14);
	assert_int_equal(idem_last_seq(fx->part), 5);
	expect_epoch(fx->part, 2, true, 2, 16);
	expect_reads(fx->part, 16);
	reopen(fx, -1);
	assert_int_equal(part_log_end_offset(fx->part), 16);
	assert_int_equal(idem_last_seq(fx->part), 5);
	expect_reads(fx->part, 16);
}

static void test_truncate_to_start(void **state)
{
	struct fx *fx = *state;

	build_log(fx->part);
	assert_int_equal(truncate_marked(fx, 5), 0); /* inside the batch 4-5 */
	assert_int_equal(part_log_end_offset(fx->part), 4);
	assert_int_equal(part_segment_count(fx->part), 1);
	expect_reads(fx->part, 4);
	expect_epoch(fx->part, 5, false, 0, 0);
	expect_epoch(fx->part, 0, true, 0, 4);
	expect_file(fx->dir, "leader-epoch-checkpoint", "0\n1\n0 0\n");
	assert_int_equal(txnidx_of(fx->part)->n, 0);
	assert_null(pstate_find(part_pstate(fx->part), IDEM_PID));
	assert_int_equal(idem_check(fx->part, 0), PSTATE_APPEND);
	assert_int_equal(part_truncate_to(fx->part, 0), 0);
	assert_int_equal(part_log_end_offset(fx->part), 0);
	expect_reads(fx->part, 0);
	reopen(fx, -1);
	assert_int_equal(part_log_end_offset(fx->part), 0);
	assert_int_equal(append_batch(fx->part, 2, 0), 0);
	assert_int_equal(part_delete_records(fx->part, 1), 0);
	assert_int_equal(part_truncate_to(fx->part, 0), -ERANGE); /* below the log start */
	assert_int_equal(part_log_end_offset(fx->part), 2);
}

/* The follower's truncation point from this log's epochs: same epoch, and an epoch it never saw. */
static void test_truncation_offset(void **state)
{
	struct fx *fx = *state;
	int64_t off;

	build_log(fx->part);
	assert_int_equal(part_latest_epoch(fx->part), 5);
	assert_true(part_truncation_offset(fx->part, 5, 17, &off));
	assert_int_equal(off, 17);
	assert_false(part_truncation_offset(fx->part, 4, 30, &off)); /* never saw 4: its epoch 2 ends at 14 */
	assert_int_equal(off, 14);
	assert_true(part_truncation_offset(fx->part, 2, 12, &off));
	assert_int_equal(off, 12);
	assert_true(part_truncation_offset(fx->part, -1, -1, &off)); /* UNDEFINED: keep up to the HW */
	assert_int_equal(off, part_high_watermark(fx->part));
}

/* An epoch this broker led without appending starts at the log end: truncating there drops it. */
static void test_truncate_empty_epoch(void **state)
{
	struct fx *fx = *state;
	int64_t off;

	build_log(fx->part);
	assert_int_equal(part_set_leader_epoch(fx->part, 7), 0);
	assert_int_equal(part_latest_epoch(fx->part), 7);
	/* the leader knows epoch 5 up to past our end: cut at the end of our epoch 5, ask again */
	assert_false(part_truncation_offset(fx->part, 6, 40, &off));
	assert_int_equal(off, part_log_end_offset(fx->part));
	assert_int_equal(part_truncate_to(fx->part, off), 0);
	assert_int_equal(part_latest_epoch(fx->part), 5);
	assert_int_equal(part_log_end_offset(fx->part), off);
	reopen(fx, -1);
	assert_int_equal(part_latest_epoch(fx->part), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_truncate_epochs_txns_producers, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_truncate_to_start, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_truncation_offset, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_truncate_empty_epoch, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
