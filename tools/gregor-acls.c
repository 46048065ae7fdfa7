/* gregor-acls - kafka-acls.sh for Gregor: add, remove and list ACLs.
 *
 *     gregor-acls --bootstrap-server H:P --command-config admin.properties \
 *         --add --allow-principal User:alice --operation Read --topic t1
 *     gregor-acls ... --add --allow-principal User:bob --consumer --topic t1 --group g
 *     gregor-acls ... --list [--topic t1] [--resource-pattern-type match]
 *     gregor-acls ... --remove --force --topic t1
 *
 * Flags and output follow Kafka's AclCommand, so scripts written for
 * kafka-acls.sh work with only the program name changed:
 *
 *     Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t1, patternType=LITERAL)`:
 *      	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
 *
 *     Current ACLs for resource `ResourcePattern(...)`:
 *      	(principal=..., host=..., operation=..., permissionType=...)
 *
 * --producer gives Write, Describe and Create on the topics (Write and
 * Describe on --transactional-id, IdempotentWrite on the cluster with
 * --idempotent); --consumer Read and Describe on the topics and Read on the
 * group. Without --force, --remove asks for a "y" on stdin first.
 *
 * The requests go through librdkafka's Admin API (CreateAcls, DescribeAcls,
 * DeleteAcls). librdkafka 2.0.2 knows the resource types topic, group and
 * broker (which is Kafka's cluster, 4 on the wire) but not transactional
 * id: --transactional-id exits 1 saying so.  It also drops the error code of
 * a DescribeAcls answer, so a --list the broker refuses
 * (CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED) prints nothing.
 *
 * Exit status: 0 ok, 1 failure ("Error while executing ACL command: ..."),
 * 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>",
	  "REQUIRED: A list of host/port pairs to use for establishing the connection to the Kafka cluster." },
	{ "command-config", true, false, "<String: command-config>",
	  "A property file containing configs to be passed to Admin Client." },
	{ "add", false, false, NULL, "Indicates you are trying to add ACLs." },
	{ "remove", false, false, NULL, "Indicates you are trying to remove ACLs." },
	{ "list", false, false, NULL,
	  "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to specify "
	  "a resource." },
	{ "topic", true, true, "<String: topic>", "topic to which ACLs should be added or removed." },
	{ "group", true, true, "<String: group>", "Consumer Group to which the ACLs should be added or removed." },
	{ "cluster", false, false, NULL, "Add/Remove cluster ACLs." },
	{ "transactional-id", true, true, "<String: transactional-id>",
	  "The transactionalId to which ACLs should be added or removed." },
	{ "resource-pattern-type", true, false, "<ANY|MATCH|LITERAL|PREFIXED>",
	  "The type of the resource pattern or pattern filter. When adding acls, this should be a specific "
	  "pattern type, e.g. 'literal' or 'prefixed'. When listing or removing acls, a specific pattern type "
	  "can be used to list or remove acls from specific resource patterns, or use the filter values of "
	  "'any' or 'match'. (default: LITERAL)" },
	{ "allow-principal", true, true, "<String: allow-principal>",
	  "principal is in principalType:name format. User:* is the wildcard indicating all users." },
	{ "deny-principal", true, true, "<String: deny-principal>",
	  "principal is in principalType:name format. By default anyone not added through --allow-principal is "
	  "denied access." },
	{ "allow-host", true, true, "<String: allow-host>",
	  "Host from which principals listed in --allow-principal will have access. If you have specified "
	  "--allow-principal then the default for this option will be set to '*' which allows access from all "
	  "hosts." },
	{ "deny-host", true, true, "<String: deny-host>",
	  "Host from which principals listed in --deny-principal will be denied access. If you have specified "
	  "--deny-principal then the default for this option will be set to '*' which denies access from all "
	  "hosts." },
	{ "operation", true, true, "<String>",
	  "Operation that is being allowed or denied. Valid operation names are: Describe, DescribeConfigs, "
	  "Alter, IdempotentWrite, Read, Delete, Create, ClusterAction, All, Write, AlterConfigs (default: All)" },
	{ "producer", false, false, NULL,
	  "Convenience option to add/remove ACLs for producer role. This will generate ACLs that allows WRITE, "
	  "DESCRIBE and CREATE on topic." },
	{ "consumer", false, false, NULL,
	  "Convenience option to add/remove ACLs for consumer role. This will generate ACLs that allows READ, "
	  "DESCRIBE on topic and READ on group." },
	{ "idempotent", false, false, NULL,
	  "Enable idempotence for the producer. This should be used in combination with the --producer option." },
	{ "force", false, false, NULL, "Assume Yes to all queries and do not prompt." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-acls", "This tool helps to manage acls on kafka.", defs };

#define ACLS_MAX 256 /* resources, entries and bindings of one run */

