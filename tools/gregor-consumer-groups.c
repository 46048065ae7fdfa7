/* gregor-consumer-groups - kafka-consumer-groups.sh for Gregor: list,
 * describe (committed offset, log end offset and lag per partition, with
 * the member that owns it), delete groups, and reset a group's committed
 * offsets, all through librdkafka's Admin API.
 *
 * Flags and output follow Kafka's ConsumerGroupCommand: --list [--state],
 * --describe --group G, --delete --group G [--group G2 ...],
 * --reset-offsets --group G (--topic T[:p,p...] ... | --all-topics)
 * (--to-earliest | --to-latest | --to-offset N) [--execute | --dry-run].
 * Resetting needs an inactive group (Empty or Dead), as in Kafka; without
 * --execute the new offsets are only printed.
 *
 * Exit status: 0 ok, 1 failure (broker unreachable, an unknown group, a
 * failed deletion or reset), 2 usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>", "REQUIRED: The server(s) to connect to." },
	{ "command-config", true, false, "<String: command config property file>",
	  "Property file containing configs to be passed to Admin Client." },
	{ "list", false, false, NULL, "List all consumer groups." },
	{ "describe", false, false, NULL,
	  "Describe consumer group and list offset lag (number of messages not yet "
	  "processed) related to given group." },
	{ "delete", false, false, NULL,
	  "Pass in groups to delete topic partition offsets and ownership "
	  "information over the entire consumer group." },
	{ "reset-offsets", false, false, NULL,
	  "Reset offsets of consumer group. Has 2 execution options: --dry-run "
	  "(the default) and --execute." },
	{ "group", true, true, "<String: consumer group>", "The consumer group we wish to act on." },
	{ "topic", true, true, "<String: topic>",
	  "The topic whose consumer group information should be reset: 'topic' or 'topic:0,1'." },
	{ "all-topics", false, false, NULL, "Consider all topics assigned to a group in the reset-offsets process." },
	{ "to-earliest", false, false, NULL, "Reset offsets to earliest offset." },
	{ "to-latest", false, false, NULL, "Reset offsets to latest offset." },
	{ "to-offset", true, false, "<Long: offset>", "Reset offsets to a specific offset." },
	{ "execute", false, false, NULL, "Execute operation. Supported operations: reset-offsets." },
	{ "dry-run", false, false, NULL, "Only show results without executing changes on Consumer Groups." },
	{ "state", false, false, NULL, "When specified with '--list', it displays the state of all groups." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-consumer-groups",
				    "This tool helps to list all consumer groups, describe a consumer group, delete "
				    "consumer group info, or reset consumer group offsets.",
				    defs };

/* One row of --describe / --reset-offsets. */
struct cg_row {
	char *topic;
	int32_t partition;
	int64_t current, log_end; /* current -1: no committed offset */
	const char *consumer_id, *host, *client_id;
};

struct cg_rows {
	struct cg_row *v;
	int n, cap;
};

typedef int cg_action_fn(rd_kafka_t *rk, const struct opts *o);

static struct cg_row *cg_row_add(struct cg_rows *rows, const char *topic, int32_t partition)
{
	for (int i = 0; i < rows->n; i++)
		if (!strcmp(rows->v[i].topic, topic) && rows->v[i].partition == partition)
			return &rows->v[i];
	if (rows->n == rows->cap) {
		rows->cap = rows->cap ? rows->cap * 2 : 16;
		rows->v = realloc(rows->v, (size_t)rows->cap * sizeof(*rows->v));
		if (!rows->v)
			kafka_die("out of memory");
	}
	rows->v[rows->n] = (struct cg_row){ strdup(topic), partition, -1, -1, "-", "-", "-" };
	return &rows->v[rows->n++];
}

