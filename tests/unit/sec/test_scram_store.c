/*
 * test_scram_store.c - the SCRAM credential store (sec/scram_store.h):
 * set, replace and remove per user and mechanism; the file written and
 * read back (names with spaces kept whole); a file that is not one the
 * broker wrote refused; a store without a directory writes nothing.
 */
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

#include "sec/scram_store.h"

static struct scram_cred cred(const char *pw, int iterations)
{
	struct scram_cred c;

	assert_int_equal(scram_cred_derive(SCRAM_SHA_256, pw, (const uint8_t *)"salty", 5, iterations, &c), 0);
	return c;
}

static void test_set_get(void **state)
{
	struct scram_store *st;
	struct scram_cred a = cred("a", 4096), b = cred("b", 8192), got;

	(void)state;
	assert_int_equal(scram_store_open(NULL, &st), 0);
	assert_int_equal(scram_store_get(st, SCRAM_SHA_256, "ann", &got), -ENOENT);
	assert_int_equal(scram_store_set(st, "ann", SCRAM_SHA_256, &a), 0);
	assert_int_equal(scram_store_set(st, "ann", SCRAM_SHA_512, &b), 0);
	assert_int_equal(scram_store_count(st), 1);
	assert_int_equal(scram_store_get(st, SCRAM_SHA_512, "ann", &got), 0);
	assert_int_equal(got.iterations, 8192);
	assert_int_equal(scram_store_set(st, "ann", SCRAM_SHA_256, &b), 0); /* replaced */
	assert_int_equal(scram_store_get(st, SCRAM_SHA_256, "ann", &got), 0);
	assert_int_equal(got.iterations, 8192);
	assert_int_equal(scram_store_set(st, "ann", SCRAM_SHA_256, NULL), 0);
	assert_int_equal(scram_store_get(st, SCRAM_SHA_256, "ann", &got), -ENOENT);
	assert_int_equal(scram_store_count(st), 1);
	assert_int_equal(scram_store_set(st, "ann", SCRAM_SHA_512, NULL), 0); /* last one: the user goes */
	assert_int_equal(scram_store_count(st), 0);
	assert_null(scram_store_user(st, 0));
	assert_int_equal(scram_store_save(st), 0); /* no directory: nothing written */
	scram_store_close(st);
}

static void test_file(void **state)
{
	char dir[] = "/tmp/gregor-scram-XXXXXX", path[64];
	struct scram_cred a = cred("a", 4096), got;
	struct scram_store *st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(scram_store_open(dir, &st), 0); /* no file yet */
	assert_int_equal(scram_store_set(st, "ann lee", SCRAM_SHA_256, &a), 0);
	assert_int_equal(scram_store_set(st, "bo=b,c", SCRAM_SHA_512, &a), 0);
	assert_int_equal(scram_store_save(st), 0);
	scram_store_close(st);
	assert_int_equal(scram_store_open(dir, &st), 0);
	assert_int_equal(scram_store_count(st), 2);
	assert_int_equal(scram_store_get(st, SCRAM_SHA_256, "ann lee", &got), 0);
	assert_memory_equal(got.stored_key, a.stored_key, 32);
	assert_int_equal(scram_store_get(st, SCRAM_SHA_512, "bo=b,c", &got), 0);
	scram_store_close(st);

	snprintf(path, sizeof(path), "%s/%s", dir, SCRAM_STORE_FILE);
	f = fopen(path, "a");
	fputs("SCRAM-SHA-256 salt=***,stored_key=,server_key=,iterations=1 x\n", f);
	fclose(f);
	assert_int_equal(scram_store_open(dir, &st), -EINVAL);
	f = fopen(path, "w");
	fputs("not ours\n", f);
	fclose(f);
	assert_int_equal(scram_store_open(dir, &st), -EINVAL);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_get),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
