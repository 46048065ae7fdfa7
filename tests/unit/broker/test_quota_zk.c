/* test_quota_zk.c - client quota entities in ZooKeeper: Kafka's entity paths and sanitized names, both ways. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "broker/quota_zk.h"
#include "cluster/confchange.h"

static struct quota_entity ent(uint8_t u, const char *un, uint8_t c, const char *cn)
{
	struct quota_entity e;

	memset(&e, 0, sizeof(e));
	e.user = u;
	e.client = c;
	snprintf(e.user_name, sizeof(e.user_name), "%s", un ? un : "");
	snprintf(e.client_name, sizeof(e.client_name), "%s", cn ? cn : "");
	return e;
}

/* Each entity's path as Kafka names it, and back to the same entity. */
static void test_round_trip(void **state)
{
	static const struct {
		uint8_t u;
		const char *un;
		uint8_t c;
		const char *cn;
		const char *path;
	} cases[] = {
		{ QUOTA_NAME, "alice", QUOTA_ABSENT, NULL, "users/alice" },
		{ QUOTA_ABSENT, NULL, QUOTA_NAME, "app-1_x.y", "clients/app-1_x.y" },
		{ QUOTA_DEFAULT, NULL, QUOTA_ABSENT, NULL, "users/<default>" },
		{ QUOTA_ABSENT, NULL, QUOTA_DEFAULT, NULL, "clients/<default>" },
		{ QUOTA_NAME, "CN=a b", QUOTA_DEFAULT, NULL, "users/CN%3Da%20b/clients/<default>" },
		{ QUOTA_DEFAULT, NULL, QUOTA_NAME, "a/b*c", "users/<default>/clients/a%2Fb%2Ac" },
		{ QUOTA_ABSENT, NULL, QUOTA_NAME, "<default>", "clients/%3Cdefault%3E" },
		{ QUOTA_ABSENT, NULL, QUOTA_NAME, "caf\xc3\xa9", "clients/caf%C3%A9" },
	};
	char path[CONFCHANGE_ENTITY_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct quota_entity e = ent(cases[i].u, cases[i].un, cases[i].c, cases[i].cn), back;

		quota_zk_entity(&e, path, sizeof(path));
		assert_string_equal(path, cases[i].path);
		assert_true(quota_zk_parse(path, &back));
		assert_int_equal(back.user, e.user);
		assert_int_equal(back.client, e.client);
		assert_string_equal(back.user_name, e.user_name);
		assert_string_equal(back.client_name, e.client_name);
	}
}

/* A '+' decodes to a space (URL decoding); what names no entity is refused. */
static void test_parse(void **state)
{
	static const char *const bad[] = {
		"topics/t",    "users/",     "clients/",    "users/a/clients/",    "users/a/b",
		"clients/a/b", "clients/%4", "clients/%00", "users/a/clients/b/c",
	};
	struct quota_entity e;

	(void)state;
	assert_true(quota_zk_parse("clients/a+b", &e));
	assert_string_equal(e.client_name, "a b");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(quota_zk_parse(bad[i], &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
