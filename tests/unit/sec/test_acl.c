/*
 * test_acl.c - the ACL decision (sec/acl.h): literal, wildcard and
 * prefixed patterns, deny over allow, host and principal wildcards, the
 * implied operations (allow only), super users, no ACL found, filters of
 * DescribeAcls/DeleteAcls (MATCH included), binding checks and names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sec/acl.h"

static void add(struct acl_set *s, int8_t type, int8_t pat, const char *name, const char *who, const char *host,
		int8_t op, int8_t perm)
{
	struct acl_binding b = { type, pat, op, perm, (char *)name, (char *)who, (char *)host };

	assert_null(acl_binding_check(&b));
	assert_int_equal(acl_set_add(s, &b), 1);
}

static bool may(const struct acl_set *s, const struct acl_policy *p, const char *who, const char *host, int8_t type,
		const char *name, int8_t op)
{
	struct acl_request rq = { who, host, type, name, op };

	return acl_authorize(s, p, &rq);
}

static void test_literal_and_deny(void **state)
{
	struct acl_set s;
	struct acl_policy p = { NULL, false };

	(void)state;
	acl_set_init(&s);
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "t1", "User:alice", "*", ACL_OP_WRITE, ACL_PERM_ALLOW);
	assert_true(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_WRITE));
	assert_false(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_READ));
	assert_true(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_DESCRIBE)); /* implied */
	assert_false(may(&s, &p, "User:bob", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_WRITE));
	assert_false(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t10", ACL_OP_WRITE));
	assert_false(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_GROUP, "t1", ACL_OP_WRITE));
	/* the same binding twice is one */
	{
		struct acl_binding b = { ACL_RES_TOPIC, ACL_PAT_LITERAL, ACL_OP_WRITE, ACL_PERM_ALLOW,
					 "t1",          "User:alice",    "*" };
		assert_int_equal(acl_set_add(&s, &b), 0);
	}
	/* deny wins over allow; a deny of Write does not deny Describe */
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "*", "User:alice", "*", ACL_OP_WRITE, ACL_PERM_DENY);
	assert_false(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_WRITE));
	assert_true(may(&s, &p, "User:alice", "1.2.3.4", ACL_RES_TOPIC, "t1", ACL_OP_DESCRIBE));
	/* deny All denies everything, from that host only */
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "t1", "User:*", "10.0.0.9", ACL_OP_ALL, ACL_PERM_DENY);
	assert_false(may(&s, &p, "User:alice", "10.0.0.9", ACL_RES_TOPIC, "t1", ACL_OP_DESCRIBE));
	assert_true(may(&s, &p, "User:alice", "10.0.0.8", ACL_RES_TOPIC, "t1", ACL_OP_DESCRIBE));
	/* super users pass everything */
	p.super_users = "User:admin; User:root";
	assert_true(may(&s, &p, "User:root", "10.0.0.9", ACL_RES_TOPIC, "t1", ACL_OP_WRITE));
	assert_false(may(&s, &p, "User:roo", "10.0.0.9", ACL_RES_TOPIC, "t1", ACL_OP_WRITE));
	acl_set_release(&s);
}

static void test_prefixed_and_none_found(void **state)
{
	struct acl_set s;
	struct acl_policy p = { NULL, false };

	(void)state;
	acl_set_init(&s);
	assert_false(may(&s, &p, "User:a", "h", ACL_RES_TOPIC, "x", ACL_OP_READ));
	p.allow_everyone_if_no_acl_found = true;
	assert_true(may(&s, &p, "User:a", "h", ACL_RES_TOPIC, "x", ACL_OP_READ));
	add(&s, ACL_RES_TOPIC, ACL_PAT_PREFIXED, "orders-", "User:a", "*", ACL_OP_READ, ACL_PERM_ALLOW);
	add(&s, ACL_RES_CLUSTER, ACL_PAT_LITERAL, ACL_CLUSTER_NAME, "User:a", "*", ACL_OP_ALTER_CONFIGS,
	    ACL_PERM_ALLOW);
	assert_true(may(&s, &p, "User:a", "h", ACL_RES_TOPIC, "orders-eu", ACL_OP_READ));
	assert_true(may(&s, &p, "User:a", "h", ACL_RES_TOPIC, "orders-", ACL_OP_READ));
	assert_false(may(&s, &p, "User:b", "h", ACL_RES_TOPIC, "orders-eu", ACL_OP_READ)); /* an ACL exists */
	assert_true(may(&s, &p, "User:b", "h", ACL_RES_TOPIC, "orders", ACL_OP_READ));     /* none applies */
	assert_true(may(&s, &p, "User:a", "h", ACL_RES_CLUSTER, ACL_CLUSTER_NAME, ACL_OP_DESCRIBE_CONFIGS));
	assert_false(may(&s, &p, "User:a", "h", ACL_RES_CLUSTER, ACL_CLUSTER_NAME, ACL_OP_DESCRIBE));
	acl_set_release(&s);
}