/* Kafka's ResourceType numbers on the wire; librdkafka calls 4 BROKER. */
enum { RES_TOPIC = 2, RES_GROUP = 3, RES_CLUSTER = 4, RES_TRANSACTIONAL_ID = 5 };

/* One resource pattern named on the command line. */
struct acls_res {
	int type;
	const char *name;
	rd_kafka_ResourcePatternType_t pattern;
};

/* One (principal, host, operation, permission) of a binding. */
struct acls_entry {
	const char *principal, *host;
	rd_kafka_AclOperation_t op;
	rd_kafka_AclPermissionType_t perm;
};

static const char *acls_type_name(int type)
{
	static const char *const names[] = { "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID" };

	return type >= 0 && type <= RES_TRANSACTIONAL_ID ? names[type] : "UNKNOWN";
}

static void acls_print_res(int type, const char *name, rd_kafka_ResourcePatternType_t pattern)
{
	printf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", acls_type_name(type), name ? name : "<any>",
	       rd_kafka_ResourcePatternType_name(pattern));
}

static void acls_print_entry(const char *principal, const char *host, rd_kafka_AclOperation_t op,
			     rd_kafka_AclPermissionType_t perm)
{
	printf("(principal=%s, host=%s, operation=%s, permissionType=%s)", principal, host,
	       rd_kafka_AclOperation_name(op), rd_kafka_AclPermissionType_name(perm));
}

/* --operation's name to librdkafka's value (Kafka's names, any case, '_' and '-' ignored); usage error if unknown. */
static rd_kafka_AclOperation_t acls_op_parse(const struct opts *o, const char *s)
{
	for (int op = RD_KAFKA_ACL_OPERATION_ALL; op < RD_KAFKA_ACL_OPERATION__CNT; op++) {
		const char *a = rd_kafka_AclOperation_name(op), *b = s;

		for (;; a++, b++) {
			while (*a == '_')
				a++;
			while (*b == '_' || *b == '-')
				b++;
			if (tolower((unsigned char)*a) != tolower((unsigned char)*b) || !*a)
				break;
		}
		if (!*a && !*b)
			return op;
	}
	opt_usage_error(o, "Invalid operation: %s", s);
}

static rd_kafka_ResourcePatternType_t acls_pattern(const struct opts *o, bool filter)
{
	const char *s = opt_str(o, "resource-pattern-type", "LITERAL");

	for (int p = RD_KAFKA_RESOURCE_PATTERN_ANY; p < RD_KAFKA_RESOURCE_PATTERN_TYPE__CNT; p++)
		if (!strcasecmp(s, rd_kafka_ResourcePatternType_name(p))) {
			if (!filter && p != RD_KAFKA_RESOURCE_PATTERN_LITERAL &&
			    p != RD_KAFKA_RESOURCE_PATTERN_PREFIXED)
				opt_usage_error(
					o, "A '--resource-pattern-type' value of '%s' is not valid when adding acls.",
					s);
			return p;
		}
	opt_usage_error(o, "Invalid resource pattern type: %s", s);
}

/* The resources named (topics, groups, the cluster, transactional ids). OUT res; returns the count. */
static int acls_resources(const struct opts *o, bool filter, struct acls_res *res)
{
	rd_kafka_ResourcePatternType_t p = acls_pattern(o, filter);
	static const struct {
		const char *opt;
		int type;
	} kinds[] = { { "topic", RES_TOPIC }, { "group", RES_GROUP }, { "transactional-id", RES_TRANSACTIONAL_ID } };
	int n = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (int i = 0; i < opt_count(o, kinds[k].opt) && n < ACLS_MAX; i++)
			res[n++] = (struct acls_res){ kinds[k].type, opt_nth(o, kinds[k].opt, i), p };
	if (opt_has(o, "cluster") && n < ACLS_MAX)
		res[n++] = (struct acls_res){ RES_CLUSTER, "kafka-cluster", p };
	return n;
}

