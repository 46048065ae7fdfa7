/* test_leaders.c - the controller's next partition state (cluster/leaders.c leaders_next()): a new
 * partition's ISR is its live replicas; a broker that leaves leaves every ISR and its partitions go to the
 * next live ISR member; no live ISR member: leader -1 keeping one ISR member, or with unclean election
 * the first live replica with ISR [it]; a returning broker rejoins no ISR except as the last member. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cluster/leaders.h"

static const struct znode_replicas r123 = { .n = 3, .ids = { 1, 2, 3 } };

static struct znode_state mkstate(int32_t leader, int32_t epoch, int32_t n, const int32_t *isr)
{
	struct znode_state st = { .leader = leader, .leader_epoch = epoch };

	st.isr.n = n;
	memcpy(st.isr.ids, isr, sizeof(*isr) * (size_t)n);
	return st;
}

static void assert_isr(const struct znode_state *st, int32_t n, const int32_t *isr)
{
	assert_int_equal(st->isr.n, n);
	for (int32_t i = 0; i < n; i++)
		assert_int_equal(st->isr.ids[i], isr[i]);
}

static void test_new_partition(void **state)
{
	static const int32_t live[] = { 2, 3 };
	struct znode_state st;

	(void)state;
	memset(&st, 0, sizeof(st));
	assert_true(leaders_next(live, 2, &r123, false, false, &st));
	assert_int_equal(st.leader, 2);
	assert_int_equal(st.leader_epoch, 0);
	assert_isr(&st, 2, (int32_t[]){ 2, 3 });
	assert_false(leaders_next(live, 0, &r123, false, false, &st)); /* none live: no state */
}

static void test_leader_leaves(void **state)
{
	static const int32_t live[] = { 2, 3 };
	struct znode_state st = mkstate(1, 4, 3, (int32_t[]){ 1, 3, 2 });

	(void)state;
	assert_true(leaders_next(live, 2, &r123, true, false, &st));
	assert_int_equal(st.leader, 2); /* assignment order, not ISR order */
	assert_int_equal(st.leader_epoch, 5);
	assert_isr(&st, 2, (int32_t[]){ 3, 2 });
	assert_false(leaders_next(live, 2, &r123, true, false, &st)); /* nothing more to do */
}

static void test_follower_leaves(void **state)
{
	static const int32_t live[] = { 1, 2 };
	struct znode_state st = mkstate(1, 0, 3, (int32_t[]){ 1, 2, 3 });

	(void)state;
	assert_true(leaders_next(live, 2, &r123, true, false, &st));
	assert_int_equal(st.leader, 1);
	assert_int_equal(st.leader_epoch, 1);
	assert_isr(&st, 2, (int32_t[]){ 1, 2 });
}

static void test_no_isr_member_live(void **state)
{
	static const int32_t live[] = { 3 };
	struct znode_state clean = mkstate(1, 2, 2, (int32_t[]){ 1, 2 }), unclean = clean;

	(void)state;
	assert_true(leaders_next(live, 1, &r123, true, false, &clean));
	assert_int_equal(clean.leader, -1);
	assert_int_equal(clean.leader_epoch, 3);
	assert_isr(&clean, 1, (int32_t[]){ 2 }); /* never empty */
	assert_false(leaders_next(live, 1, &r123, true, false, &clean));

	assert_true(leaders_next(live, 1, &r123, true, true, &unclean));
	assert_int_equal(unclean.leader, 3);
	assert_int_equal(unclean.leader_epoch, 3);
	assert_isr(&unclean, 1, (int32_t[]){ 3 });
}

static void test_return(void **state)
{
	static const int32_t all[] = { 1, 2, 3 };
	struct znode_state led = mkstate(2, 5, 2, (int32_t[]){ 2, 3 }),
			   leaderless = mkstate(-1, 7, 1, (int32_t[]){ 1 });

	(void)state;
	assert_false(leaders_next(all, 3, &r123, true, false, &led)); /* 1 back: no ISR rejoined */
	assert_isr(&led, 2, (int32_t[]){ 2, 3 });
	assert_true(leaders_next(all, 3, &r123, true, false, &leaderless)); /* the last ISR member is back */
	assert_int_equal(leaderless.leader, 1);
	assert_int_equal(leaderless.leader_epoch, 8);
	assert_isr(&leaderless, 1, (int32_t[]){ 1 });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_partition),   cmocka_unit_test(test_leader_leaves),
		cmocka_unit_test(test_follower_leaves), cmocka_unit_test(test_no_isr_member_live),
		cmocka_unit_test(test_return),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