static int cg_row_cmp(const void *a, const void *b)
{
	const struct cg_row *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static void cg_rows_free(struct cg_rows *rows)
{
	for (int i = 0; i < rows->n; i++)
		free(rows->v[i].topic);
	free(rows->v);
}

/* Runs an admin call on a fresh queue and returns its result event (caller destroys). */
static rd_kafka_event_t *cg_wait(rd_kafka_queue_t *q)
{
	rd_kafka_event_t *ev = kafka_admin_wait(q);

	rd_kafka_queue_destroy(q);
	return ev;
}

static int cg_list(rd_kafka_t *rk, const struct opts *o)
{
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_ConsumerGroupListing_t **v;
	rd_kafka_event_t *ev;
	size_t n;

	rd_kafka_ListConsumerGroups(rk, ao, q);
	ev = cg_wait(q);
	v = rd_kafka_ListConsumerGroups_result_valid(rd_kafka_event_ListConsumerGroups_result(ev), &n);
	const rd_kafka_ConsumerGroupListing_t **sorted = calloc(n + 1, sizeof(*sorted));

	if (n)
		memcpy(sorted, v, n * sizeof(*v));
	for (size_t i = 1; i < n; i++) /* insertion sort by group id */
		for (size_t j = i; j > 0 && strcmp(rd_kafka_ConsumerGroupListing_group_id(sorted[j - 1]),
						   rd_kafka_ConsumerGroupListing_group_id(sorted[j])) > 0;
		     j--) {
			const rd_kafka_ConsumerGroupListing_t *t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	if (opt_has(o, "state"))
		printf("%-40s %s\n", "GROUP", "STATE");
	for (size_t i = 0; i < n; i++) {
		if (opt_has(o, "state"))
			printf("%-40s %s\n", rd_kafka_ConsumerGroupListing_group_id(sorted[i]),
			       rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupListing_state(sorted[i])));
		else
			printf("%s\n", rd_kafka_ConsumerGroupListing_group_id(sorted[i]));
	}
	free(sorted);
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(ao);
	return 0;
}

/* DescribeConsumerGroups for one group: its state; members' partitions go into rows. */
static rd_kafka_consumer_group_state_t cg_describe_group(rd_kafka_t *rk, const char *group, struct cg_rows *rows,
							 rd_kafka_event_t **evp)
{
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_ConsumerGroupDescription_t **d;
	size_t n;

	rd_kafka_DescribeConsumerGroups(rk, &group, 1, ao, q);
	*evp = cg_wait(q);
	rd_kafka_AdminOptions_destroy(ao);
	d = rd_kafka_DescribeConsumerGroups_result_groups(rd_kafka_event_DescribeConsumerGroups_result(*evp), &n);
	if (n != 1)
		kafka_die("DescribeConsumerGroups answered %zu groups for one", n);
	if (rd_kafka_ConsumerGroupDescription_error(d[0]))
		kafka_die("cannot describe group '%s': %s", group,
			  rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(d[0])));
	for (size_t i = 0; rows && i < rd_kafka_ConsumerGroupDescription_member_count(d[0]); i++) {
		const rd_kafka_MemberDescription_t *m = rd_kafka_ConsumerGroupDescription_member(d[0], i);
		const rd_kafka_topic_partition_list_t *parts =
			rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(m));

		for (int j = 0; parts && j < parts->cnt; j++) {
			struct cg_row *r = cg_row_add(rows, parts->elems[j].topic, parts->elems[j].partition);

			r->consumer_id = rd_kafka_MemberDescription_consumer_id(m);
			r->host = rd_kafka_MemberDescription_host(m);
			r->client_id = rd_kafka_MemberDescription_client_id(m);
		}
	}
	return rd_kafka_ConsumerGroupDescription_state(d[0]);
}