/* The operations a binding on resource type gets: --producer/--consumer's, else --operation (default All). */
static int acls_ops(const struct opts *o, int type, rd_kafka_AclOperation_t *ops)
{
	int n = 0;

	if (opt_has(o, "producer") && type == RES_TOPIC) {
		ops[n++] = RD_KAFKA_ACL_OPERATION_WRITE;
		ops[n++] = RD_KAFKA_ACL_OPERATION_DESCRIBE;
		ops[n++] = RD_KAFKA_ACL_OPERATION_CREATE;
	} else if (opt_has(o, "producer") && type == RES_TRANSACTIONAL_ID) {
		ops[n++] = RD_KAFKA_ACL_OPERATION_WRITE;
		ops[n++] = RD_KAFKA_ACL_OPERATION_DESCRIBE;
	} else if (opt_has(o, "producer") && type == RES_CLUSTER) {
		ops[n++] = RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE;
	} else if (opt_has(o, "consumer") && type == RES_TOPIC) {
		ops[n++] = RD_KAFKA_ACL_OPERATION_READ;
		ops[n++] = RD_KAFKA_ACL_OPERATION_DESCRIBE;
	} else if (opt_has(o, "consumer") && type == RES_GROUP) {
		ops[n++] = RD_KAFKA_ACL_OPERATION_READ;
	} else if (!opt_has(o, "producer") && !opt_has(o, "consumer")) {
		for (int i = 0; i < opt_count(o, "operation") && i < 16; i++)
			ops[n++] = acls_op_parse(o, opt_nth(o, "operation", i));
		if (!n)
			ops[n++] = RD_KAFKA_ACL_OPERATION_ALL;
	}
	return n;
}

/* Principal x host pairs of one permission ("allow" or "deny"), appended to e. */
static int acls_who(const struct opts *o, const char *kind, rd_kafka_AclPermissionType_t perm,
		    rd_kafka_AclOperation_t op, struct acls_entry *e, int n)
{
	char popt[32], hopt[32];

	snprintf(popt, sizeof(popt), "%s-principal", kind);
	snprintf(hopt, sizeof(hopt), "%s-host", kind);
	for (int i = 0; i < opt_count(o, popt); i++)
		for (int j = 0; j < (opt_has(o, hopt) ? opt_count(o, hopt) : 1) && n < ACLS_MAX; j++)
			e[n++] = (struct acls_entry){ opt_nth(o, popt, i), opt_has(o, hopt) ? opt_nth(o, hopt, j) : "*",
						      op, perm };
	return n;
}

/* The entries for resource type: every principal/host with every operation. OUT e; returns the count. */
static int acls_entries(const struct opts *o, int type, struct acls_entry *e)
{
	rd_kafka_AclOperation_t ops[16];
	int nops = acls_ops(o, type, ops), n = 0;

	for (int k = 0; k < nops; k++) {
		n = acls_who(o, "allow", RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, ops[k], e, n);
		n = acls_who(o, "deny", RD_KAFKA_ACL_PERMISSION_TYPE_DENY, ops[k], e, n);
	}
	return n;
}

/* librdkafka's object for resource r with entry e (a filter when filter); exits 1 with librdkafka's reason. */
static void *acls_binding(const struct acls_res *r, const struct acls_entry *e, bool filter)
{
	char errstr[256] = "";
	void *b = filter ? (void *)rd_kafka_AclBindingFilter_new(
				   r->type, r->name, r->pattern, e ? e->principal : NULL, e ? e->host : NULL,
				   e ? e->op : RD_KAFKA_ACL_OPERATION_ANY,
				   e ? e->perm : RD_KAFKA_ACL_PERMISSION_TYPE_ANY, errstr, sizeof(errstr))
			 : (void *)rd_kafka_AclBinding_new(r->type, r->name, r->pattern, e->principal, e->host, e->op,
							   e->perm, errstr, sizeof(errstr));

	if (!b)
		kafka_die("Error while executing ACL command: %s resource %s: %s", acls_type_name(r->type), r->name,
			  r->type == RES_TRANSACTIONAL_ID ? "transactional id ACLs are not expressible with librdkafka "
							    "2.0.2's Admin API"
							  : errstr);
	return b;
}

