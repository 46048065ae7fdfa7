/* test_quota.c - client quotas: Kafka's precedence of the eight entity combinations, the file's round trip, and the sampled rate's throttle arithmetic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/quota.h"

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

static double resolved(const char *user, const char *client, struct quota_entity *e)
{
	double bound = -1;

	if (!quota_resolve(QUOTA_PRODUCE, user, client, &bound, e))
		return -1;
	return bound;
}

/* Each combination set, most specific first removed in turn: the next in Kafka's order wins. */
static void test_precedence(void **state)
{
	static const struct {
		uint8_t u, c;
	} order[8] = {
		{ QUOTA_NAME, QUOTA_NAME },    { QUOTA_NAME, QUOTA_DEFAULT },    { QUOTA_NAME, QUOTA_ABSENT },
		{ QUOTA_DEFAULT, QUOTA_NAME }, { QUOTA_DEFAULT, QUOTA_DEFAULT }, { QUOTA_DEFAULT, QUOTA_ABSENT },
		{ QUOTA_ABSENT, QUOTA_NAME },  { QUOTA_ABSENT, QUOTA_DEFAULT },
	};
	struct quota_entity e, got;

	(void)state;
	quota_close();
	for (int i = 0; i < 8; i++) {
		e = ent(order[i].u, "alice", order[i].c, "app");
		quota_set(&e, QUOTA_PRODUCE, 100 + i, false);
	}
	e = ent(QUOTA_NAME, "alice", QUOTA_NAME, "other");
	quota_set(&e, QUOTA_FETCH, 5, false); /* another key on another entity: no effect */
	for (int i = 0; i < 8; i++) {
		assert_int_equal((int)resolved("alice", "app", &got), 100 + i);
		assert_int_equal(got.user, order[i].u == QUOTA_ABSENT ? QUOTA_ABSENT : QUOTA_NAME);
		assert_int_equal(got.client, order[i].c == QUOTA_ABSENT ? QUOTA_ABSENT : QUOTA_NAME);
		/* <default> components become the request's own names: one rate per client */
		assert_string_equal(got.user_name, order[i].u == QUOTA_ABSENT ? "" : "alice");
		assert_string_equal(got.client_name, order[i].c == QUOTA_ABSENT ? "" : "app");
		e = ent(order[i].u, "alice", order[i].c, "app");
		quota_set(&e, QUOTA_PRODUCE, 0, true);
	}
	assert_true(resolved("alice", "app", &got) < 0);
	assert_int_equal(quota_count(), 1); /* the fetch quota's entity only */
	/* a name is not a default: bob gets the <default> user, not alice's */
	e = ent(QUOTA_NAME, "alice", QUOTA_ABSENT, NULL);
	quota_set(&e, QUOTA_PRODUCE, 7, false);
	e = ent(QUOTA_DEFAULT, NULL, QUOTA_ABSENT, NULL);
	quota_set(&e, QUOTA_PRODUCE, 9, false);
	assert_int_equal((int)resolved("bob", "app", &got), 9);
	assert_int_equal((int)resolved("alice", "x", &got), 7);
	quota_close();
}

static void test_file_round_trip(void **state)
{
	char dir[] = "/tmp/gregor-quota-XXXXXX";
	char path[128];
	struct quota_entity e, got;
	double vals[QUOTA_KINDS];
	bool has[QUOTA_KINDS];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(quota_open(dir), 0); /* no file: no quotas */
	assert_int_equal(quota_count(), 0);
	e = ent(QUOTA_DEFAULT, NULL, QUOTA_NAME, "a b\xc3\xa9\t\"x\"");
	quota_set(&e, QUOTA_REQUEST, 12.5, false);
	quota_set(&e, QUOTA_FETCH, 1048576, false);
	assert_int_equal(quota_save(), 0);
	quota_close();
	assert_int_equal(quota_open(dir), 0);
	assert_int_equal(quota_count(), 1);
	quota_get(0, &got, vals, has);
	assert_int_equal(got.user, QUOTA_DEFAULT);
	assert_int_equal(got.client, QUOTA_NAME);
	assert_string_equal(got.client_name, e.client_name);
	assert_true(has[QUOTA_REQUEST] && has[QUOTA_FETCH] && !has[QUOTA_PRODUCE]);
	assert_true(vals[QUOTA_REQUEST] == 12.5 && vals[QUOTA_FETCH] == 1048576);
	/* a file it did not write is refused, not half-read */
	snprintf(path, sizeof(path), "%s/client-quotas", dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("- nzz producer_byte_rate 5\n", f);
	fclose(f);
	assert_int_equal(quota_open(dir), -EINVAL);
	assert_int_equal(quota_count(), 0);
	unlink(path);
	rmdir(dir);
}

/* Kafka's arithmetic: 11 samples of 1 s, at least 10 s counted; throttle = (rate - bound) / bound x span. */
static void test_throttle(void **state)
{
	struct quota_entity e = ent(QUOTA_ABSENT, NULL, QUOTA_NAME, "c");
	int64_t t = 1000000;

	(void)state;
	quota_windows_set(11, 1);
	/* 10 s worth at 1000 B/s is free at once */
	assert_int_equal(quota_record(QUOTA_PRODUCE, &e, 10000, 1000, t), 0);
	/* 2000 B more: rate 1200 over 10 s -> (1200 - 1000) / 1000 x 10 s = 2 s */
	assert_int_equal(quota_record(QUOTA_PRODUCE, &e, 2000, 1000, t), 2000);
	/* 11 s later the windows holding it are forgotten */
	assert_int_equal(quota_record(QUOTA_PRODUCE, &e, 500, 1000, t + 11001), 0);
	/* another client is measured on its own */
	e = ent(QUOTA_ABSENT, NULL, QUOTA_NAME, "d");
	assert_int_equal(quota_record(QUOTA_PRODUCE, &e, 10000, 1000, t + 11001), 0);
	/* two samples of 1 s: at least 1 s counted */
	quota_windows_set(2, 1);
	assert_int_equal(quota_record(QUOTA_PRODUCE, &e, 3000, 1000, t), 2000);
	quota_rates_clear();
	quota_windows_set(11, 1);
}

/* Churning client ids: at most 10,000 rates kept; a client under a quota is still measured past that. */
static void test_rate_cap(void **state)
{
	struct quota_entity e;
	char name[32];

	(void)state;
	quota_rates_clear();
	for (int i = 0; i < 12000; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		e = ent(QUOTA_ABSENT, NULL, QUOTA_NAME, name);
		assert_int_equal(quota_record(QUOTA_FETCH, &e, 100, 0, 1000 + i), 0);
	}
	assert_int_equal(quota_metric_count(), 10000);
	e = ent(QUOTA_ABSENT, NULL, QUOTA_NAME, "limited");
	assert_int_equal(quota_record(QUOTA_FETCH, &e, 10000, 1000, 20000), 0);
	assert_int_equal(quota_record(QUOTA_FETCH, &e, 2000, 1000, 20000), 2000);
	assert_int_equal(quota_metric_count(), 10000);
	quota_rates_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_file_round_trip),
		cmocka_unit_test(test_throttle),
		cmocka_unit_test(test_rate_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