/* The group's committed offsets into rows. */
static void cg_committed(rd_kafka_t *rk, const char *group, struct cg_rows *rows)
{
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
	const rd_kafka_group_result_t **res;
	const rd_kafka_topic_partition_list_t *parts;
	rd_kafka_event_t *ev;
	size_t n;

	rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, ao, q);
	ev = cg_wait(q);
	res = rd_kafka_ListConsumerGroupOffsets_result_groups(rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
	if (n != 1 || rd_kafka_group_result_error(res[0]))
		kafka_die("cannot fetch the committed offsets of group '%s': %s", group,
			  n == 1 ? rd_kafka_error_string(rd_kafka_group_result_error(res[0])) : "no result");
	parts = rd_kafka_group_result_partitions(res[0]);
	for (int i = 0; parts && i < parts->cnt; i++)
		if (parts->elems[i].offset >= 0)
			cg_row_add(rows, parts->elems[i].topic, parts->elems[i].partition)->current =
				parts->elems[i].offset;
	rd_kafka_event_destroy(ev);
	rd_kafka_ListConsumerGroupOffsets_destroy(req);
	rd_kafka_AdminOptions_destroy(ao);
}

static void cg_watermarks(rd_kafka_t *rk, const struct cg_row *r, int64_t *lo, int64_t *hi)
{
	rd_kafka_resp_err_t err =
		rd_kafka_query_watermark_offsets(rk, r->topic, r->partition, lo, hi, kafka_timeout_ms());

	if (err)
		kafka_die("cannot read the offsets of %s-%d: %s", r->topic, r->partition, kafka_err_name(err));
}

static void cg_print_offset(int64_t v)
{
	if (v < 0)
		printf(" %-15s", "-");
	else
		printf(" %-15" PRId64, v);
}

static int cg_describe(rd_kafka_t *rk, const struct opts *o)
{
	const char *group = opt_str(o, "group", NULL);
	struct cg_rows rows = { 0 };
	rd_kafka_event_t *ev;
	rd_kafka_consumer_group_state_t st = cg_describe_group(rk, group, &rows, &ev);

	if (st == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD) {
		fprintf(stderr, "Error: Consumer group '%s' does not exist.\n", group);
		exit(1);
	}
	cg_committed(rk, group, &rows);
	if (st == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY)
		printf("\nConsumer group '%s' has no active members.\n", group);
	qsort(rows.v, (size_t)rows.n, sizeof(*rows.v), cg_row_cmp);
	printf("\n%-30s %-30s %-10s %-15s %-15s %-15s %-50s %-20s %s\n", "GROUP", "TOPIC", "PARTITION",
	       "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID");
	for (int i = 0; i < rows.n; i++) {
		struct cg_row *r = &rows.v[i];
		int64_t lo;

		cg_watermarks(rk, r, &lo, &r->log_end);
		printf("%-30s %-30s %-10d", group, r->topic, r->partition);
		cg_print_offset(r->current);
		cg_print_offset(r->log_end);
		cg_print_offset(r->current >= 0 ? r->log_end - r->current : -1);
		printf(" %-50s %-20s %s\n", r->consumer_id, r->host, r->client_id);
	}
	cg_rows_free(&rows);
	rd_kafka_event_destroy(ev);
	return 0;
}

static int cg_delete(rd_kafka_t *rk, const struct opts *o)
{
	int n = opt_count(o, "group"), failed = 0;
	rd_kafka_DeleteGroup_t **del = calloc((size_t)n, sizeof(*del));
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_group_result_t **res;
	rd_kafka_event_t *ev;
	size_t cnt;

	for (int i = 0; i < n; i++)
		del[i] = rd_kafka_DeleteGroup_new(opt_nth(o, "group", i));
	rd_kafka_DeleteGroups(rk, del, (size_t)n, ao, q);
	ev = cg_wait(q);
	res = rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &cnt);
	for (size_t i = 0; i < cnt; i++)
		failed += rd_kafka_group_result_error(res[i]) != NULL;
	if (failed) {
		printf("Error: Deletion of some consumer groups failed:\n");
		for (size_t i = 0; i < cnt; i++)
			if (rd_kafka_group_result_error(res[i]))
				printf("* Group '%s' could not be deleted due to: %s\n",
				       rd_kafka_group_result_name(res[i]),
				       kafka_err_name(rd_kafka_error_code(rd_kafka_group_result_error(res[i]))));
	} else {
		printf("Deletion of requested consumer groups (");
		for (size_t i = 0; i < cnt; i++)
			printf("%s'%s'", i ? ", " : "", rd_kafka_group_result_name(res[i]));
		printf(") was successful.\n");
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_DeleteGroup_destroy_array(del, (size_t)n);
	free(del);
	rd_kafka_AdminOptions_destroy(ao);
	return failed ? 1 : 0;
}

