/*
 * test_sasl_plain.c - JAAS entries (sec/sasl_plain.h): what parses, how
 * many users, and the PLAIN token check: good and wrong passwords, an
 * authorization id that names another user, tokens cut short or with a
 * NUL inside a field, and passwords holding quotes' neighbours (= ; ').
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sec/sasl_plain.h"

#define MOD "org.apache.kafka.common.security.plain.PlainLoginModule "
static const char *jaas = MOD "required username=\"admin\" password=\"admin-pw\"\n"
			      "  user_alice=\"alice-pw\" user_bob=\"b=ob;'s\";";

static int verify(const char *tok, size_t len, char *user)
{
	return sasl_plain_verify(jaas, (const uint8_t *)tok, len, user, 32);
}

static void test_jaas_check(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(sasl_jaas_check(jaas, err, sizeof(err)), 2);
	assert_int_equal(sasl_jaas_check(MOD "required;", err, sizeof(err)), 0);
	assert_int_equal(sasl_jaas_check(MOD "optional user_x=\"\" ;  ", err, sizeof(err)), 1);
	assert_int_equal(sasl_jaas_check(MOD "required user_a=\"x\"", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check(MOD "user_a=\"x\";", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check(MOD "required user_a=x;", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check(MOD "required user_a=\"x;", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check(MOD "required; other required;", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check("", err, sizeof(err)), -EINVAL);
	assert_int_equal(sasl_jaas_check(NULL, err, sizeof(err)), -EINVAL);
}

static void test_plain_verify(void **state)
{
	char user[32];

	(void)state;
	assert_int_equal(verify("\0alice\0alice-pw", 15, user), 0);
	assert_string_equal(user, "alice");
	assert_int_equal(verify("alice\0alice\0alice-pw", 20, user), 0);
	assert_int_equal(verify("\0bob\0b=ob;'s", 12, user), 0);
	assert_string_equal(user, "bob");
	assert_int_equal(verify("\0alice\0alice-p", 14, user), -EACCES);
	assert_string_equal(user, "alice");
	assert_int_equal(verify("\0alice\0alice-pwx", 16, user), -EACCES);
	assert_int_equal(verify("\0alice\0b=ob;'s", 14, user), -EACCES);
	assert_int_equal(verify("bob\0alice\0alice-pw", 18, user), -EACCES);
	assert_int_equal(verify("\0admin\0admin-pw", 15, user), -EACCES); /* not a user_ option */
	assert_int_equal(verify("\0carol\0x", 8, user), -EACCES);
	assert_int_equal(verify("\0\0alice-pw", 10, user), -EACCES);
	assert_int_equal(verify("\0alice", 6, user), -EACCES);
	assert_int_equal(verify("alice", 5, user), -EACCES);
	assert_int_equal(verify("", 0, user), -EACCES);
	assert_int_equal(verify("\0alice\0alice-pw\0", 16, user), -EACCES);
}

/* The broker's own identity in a JAAS entry (inter-broker SASL): username and password, beside user_ options. */
static void test_jaas_option(void **state)
{
	const char *jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required "
			   "username=\"broker\" password=\"b-secret\" user_broker=\"b-secret\";";
	char v[16], err[128];

	(void)state;
	assert_int_equal(sasl_jaas_option(jaas, "username", v, sizeof(v), err, sizeof(err)), 0);
	assert_string_equal(v, "broker");
	assert_int_equal(sasl_jaas_option(jaas, "password", v, sizeof(v), err, sizeof(err)), 0);
	assert_string_equal(v, "b-secret");
	assert_int_equal(sasl_jaas_option(jaas, "user", v, sizeof(v), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no user="));
	assert_int_equal(sasl_jaas_option(jaas, "username", v, 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too long"));
	assert_int_equal(sasl_jaas_option("x required username=\"a\"", "username", v, sizeof(v), err, sizeof(err)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jaas_check),
		cmocka_unit_test(test_plain_verify),
		cmocka_unit_test(test_jaas_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
