/*
 * test_coord_topic.c - the partition coordinating a key agrees with
 * Kafka's Utils.abs(String.hashCode) % partitions: negative hashes are
 * negated, not masked, INT_MIN maps to 0, and non-ASCII keys hash their
 * UTF-16 code units (surrogate pairs above U+FFFF).  Expected values come
 * from Java's definition, computed independently.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "coord/coord_topic.h"

static void test_java_hash(void **state)
{
	(void)state;
	assert_int_equal(coord_java_hash(KSTR("")), 0);
	assert_int_equal(coord_java_hash(KSTR("my-group")), -1906497762);
	assert_int_equal(coord_java_hash(KSTR("polygenelubricants")), INT32_MIN);
	assert_int_equal(coord_java_hash(KSTR("gr\xc3\xbcppe")), -1233264812);   /* U+00FC */
	assert_int_equal(coord_java_hash(KSTR("g\xf0\x9f\x98\x80x")), 58028462); /* U+1F600 */
	assert_int_equal(coord_java_hash(KSTR("consumer-group-7")), 147483026);
}

static void test_partition(void **state)
{
	(void)state;
	assert_int_equal(coord_partition_for(KSTR("my-group"), 50), 12); /* masking would give 36 */
	assert_int_equal(coord_partition_for(KSTR("gr\xc3\xbcppe"), 50), 12);
	assert_int_equal(coord_partition_for(KSTR("polygenelubricants"), 50), 0);
	assert_int_equal(coord_partition_for(KSTR("consumer-group-7"), 50), 26);
	assert_int_equal(coord_partition_for(KSTR("g\xf0\x9f\x98\x80x"), 50), 12);
}

static void test_malformed_utf8(void **state)
{
	(void)state;
	/* a lone continuation byte and a truncated sequence hash as U+FFFD each */
	assert_int_equal(coord_java_hash(KSTR("\x80")), 0xfffd);
	assert_int_equal(coord_java_hash(KSTR("a\xc3")), (int32_t)(31u * 'a' + 0xfffd));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_java_hash),
		cmocka_unit_test(test_partition),
		cmocka_unit_test(test_malformed_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