/* Issues one admin call on q and returns its result event (caller destroys). */
static rd_kafka_event_t *acls_call(rd_kafka_t *rk, rd_kafka_admin_op_t api, void **items, size_t n)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, api);
	rd_kafka_event_t *ev;

	if (api == RD_KAFKA_ADMIN_OP_CREATEACLS)
		rd_kafka_CreateAcls(rk, (rd_kafka_AclBinding_t **)items, n, ao, q);
	else if (api == RD_KAFKA_ADMIN_OP_DELETEACLS)
		rd_kafka_DeleteAcls(rk, (rd_kafka_AclBindingFilter_t **)items, n, ao, q);
	else
		rd_kafka_DescribeAcls(rk, items[0], ao, q);
	ev = kafka_admin_wait(q);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return ev;
}

/* Prints the bindings of acls grouped by resource pattern, in Kafka's "Current ACLs" form. */
static void acls_print_current(const rd_kafka_AclBinding_t **acls, size_t n)
{
	bool *done = calloc(n ? n : 1, sizeof(*done));

	if (!done)
		kafka_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		const rd_kafka_AclBinding_t *a = acls[i];

		if (done[i])
			continue;
		printf("Current ACLs for resource `");
		acls_print_res(rd_kafka_AclBinding_restype(a), rd_kafka_AclBinding_name(a),
			       rd_kafka_AclBinding_resource_pattern_type(a));
		printf("`: \n ");
		for (size_t j = i; j < n; j++) {
			const rd_kafka_AclBinding_t *b = acls[j];

			if (done[j] || rd_kafka_AclBinding_restype(b) != rd_kafka_AclBinding_restype(a) ||
			    rd_kafka_AclBinding_resource_pattern_type(b) !=
				    rd_kafka_AclBinding_resource_pattern_type(a) ||
			    strcmp(rd_kafka_AclBinding_name(b), rd_kafka_AclBinding_name(a)))
				continue;
			done[j] = true;
			printf("%s\t", j > i ? "\n" : "");
			acls_print_entry(rd_kafka_AclBinding_principal(b), rd_kafka_AclBinding_host(b),
					 rd_kafka_AclBinding_operation(b), rd_kafka_AclBinding_permission_type(b));
		}
		printf(" \n\n");
	}
	free(done);
}

/* DescribeAcls of filter r (NULL: every ACL) and prints them. */
static void acls_list_one(rd_kafka_t *rk, const struct acls_res *r)
{
	struct acls_res any = { RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY };
	void *f = acls_binding(r ? r : &any, NULL, true);
	rd_kafka_event_t *ev = acls_call(rk, RD_KAFKA_ADMIN_OP_DESCRIBEACLS, &f, 1);
	const rd_kafka_DescribeAcls_result_t *res = rd_kafka_event_DescribeAcls_result(ev);
	size_t n = 0;
	const rd_kafka_AclBinding_t **acls = res ? rd_kafka_DescribeAcls_result_acls(res, &n) : NULL;

	if (rd_kafka_event_error(ev))
		kafka_die("Error while executing ACL command: %s", rd_kafka_event_error_string(ev));
	acls_print_current(acls, n);
	rd_kafka_event_destroy(ev);
	rd_kafka_AclBinding_destroy(f);
}

static void acls_list(rd_kafka_t *rk, const struct acls_res *res, int nres)
{
	if (!nres)
		acls_list_one(rk, NULL);
	for (int i = 0; i < nres; i++)
		acls_list_one(rk, &res[i]);
}

static void acls_print_adding(const char *verb, const struct acls_res *r, const struct acls_entry *e, int n)
{
	printf("%s ACLs for resource `", verb);
	acls_print_res(r->type, r->name, r->pattern);
	printf("`: \n ");
	for (int i = 0; i < n; i++) {
		printf("%s\t", i ? "\n" : "");
		acls_print_entry(e[i].principal, e[i].host, e[i].op, e[i].perm);
	}
	printf(" \n\n");
}

static void acls_add(rd_kafka_t *rk, const struct opts *o, const struct acls_res *res, int nres)
{
	static void *b[ACLS_MAX];
	struct acls_entry e[ACLS_MAX];
	const rd_kafka_acl_result_t **results;
	rd_kafka_event_t *ev;
	size_t nb = 0, nr = 0;

	for (int i = 0; i < nres; i++) {
		int n = acls_entries(o, res[i].type, e);

		if (!n)
			continue;
		acls_print_adding("Adding", &res[i], e, n);
		for (int j = 0; j < n && nb < ACLS_MAX; j++)
			b[nb++] = acls_binding(&res[i], &e[j], false);
	}
	if (!nb)
		opt_usage_error(
			o, "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.");
	ev = acls_call(rk, RD_KAFKA_ADMIN_OP_CREATEACLS, b, nb);
	results = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &nr);
	for (size_t i = 0; i < nr; i++)
		if (rd_kafka_acl_result_error(results[i]))
			kafka_die("Error while executing ACL command: %s",
				  rd_kafka_error_string(rd_kafka_acl_result_error(results[i])));
	rd_kafka_event_destroy(ev);
	rd_kafka_AclBinding_destroy_array((rd_kafka_AclBinding_t **)b, nb);
	acls_list(rk, res, nres);
}

