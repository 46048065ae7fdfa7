/* test_assign.c - Kafka's replica assignment (cluster/assign.c): round-robin, follower shifts, racks, bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "cluster/assign.h"

static const struct assign_broker three[] = { { 3, NULL }, { 1, NULL }, { 2, NULL } };

/* RF 1: partition p on broker (p + start) % n of the id-sorted list, whatever order they come in. */
static void test_round_robin(void **state)
{
	int32_t got[6];
	const int32_t from0[] = { 1, 2, 3, 1, 2, 3 }, from1[] = { 2, 3, 1, 2, 3, 1 }, grow[] = { 3, 1 };

	(void)state;
	assert_int_equal(assign_replicas(three, 3, 0, 6, 1, 0, 7, got), 0);
	assert_memory_equal(got, from0, sizeof(from0));
	assert_int_equal(assign_replicas(three, 3, 0, 6, 1, 4, 0, got), 0); /* start taken modulo n */
	assert_memory_equal(got, from1, sizeof(from1));
	assert_int_equal(assign_replicas(three, 3, 4, 2, 1, 1, 0, got), 0); /* partitions 4 and 5 */
	assert_memory_equal(got, grow, sizeof(grow));
}

/* Followers: one place further in the first round, two in the next (the shift grows as p wraps). */
static void test_followers_shift(void **state)
{
	int32_t got[12];
	const int32_t want[] = { 1, 2, 2, 3, 3, 1, 1, 3, 2, 1, 3, 2 };

	(void)state;
	assert_int_equal(assign_replicas(three, 3, 0, 6, 2, 0, 0, got), 0);
	assert_memory_equal(got, want, sizeof(want));
}

/* 12 partitions over 3 brokers: 4 leaders each, for any start. */
static void test_even_spread(void **state)
{
	int32_t got[12];

	(void)state;
	for (uint32_t start = 0; start < 5; start++) {
		int count[4] = { 0 };

		assert_int_equal(assign_replicas(three, 3, 0, 12, 1, start, start, got), 0);
		for (int p = 0; p < 12; p++)
			count[got[p]]++;
		assert_int_equal(count[1], 4);
		assert_int_equal(count[2], 4);
		assert_int_equal(count[3], 4);
	}
}

/* Racks: the list alternates racks (1 3 2 4), and each partition's two replicas are on two racks. */
static void test_racks(void **state)
{
	const struct assign_broker racked[] = { { 4, "b" }, { 2, "a" }, { 3, "b" }, { 1, "a" } };
	const int32_t leaders[] = { 1, 3, 2, 4 }, pairs[] = { 1, 3, 3, 2, 2, 4, 4, 1 };
	int32_t got[8];

	(void)state;
	assert_int_equal(assign_replicas(racked, 4, 0, 4, 1, 0, 0, got), 0);
	assert_memory_equal(got, leaders, sizeof(leaders));
	assert_int_equal(assign_replicas(racked, 4, 0, 4, 2, 0, 0, got), 0);
	assert_memory_equal(got, pairs, sizeof(pairs));
}

static void test_rejects(void **state)
{
	const struct assign_broker mixed[] = { { 1, "a" }, { 2, NULL } };
	int32_t got[8];

	(void)state;
	assert_int_equal(assign_replicas(three, 3, 0, 2, 4, 0, 0, got), -EINVAL); /* RF 4, 3 brokers */
	assert_int_equal(assign_replicas(three, 3, 0, 2, 0, 0, 0, got), -EINVAL);
	assert_int_equal(assign_replicas(three, 3, 0, 0, 1, 0, 0, got), -EINVAL);
	assert_int_equal(assign_replicas(three, 0, 0, 1, 1, 0, 0, got), -EINVAL);
	assert_int_equal(assign_replicas(mixed, 2, 0, 2, 1, 0, 0, got), -EXDEV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_robin), cmocka_unit_test(test_followers_shift),
		cmocka_unit_test(test_even_spread), cmocka_unit_test(test_racks),
		cmocka_unit_test(test_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
