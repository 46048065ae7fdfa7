/*
 * test_cleanable.c - the cleanable range, dirty ratio and choice of log
 * of a cleaning pass: checkpoint trust, the active segment, open
 * transactions, min/max.compaction.lag.ms and the pick among logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/cleanable.h"

#define NOW 1000000

/* Four sealed segments of 1000 bytes at offsets 0, 100, 200, 300 and an active one at 400. */
static const struct cleanable_seg segs[] = {
	{ 0, 1000, NOW - 5000, NOW - 4000 },   { 100, 1000, NOW - 4000, NOW - 3000 },
	{ 200, 1000, NOW - 3000, NOW - 2000 }, { 300, 1000, NOW - 2000, NOW - 1000 },
	{ 400, 500, NOW - 1000, NOW },
};

static struct cleanable_log log_of(int64_t checkpoint)
{
	return (struct cleanable_log){ .segs = segs,
				       .nsegs = 5,
				       .log_start_offset = 0,
				       .log_end_offset = 450,
				       .first_unstable_offset = INT64_MAX,
				       .checkpoint = checkpoint,
				       .min_lag_ms = 0,
				       .max_lag_ms = INT64_MAX,
				       .min_ratio = 0.5 };
}

static void test_never_cleaned(void **state)
{
	struct cleanable_log l = log_of(-1);
	struct cleanable c;

	(void)state;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_dirty, 0);
	assert_int_equal(c.first_uncleanable, 400); /* the active segment is never cleaned */
	assert_int_equal(c.clean_bytes, 0);
	assert_int_equal(c.cleanable_bytes, 4000);
	assert_true(c.ratio == 1.0);
	assert_false(c.must_clean);
	assert_true(cleanable_due(&c, 0.5));
}

static void test_checkpoint(void **state)
{
	struct cleanable_log l = log_of(300);
	struct cleanable c;

	(void)state;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_dirty, 300);
	assert_int_equal(c.clean_bytes, 3000);
	assert_int_equal(c.cleanable_bytes, 1000);
	assert_true(c.ratio == 0.25);
	assert_false(cleanable_due(&c, 0.5));
	assert_true(cleanable_due(&c, 0.2));
	/* a checkpoint mid-segment counts that segment as dirty */
	l.checkpoint = 150;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.clean_bytes, 1000);
	assert_int_equal(c.cleanable_bytes, 3000);
	/* everything up to the active segment is clean: nothing to do */
	l.checkpoint = 400;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.cleanable_bytes, 0);
	assert_false(cleanable_due(&c, 0));
	/* a checkpoint outside the log (recreated or truncated) is not trusted */
	l.checkpoint = 9000;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_dirty, 0);
	l.log_start_offset = 200;
	l.checkpoint = 100;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_dirty, 200);
}

static void test_open_transaction(void **state)
{
	struct cleanable_log l = log_of(-1);
	struct cleanable c;

	(void)state;
	l.first_unstable_offset = 250;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_uncleanable, 250);
	assert_int_equal(c.cleanable_bytes, 3000); /* segments 0, 100, 200 */
	l.checkpoint = 300;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_uncleanable, 300);
	assert_int_equal(c.cleanable_bytes, 0);
	assert_false(cleanable_due(&c, 0));
}

static void test_min_lag(void **state)
{
	struct cleanable_log l = log_of(-1);
	struct cleanable_seg unknown[5];
	struct cleanable c;

	(void)state;
	l.min_lag_ms = 2500; /* segments 200 (max_ts NOW-2000) and later are too young */
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_uncleanable, 200);
	assert_int_equal(c.cleanable_bytes, 2000);
	l.min_lag_ms = 10000;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_uncleanable, 0);
	assert_int_equal(c.cleanable_bytes, 0);
	/* a segment of unknown age waits */
	for (int i = 0; i < 5; i++)
		unknown[i] = segs[i];
	unknown[1].max_ts = -1;
	l.segs = unknown;
	l.min_lag_ms = 1;
	cleanable_measure(&l, NOW, &c);
	assert_int_equal(c.first_uncleanable, 100);
}

static void test_max_lag(void **state)
{
	struct cleanable_log l = log_of(300);
	struct cleanable c;

	(void)state;
	l.max_lag_ms = 3000; /* segment 300 began at NOW-2000: not yet */
	cleanable_measure(&l, NOW, &c);
	assert_false(c.must_clean);
	assert_false(cleanable_due(&c, 0.5));
	l.max_lag_ms = 1500;
	cleanable_measure(&l, NOW, &c);
	assert_true(c.must_clean);
	assert_true(cleanable_due(&c, 0.5)); /* ratio 0.25, due all the same */
	/* nothing cleanable: never due */
	l.checkpoint = 400;
	cleanable_measure(&l, NOW, &c);
	assert_false(c.must_clean);
	assert_false(cleanable_due(&c, 0.5));
}

static void test_pick(void **state)
{
	struct cleanable_log logs[3] = { log_of(300), log_of(100), log_of(200) };
	struct cleanable m[3];

	(void)state;
	/* ratios 0.25, 0.75, 0.5: the dirtiest above 0.5 */
	assert_int_equal(cleanable_pick(logs, 3, NOW, m), 1);
	assert_true(m[0].ratio == 0.25 && m[1].ratio == 0.75 && m[2].ratio == 0.5);
	logs[1].min_ratio = 0.9;
	assert_int_equal(cleanable_pick(logs, 3, NOW, m), -1); /* 0.5 is not above 0.5 */
	logs[2].min_ratio = 0.4;
	assert_int_equal(cleanable_pick(logs, 3, NOW, m), 2);
	logs[0].max_lag_ms = 1; /* overdue: cleaned although its ratio is the lowest */
	logs[2].min_ratio = 0.9;
	assert_int_equal(cleanable_pick(logs, 3, NOW, m), 0);
	assert_int_equal(cleanable_pick(logs, 0, NOW, m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_cleaned),    cmocka_unit_test(test_checkpoint),
		cmocka_unit_test(test_open_transaction), cmocka_unit_test(test_min_lag),
		cmocka_unit_test(test_max_lag),          cmocka_unit_test(test_pick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