/* Rows for --topic T / T:p,p (every partition when none is named). */
static void cg_topic_rows(rd_kafka_t *rk, const char *spec, struct cg_rows *rows)
{
	char *topic = strdup(spec), *colon = strchr(topic, ':');
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *rkt;

	if (colon) {
		*colon = '\0';
		for (char *p = strtok(colon + 1, ","); p; p = strtok(NULL, ","))
			cg_row_add(rows, topic, (int32_t)strtol(p, NULL, 10));
		free(topic);
		return;
	}
	rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rd_kafka_metadata(rk, 0, rkt, &md, kafka_timeout_ms()) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    md->topic_cnt != 1 || md->topics[0].err)
		kafka_die("topic '%s' does not exist", topic);
	for (int i = 0; i < md->topics[0].partition_cnt; i++)
		cg_row_add(rows, topic, md->topics[0].partitions[i].id);
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	free(topic);
}

/* Alters the committed offsets to rows[].current; exits 1 on any error. */
static void cg_alter(rd_kafka_t *rk, const char *group, const struct cg_rows *rows)
{
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(rows->n);
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConsumerGroupOffsets_t *req;
	const rd_kafka_group_result_t **res;
	const rd_kafka_topic_partition_list_t *out;
	rd_kafka_event_t *ev;
	size_t n;

	for (int i = 0; i < rows->n; i++)
		rd_kafka_topic_partition_list_add(parts, rows->v[i].topic, rows->v[i].partition)->offset =
			rows->v[i].current;
	req = rd_kafka_AlterConsumerGroupOffsets_new(group, parts);
	rd_kafka_AlterConsumerGroupOffsets(rk, &req, 1, ao, q);
	ev = cg_wait(q);
	res = rd_kafka_AlterConsumerGroupOffsets_result_groups(rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
	if (n != 1 || rd_kafka_group_result_error(res[0]))
		kafka_die("resetting the offsets of group '%s' failed: %s", group,
			  n == 1 ? rd_kafka_error_string(rd_kafka_group_result_error(res[0])) : "no result");
	out = rd_kafka_group_result_partitions(res[0]);
	for (int i = 0; out && i < out->cnt; i++)
		if (out->elems[i].err)
			kafka_die("resetting %s-%d failed: %s", out->elems[i].topic, out->elems[i].partition,
				  kafka_err_name(out->elems[i].err));
	rd_kafka_event_destroy(ev);
	rd_kafka_AlterConsumerGroupOffsets_destroy(req);
	rd_kafka_topic_partition_list_destroy(parts);
	rd_kafka_AdminOptions_destroy(ao);
}

static int cg_reset(rd_kafka_t *rk, const struct opts *o)
{
	const char *group = opt_str(o, "group", NULL);
	int64_t to = opt_has(o, "to-offset") ? opt_int(o, "to-offset", 0, 0, INT64_MAX) : -1;
	struct cg_rows rows = { 0 };
	rd_kafka_event_t *ev;
	rd_kafka_consumer_group_state_t st = cg_describe_group(rk, group, NULL, &ev);

	if (st != RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY && st != RD_KAFKA_CONSUMER_GROUP_STATE_DEAD) {
		fprintf(stderr,
			"Error: Assignments can only be reset if the group '%s' is inactive, but the current "
			"state is %s.\n",
			group, rd_kafka_consumer_group_state_name(st));
		exit(1);
	}
	rd_kafka_event_destroy(ev);
	if (opt_has(o, "all-topics"))
		cg_committed(rk, group, &rows);
	for (int i = 0; i < opt_count(o, "topic"); i++)
		cg_topic_rows(rk, opt_nth(o, "topic", i), &rows);
	qsort(rows.v, (size_t)rows.n, sizeof(*rows.v), cg_row_cmp);
	printf("\n%-30s %-30s %-10s %s\n", "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET");
	for (int i = 0; i < rows.n; i++) {
		struct cg_row *r = &rows.v[i];
		int64_t lo, hi;

		cg_watermarks(rk, r, &lo, &hi);
		r->current = opt_has(o, "to-earliest") ? lo
			     : opt_has(o, "to-latest") ? hi
			     : to < lo                 ? lo
			     : to > hi                 ? hi
						       : to;
		printf("%-30s %-30s %-10d %" PRId64 "\n", group, r->topic, r->partition, r->current);
	}
	if (opt_has(o, "execute"))
		cg_alter(rk, group, &rows);
	else if (!opt_has(o, "dry-run"))
		printf("WARN: No action will be performed as the --execute option is missing.\n");
	cg_rows_free(&rows);
	return 0;
}

static const struct {
	const char *name;
	cg_action_fn *fn;
} cg_actions[] = {
	{ "list", cg_list },
	{ "describe", cg_describe },
	{ "delete", cg_delete },
	{ "reset-offsets", cg_reset },
};

/* Kafka's checks: one action, and the options each action needs. */
static cg_action_fn *cg_check_args(const struct opts *o)
{
	cg_action_fn *fn = NULL;
	const char *name = NULL;
	int n = 0;

	for (size_t i = 0; i < sizeof(cg_actions) / sizeof(cg_actions[0]); i++)
		if (opt_has(o, cg_actions[i].name)) {
			fn = cg_actions[i].fn;
			name = cg_actions[i].name;
			n++;
		}
	if (n != 1)
		opt_usage_error(
			o, "Command must include exactly one action: --list, --describe, --delete, --reset-offsets");
	opt_require(o, "bootstrap-server");
	if (strcmp(name, "list"))
		opt_require(o, "group");
	if ((!strcmp(name, "describe") || !strcmp(name, "reset-offsets")) && opt_count(o, "group") != 1)
		opt_usage_error(o, "Option \"[%s]\" takes exactly one --group", name);
	if (!strcmp(name, "reset-offsets")) {
		if (opt_has(o, "to-earliest") + opt_has(o, "to-latest") + opt_has(o, "to-offset") != 1)
			opt_usage_error(o,
					"Option \"[reset-offsets]\" needs exactly one of --to-earliest, --to-latest, "
					"--to-offset");
		if (opt_has(o, "all-topics") == (opt_count(o, "topic") > 0))
			opt_usage_error(o, "Option \"[reset-offsets]\" takes one of these options: all-topics, topic");
		if (opt_has(o, "execute") && opt_has(o, "dry-run"))
			opt_usage_error(o, "Option \"[execute]\" can't be used with option \"[dry-run]\"");
	} else if (opt_has(o, "topic") || opt_has(o, "all-topics") || opt_has(o, "execute") ||
		   opt_has(o, "to-earliest") || opt_has(o, "to-latest") || opt_has(o, "to-offset")) {
		opt_usage_error(o, "Options --topic, --all-topics, --to-* and --execute go with --reset-offsets only");
	}
	return fn;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	cg_action_fn *fn = cg_check_args(o);
	rd_kafka_t *rk = kafka_admin_connect(o);
	int rc = fn(rk, o);

	rd_kafka_destroy(rk);
	opts_free(o);
	return rc;
}
