/*
 * test_principal_map.c - ssl.principal.mapping.rules (sec/principal_map.h)
 * on the examples of Kafka's documentation: service users, lower and
 * upper case, the catch-all CN rule, DEFAULT, no rule matching, escaped
 * commas in a CN, and the rules Kafka refuses.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sec/principal_map.h"

#define DOC_RULES                                                                                                      \
	"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"                                                                     \
	"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n"                                         \
	"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n"                                                                  \
	"DEFAULT"

static void expect(const char *rules, const char *dn, const char *want)
{
	struct principal_map *pm;
	char err[256], *got;

	assert_int_equal(principal_map_new(rules, &pm, err, sizeof(err)), 0);
	got = principal_map_apply(pm, dn);
	if (want)
		assert_string_equal(got, want);
	else
		assert_null(got);
	free(got);
	principal_map_free(pm);
}

static void test_documented(void **state)
{
	(void)state;
	expect(DOC_RULES, "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser");
	expect(DOC_RULES, "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin");
	expect(DOC_RULES, "OU=Other,CN=Some.Host,O=x", "some.host");
	expect(DOC_RULES, "O=gregor,OU=nocn", "O=gregor,OU=nocn");
	expect("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U",
	       "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "ADMINUSER@ADMIN");
}

static void test_default_and_no_match(void **state)
{
	(void)state;
	expect(NULL, "CN=test-client,O=gregor", "CN=test-client,O=gregor");
	expect("  ", "CN=a", "CN=a");
	expect("DEFAULT", "CN=a", "CN=a");
	/* no rule matches: Kafka refuses the certificate */
	expect("RULE:^CN=(.*),O=other$/$1/", "CN=test-client,O=gregor", NULL);
	/* the pattern must match the whole DN */
	expect("RULE:CN=([a-z]*)/$1/", "CN=abc,O=x", NULL);
	expect("RULE:^CN=(.*),O=gregor$/$1/ , DEFAULT", "CN=test-client,O=gregor", "test-client");
	expect("RULE:^CN=(.*),O=x$/$1/,DEFAULT", "CN=test-client,O=gregor", "CN=test-client,O=gregor");
}

static void test_replacement(void **state)
{
	(void)state;
	/* an escaped comma inside the CN (RFC 2253) */
	expect("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT", "CN=Kafka\\, Server,OU=Dev", "Kafka\\, Server");
	/* literal text, a group the pattern does not have, an escaped slash */
	expect("RULE:^CN=([^,]*),O=(.*)$/u-$2.$1 $7/", "CN=a,O=b", "u-b.a $7");
	expect("RULE:^CN=(.*)\\/x$/$1\\/y/", "CN=a/x", "a/y");
	expect("RULE:^CN=(\\d+)$/n$1/", "CN=42", "n42");
	expect("RULE:^CN=(\\d+)$/n$1/", "CN=4a", NULL);
	expect("RULE:^CN=([a-z]{2,3})[*+]?$/$1/", "CN=abc+", "abc");
	expect("RULE:^CN=([]a]*)$/$1/", "CN=a]a", "a]a");
}

static void test_bad_rules(void **state)
{
	static const char *const bad[] = {
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/LU",
		"RULE:CN=(.*,OU=x/$1/",
		"DEFAULT DEFAULT",
		"RULE:^CN=()+++++++++$/$1/",
		"RULE:^CN=(a*+)$/$1/",
		"RULE:^CN=((a{100}){100})$/$1/",
		"RULE:^CN=(a{1000})$/$1/",
	};
	struct principal_map *pm;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(principal_map_new(bad[i], &pm, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "ssl.principal.mapping.rules"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_documented),
		cmocka_unit_test(test_default_and_no_match),
		cmocka_unit_test(test_replacement),
		cmocka_unit_test(test_bad_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
