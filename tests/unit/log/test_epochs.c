/*
 * test_epochs.c - the leader epoch cache's OffsetForLeaderEpoch lookup
 * (Kafka's LeaderEpochFileCache.endOffsetFor, edge cases included) and
 * the follower's truncation rule (AbstractFetcherThread's
 * getOffsetTruncationState), both pure functions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/epochs.h"

/* The cache {(2, 10), (4, 30), (7, 50)}, LEO 80. */
static struct epoch_ent cache3[] = { { 2, 10 }, { 4, 30 }, { 7, 50 } };
static const struct epochs ep3 = { cache3, 3, 3 };

static void expect_end(const struct epochs *ep, int32_t asked, int32_t epoch, int64_t end)
{
	int32_t e = -9;
	int64_t o = -9;

	assert_true(epochs_end_offset(ep, asked, 80, &e, &o));
	assert_int_equal(e, epoch);
	assert_int_equal(o, end);
}

static void expect_undefined(const struct epochs *ep, int32_t asked)
{
	int32_t e = -9;
	int64_t o = -9;

	assert_false(epochs_end_offset(ep, asked, 80, &e, &o));
	assert_int_equal(e, -9); /* untouched */
}

static void test_end_offset(void **state)
{
	(void)state;
	expect_end(&ep3, 7, 7, 80); /* the latest: the LEO */
	expect_end(&ep3, 4, 4, 50); /* a known epoch: the next one's start */
	expect_end(&ep3, 2, 2, 30);
	expect_end(&ep3, 5, 4, 50); /* between: the largest below, ending where 7 starts */
	expect_end(&ep3, 6, 4, 50);
	expect_end(&ep3, 3, 2, 30);
	/* below the first known epoch: the asked epoch, ending where the first known starts */
	expect_end(&ep3, 1, 1, 10);
	expect_end(&ep3, 0, 0, 10);
	expect_undefined(&ep3, 8); /* newer than any known */
	expect_undefined(&ep3, -1);
}

static void test_end_offset_small(void **state)
{
	struct epoch_ent one[] = { { 0, 0 } };
	struct epochs ep1 = { one, 1, 1 }, none = { NULL, 0, 0 };

	(void)state;
	expect_end(&ep1, 0, 0, 80);
	expect_undefined(&ep1, 1);
	expect_undefined(&none, 0);
	assert_int_equal(epochs_latest(&ep1), 0);
	assert_int_equal(epochs_latest(&none), -1);
	assert_int_equal(epochs_latest(&ep3), 7);
}

/* The follower's decision given the leader's reply and its own lookup of the reply's epoch. */
static int64_t cut(int32_t l_epoch, int64_t l_end, const struct epochs *mine, int64_t leo, int64_t fetch_offset,
		   bool *done)
{
	struct epoch_reply r = { l_epoch, l_end };
	struct epoch_local loc = { .leo = leo, .fetch_offset = fetch_offset };
	int64_t off = -9;

	if (l_epoch >= 0)
		loc.known = epochs_end_offset(mine, l_epoch, leo, &loc.epoch, &loc.end_offset);
	*done = epochs_truncation_offset(&r, &loc, &off);
	return off;
}

static void test_truncation_offset(void **state)
{
	struct epoch_ent f[] = { { 2, 10 }, { 4, 30 }, { 6, 45 } }; /* follower: saw 6, never 5 */
	struct epochs mine = { f, 3, 3 }, none = { NULL, 0, 0 };
	bool done;

	(void)state;
	/* same epoch: the smaller end, bounded by the follower's LEO */
	assert_int_equal(cut(4, 40, &mine, 60, 20, &done), 40);
	assert_true(done);
	assert_int_equal(cut(4, 50, &mine, 60, 20, &done), 45); /* follower's epoch 4 ended at 45 */
	assert_true(done);
	assert_int_equal(cut(6, 70, &mine, 60, 20, &done), 60); /* the LEO bounds it: nothing to cut */
	assert_true(done);
	/* the leader answers 5, which the follower never saw: its epoch 4 ends at 45; ask again */
	assert_int_equal(cut(5, 52, &mine, 60, 20, &done), 45);
	assert_false(done);
	/* the leader knows no epoch <= the one asked: keep the fetch offset (HW) */
	assert_int_equal(cut(-1, -1, &mine, 60, 20, &done), 20);
	assert_true(done);
	/* a reply without an epoch (v0): the leader's end offset */
	assert_int_equal(cut(-1, 33, &mine, 60, 20, &done), 33);
	assert_true(done);
	/* a follower without epochs: the leader's end offset */
	assert_int_equal(cut(3, 12, &none, 60, 20, &done), 12);
	assert_true(done);
	/* the leader's epoch is below the follower's first: (1, 10) locally, so min(leader, 10) */
	assert_int_equal(cut(1, 15, &mine, 60, 20, &done), 10);
	assert_true(done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end_offset),
		cmocka_unit_test(test_end_offset_small),
		cmocka_unit_test(test_truncation_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