static void test_filters(void **state)
{
	struct acl_set s;
	struct acl_filter f = { ACL_RES_ANY, ACL_PAT_ANY, ACL_OP_ANY, ACL_PERM_ANY, NULL, NULL, NULL };
	int n;

	(void)state;
	acl_set_init(&s);
	add(&s, ACL_RES_TOPIC, ACL_PAT_PREFIXED, "ab", "User:a", "*", ACL_OP_READ, ACL_PERM_ALLOW);
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "*", "User:a", "*", ACL_OP_READ, ACL_PERM_DENY);
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "abc", "User:b", "*", ACL_OP_WRITE, ACL_PERM_ALLOW);
	add(&s, ACL_RES_GROUP, ACL_PAT_LITERAL, "abc", "User:b", "*", ACL_OP_READ, ACL_PERM_ALLOW);
	assert_null(acl_filter_check(&f));
	n = 0;
	for (int i = 0; i < s.n; i++)
		n += acl_filter_match(&f, &s.v[i]);
	assert_int_equal(n, 4);
	f.res_type = ACL_RES_TOPIC;
	f.pattern = ACL_PAT_MATCH;
	f.name = "abc";
	n = 0;
	for (int i = 0; i < s.n; i++)
		n += acl_filter_match(&f, &s.v[i]);
	assert_int_equal(n, 3);
	f.pattern = ACL_PAT_LITERAL;
	n = 0;
	for (int i = 0; i < s.n; i++)
		n += acl_filter_match(&f, &s.v[i]);
	assert_int_equal(n, 1);
	f.pattern = ACL_PAT_UNKNOWN;
	assert_non_null(acl_filter_check(&f));
	{
		struct acl_binding b = { ACL_RES_TOPIC, ACL_PAT_LITERAL, ACL_OP_READ, ACL_PERM_ALLOW,
					 "abc",         "User:b",        "*" };
		assert_int_equal(acl_set_find(&s, &b), -1);
		b.op = ACL_OP_WRITE;
		n = acl_set_find(&s, &b);
		assert_true(n >= 0);
		acl_set_remove(&s, n);
		assert_int_equal(s.n, 3);
		assert_int_equal(acl_set_find(&s, &b), -1);
	}
	acl_set_release(&s);
}

static void test_any_resource(void **state)
{
	struct acl_set s;
	struct acl_policy p = { "User:root", false };
	struct acl_request rq = { "User:a", "h", ACL_RES_TOPIC, NULL, ACL_OP_WRITE };

	(void)state;
	acl_set_init(&s);
	assert_false(acl_authorize_any(&s, &p, &rq));
	rq.principal = "User:root";
	assert_true(acl_authorize_any(&s, &p, &rq));
	rq.principal = "User:a";
	add(&s, ACL_RES_TOPIC, ACL_PAT_PREFIXED, "logs-", "User:a", "*", ACL_OP_WRITE, ACL_PERM_ALLOW);
	assert_true(acl_authorize_any(&s, &p, &rq));
	/* a deny on a shorter prefix covers it; one on an unrelated literal does not */
	add(&s, ACL_RES_TOPIC, ACL_PAT_LITERAL, "other", "User:a", "*", ACL_OP_WRITE, ACL_PERM_DENY);
	assert_true(acl_authorize_any(&s, &p, &rq));
	add(&s, ACL_RES_TOPIC, ACL_PAT_PREFIXED, "log", "User:*", "*", ACL_OP_ALL, ACL_PERM_DENY);
	assert_false(acl_authorize_any(&s, &p, &rq));
	acl_set_release(&s);
}

static void test_checks_and_names(void **state)
{
	struct acl_binding b = {
		ACL_RES_CLUSTER, ACL_PAT_LITERAL, ACL_OP_ALTER, ACL_PERM_ALLOW, "other", "User:a", "*"
	};

	(void)state;
	assert_non_null(acl_binding_check(&b));
	b.name = ACL_CLUSTER_NAME;
	assert_null(acl_binding_check(&b));
	b.principal = "alice";
	assert_non_null(acl_binding_check(&b));
	b.principal = "User:a";
	b.op = ACL_OP_ANY;
	assert_non_null(acl_binding_check(&b));
	b.op = ACL_OP_ALL;
	b.pattern = ACL_PAT_MATCH;
	assert_non_null(acl_binding_check(&b));
	b.pattern = ACL_PAT_LITERAL;
	b.perm = ACL_PERM_ANY;
	assert_non_null(acl_binding_check(&b));
	assert_int_equal(acl_op_parse("ClusterAction"), ACL_OP_CLUSTER_ACTION);
	assert_int_equal(acl_op_parse("CLUSTER_ACTION"), ACL_OP_CLUSTER_ACTION);
	assert_int_equal(acl_op_parse("idempotent-write"), ACL_OP_IDEMPOTENT_WRITE);
	assert_int_equal(acl_op_parse("Nope"), -1);
	assert_int_equal(acl_res_parse("TransactionalId"), ACL_RES_TRANSACTIONAL_ID);
	assert_int_equal(acl_pattern_parse("prefixed"), ACL_PAT_PREFIXED);
	assert_int_equal(acl_perm_parse("Deny"), ACL_PERM_DENY);
	assert_string_equal(acl_op_name(ACL_OP_DESCRIBE_CONFIGS), "DescribeConfigs");
	assert_string_equal(acl_res_name(ACL_RES_GROUP), "Group");
	assert_string_equal(acl_op_name(99), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal_and_deny), cmocka_unit_test(test_prefixed_and_none_found),
		cmocka_unit_test(test_filters),          cmocka_unit_test(test_any_resource),
		cmocka_unit_test(test_checks_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