/* Asks on stdout, reads a line on stdin: true for "y" (Kafka's confirmAction). */
static bool acls_confirm(const struct opts *o, const struct acls_res *r, const struct acls_entry *e, int n)
{
	char line[16];

	if (opt_has(o, "force"))
		return true;
	if (!n) {
		printf("Are you sure you want to delete all ACLs for resource filter `");
		acls_print_res(r->type, r->name, r->pattern);
		printf("`? (y/n)\n");
	} else {
		printf("Are you sure you want to remove ACLs: \n ");
		for (int i = 0; i < n; i++) {
			printf("%s\t", i ? "\n" : "");
			acls_print_entry(e[i].principal, e[i].host, e[i].op, e[i].perm);
		}
		printf(" \n from resource filter `");
		acls_print_res(r->type, r->name, r->pattern);
		printf("`? (y/n)\n");
	}
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) && (line[0] == 'y' || line[0] == 'Y');
}

static void acls_remove(rd_kafka_t *rk, const struct opts *o, const struct acls_res *res, int nres)
{
	for (int i = 0; i < nres; i++) {
		static void *f[ACLS_MAX];
		struct acls_entry e[ACLS_MAX];
		int n = acls_entries(o, res[i].type, e), nf = 0;
		bool any = !opt_has(o, "allow-principal") && !opt_has(o, "deny-principal");
		const rd_kafka_DeleteAcls_result_response_t **rs;
		rd_kafka_event_t *ev;
		size_t nr = 0;

		if (!acls_confirm(o, &res[i], e, any ? 0 : n))
			continue;
		if (any)
			f[nf++] = acls_binding(&res[i], NULL, true);
		for (int j = 0; !any && j < n; j++)
			f[nf++] = acls_binding(&res[i], &e[j], true);
		ev = acls_call(rk, RD_KAFKA_ADMIN_OP_DELETEACLS, f, (size_t)nf);
		rs = rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &nr);
		for (size_t j = 0; j < nr; j++)
			if (rd_kafka_DeleteAcls_result_response_error(rs[j]))
				kafka_die("Error while executing ACL command: %s",
					  rd_kafka_error_string(rd_kafka_DeleteAcls_result_response_error(rs[j])));
		rd_kafka_event_destroy(ev);
		rd_kafka_AclBinding_destroy_array((rd_kafka_AclBindingFilter_t **)f, (size_t)nf);
	}
	acls_list(rk, res, nres);
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	int actions = opt_has(o, "add") + opt_has(o, "remove") + opt_has(o, "list");
	struct acls_res res[ACLS_MAX];
	int nres;
	rd_kafka_t *rk;

	opt_require(o, "bootstrap-server");
	if (actions != 1)
		opt_usage_error(o, "Command must include exactly one action: --list, --add, --remove. ");
	if (opt_has(o, "consumer") && !opt_has(o, "group") && !opt_has(o, "list"))
		opt_usage_error(o, "With --consumer you must specify a --group");
	if (opt_has(o, "idempotent") && !opt_has(o, "producer"))
		opt_usage_error(o, "The --idempotent option is only available if --producer is set");
	nres = acls_resources(o, !opt_has(o, "add"), res);
	if (opt_has(o, "producer") && opt_has(o, "idempotent") && !opt_has(o, "cluster") && nres < ACLS_MAX)
		res[nres++] = (struct acls_res){ RES_CLUSTER, "kafka-cluster", acls_pattern(o, false) };
	if (!nres && !opt_has(o, "list"))
		opt_usage_error(o, "You must provide at least one resource: --topic <topic> or --cluster or --group "
				   "<group> or --transactional-id <id>");
	rk = kafka_admin_connect(o);
	if (opt_has(o, "add"))
		acls_add(rk, o, res, nres);
	else if (opt_has(o, "remove"))
		acls_remove(rk, o, res, nres);
	else
		acls_list(rk, res, nres);
	rd_kafka_destroy(rk);
	opts_free(o);
	return 0;
}
