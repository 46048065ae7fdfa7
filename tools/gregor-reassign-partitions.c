/* gregor-reassign-partitions - kafka-reassign-partitions.sh for Gregor:
 * moves partitions to other replicas (KIP-455) through the controller.
 *
 *     gregor-reassign-partitions --bootstrap-server H:P [--command-config F]
 *         --topics-to-move-json-file F --broker-list 1,2,3 --generate
 *       | --reassignment-json-file F (--execute | --verify | --cancel)
 *       | --list
 *
 * The files have Kafka's shapes: {"version":1,"topics":[{"topic":"t"}]}
 * to generate, {"version":1,"partitions":[{"topic":"t","partition":0,
 * "replicas":[1,2]}]} to execute, verify and cancel.  --generate proposes
 * the topics' partitions over the broker list with Kafka's round-robin
 * (first replica index p + start, then shifted followers; start and shift
 * 0 here, where Kafka picks them at random).  Output follows Kafka's
 * ReassignPartitionsCommand ("Current partition replica assignment",
 * "Proposed partition reassignment configuration", "Successfully started
 * partition reassignments for t-0,t-1", "Status of partition reassignment:",
 * "Reassignment of partition t-0 is completed.", ...).  Throttles and log
 * dirs are not supported.
 *
 * librdkafka 2.0.2 has no reassignment Admin API, so AlterPartitionReassignments
 * and ListPartitionReassignments go through tools/lib/wire.h to the
 * controller librdkafka's metadata names; the current assignment is
 * librdkafka's metadata.
 *
 * Exit status: 0 ok, 1 a partition refused or still moving (--verify) or a failure, 2 usage error.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kafka.h"
#include "lib/opt.h"
#include "lib/wire.h"
#include "proto/kerr.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: Server(s) to use for bootstrapping>",
	  "the server(s) to use for bootstrapping. REQUIRED." },
	{ "command-config", true, false, "<String: Admin client property file>",
	  "Property file containing configs to be passed to Admin Client." },
	{ "topics-to-move-json-file", true, false, "<String: topics to reassign json file path>",
	  "Generate a reassignment configuration to move the partitions of the specified topics to the list of "
	  "brokers specified by the --broker-list option. The format to use is - {\"topics\": [{\"topic\": "
	  "\"foo\"},{\"topic\": \"foo1\"}], \"version\":1}" },
	{ "broker-list", true, false, "<String: brokerlist>",
	  "The list of brokers to which the partitions need to be reassigned in the form \"0,1,2\". This is "
	  "required if --topics-to-move-json-file is used to generate reassignment configuration" },
	{ "reassignment-json-file", true, false, "<String: manual assignment json file path>",
	  "The JSON file with the partition reassignment configuration." },
	{ "generate", false, false, NULL, "Generate a candidate partition reassignment configuration." },
	{ "execute", false, false, NULL,
	  "Kick off the reassignment as specified by the --reassignment-json-file option." },
	{ "verify", false, false, NULL,
	  "Verify if the reassignment completed as specified by the --reassignment-json-file option." },
	{ "cancel", false, false, NULL,
	  "Cancel an active reassignment as specified by the --reassignment-json-file option." },
	{ "list", false, false, NULL, "List all active partition reassignments." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-reassign-partitions",
				    "This tool helps to move topic partitions between replicas.", defs };

#define RP_REPLICAS_MAX 16

/* One partition of a file, or of the cluster's assignment. */
struct rp_part {
	char topic[256];
	int32_t partition;
	int32_t n;
	int32_t replicas[RP_REPLICAS_MAX];
};

struct rp_list {
	struct rp_part *v;
	int n;
};

static struct arena rp_arena;

static void rp_push(struct rp_list *l, const struct rp_part *p)
{
	struct rp_part *v = realloc(l->v, sizeof(*v) * (size_t)(l->n + 1));

	if (!v)
		kafka_die("out of memory");
	l->v = v;
	l->v[l->n++] = *p;
}

static json_t *rp_load(const char *path)
{
	json_error_t e;
	json_t *root = json_load_file(path, 0, &e);

	if (!root)
		kafka_die("%s: %s (line %d)", path, e.text, e.line);
	return root;
}

/* One {"topic":..,"partition":..,"replicas":[..]} entry; false if it is not one. */
static bool rp_entry(json_t *e, struct rp_part *p)
{
	json_t *t = json_object_get(e, "topic"), *n = json_object_get(e, "partition"),
	       *r = json_object_get(e, "replicas"), *id;
	size_t i;

	memset(p, 0, sizeof(*p));
	if (!json_is_string(t) || json_string_length(t) >= sizeof(p->topic) || !json_is_integer(n) ||
	    json_integer_value(n) < 0 || json_integer_value(n) > INT32_MAX || !json_is_array(r) ||
	    json_array_size(r) > RP_REPLICAS_MAX)
		return false;
	snprintf(p->topic, sizeof(p->topic), "%s", json_string_value(t));
	p->partition = (int32_t)json_integer_value(n);
	json_array_foreach(r, i, id)
	{
		if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
			return false;
		p->replicas[p->n++] = (int32_t)json_integer_value(id);
	}
	return true;
}

/* The partitions of a reassignment file. */
static struct rp_list rp_read_reassignment(const char *path)
{
	json_t *root = rp_load(path), *parts = json_object_get(root, "partitions"), *e;
	struct rp_list l = { 0 };
	struct rp_part p;
	size_t i;

	if (!json_is_array(parts))
		kafka_die("%s: no \"partitions\" array", path);
	json_array_foreach(parts, i, e)
	{
		if (!rp_entry(e, &p))
			kafka_die("%s: each partition needs \"topic\", \"partition\" and \"replicas\"", path);
		rp_push(&l, &p);
	}
	json_decref(root);
	if (!l.n)
		kafka_die("%s: no partition listed", path);
	return l;
}

/* The current assignment of every partition of the topics named (NULL: of the partitions in want). */
static struct rp_list rp_current(rd_kafka_t *rk, const struct rp_list *want, json_t *topics)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	struct rp_list l = { 0 };

	for (int t = 0; t < md->topic_cnt; t++)
		for (int k = 0; k < md->topics[t].partition_cnt; k++) {
			const rd_kafka_metadata_partition_t *mp = &md->topics[t].partitions[k];
			struct rp_part p = { .partition = mp->id };
			bool wanted = false;
			size_t i;
			json_t *e;

			for (int j = 0; want && j < want->n && !wanted; j++)
				wanted = want->v[j].partition == mp->id &&
					 !strcmp(want->v[j].topic, md->topics[t].topic);
			json_array_foreach(topics, i, e) wanted |=
				json_is_string(json_object_get(e, "topic")) &&
				!strcmp(json_string_value(json_object_get(e, "topic")), md->topics[t].topic);
			if (!wanted)
				continue;
			snprintf(p.topic, sizeof(p.topic), "%s", md->topics[t].topic);
			for (int r = 0; r < mp->replica_cnt && r < RP_REPLICAS_MAX; r++)
				p.replicas[p.n++] = mp->replicas[r];
			rp_push(&l, &p);
		}
	rd_kafka_metadata_destroy(md);
	return l;
}

static int rp_cmp(const void *a, const void *b)
{
	const struct rp_part *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* Prints l as Kafka's JSON ({"version":1,"partitions":[...]} with "log_dirs" all "any"). */
static void rp_print_json(struct rp_list *l)
{
	json_t *root = json_object(), *parts = json_array();
	char *s;

	qsort(l->v, (size_t)l->n, sizeof(*l->v), rp_cmp);
	for (int i = 0; i < l->n; i++) {
		json_t *e = json_object(), *r = json_array(), *d = json_array();

		for (int32_t k = 0; k < l->v[i].n; k++) {
			json_array_append_new(r, json_integer(l->v[i].replicas[k]));
			json_array_append_new(d, json_string("any"));
		}
		json_object_set_new(e, "topic", json_string(l->v[i].topic));
		json_object_set_new(e, "partition", json_integer(l->v[i].partition));
		json_object_set_new(e, "replicas", r);
		json_object_set_new(e, "log_dirs", d);
		json_array_append_new(parts, e);
	}
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "partitions", parts);
	s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		kafka_die("out of memory");
	printf("%s\n", s);
	free(s);
	json_decref(root);
}

/* "1,2,3" into ids (exits 2 on a bad list). */
static int rp_broker_list(const struct opts *o, int32_t *ids, int cap)
{
	const char *s = opt_str(o, "broker-list", "");
	int n = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > INT32_MAX || n == cap || (*end && *end != ','))
			opt_usage_error(o, "--broker-list must be broker ids separated by commas");
		ids[n++] = (int32_t)v;
		s = *end ? end + 1 : end;
	}
	if (!n)
		opt_usage_error(o, "--broker-list is empty");
	return n;
}

/* Kafka's replica placement without racks, start index and shift 0: the proposal for cur. */
static struct rp_list rp_propose(const struct rp_list *cur, const int32_t *brokers, int nb)
{
	struct rp_list l = { 0 };

	for (int i = 0; i < cur->n; i++) {
		struct rp_part p = cur->v[i];
		int32_t first = p.partition % nb, shift = (p.partition / nb) % (nb > 1 ? nb - 1 : 1);

		if (p.n > nb)
			kafka_die("Replication factor: %d larger than available brokers: %d.", p.n, nb);
		for (int32_t r = 0; r < p.n; r++)
			p.replicas[r] = brokers[r == 0 ? first : (first + 1 + (shift + r - 1) % (nb - 1)) % nb];
		rp_push(&l, &p);
	}
	return l;
}

static int rp_generate(const struct opts *o, rd_kafka_t *rk)
{
	json_t *root = rp_load(opt_str(o, "topics-to-move-json-file", NULL)), *topics = json_object_get(root, "topics");
	int32_t brokers[1024];
	int nb = rp_broker_list(o, brokers, 1024);
	struct rp_list cur, prop;

	if (!json_is_array(topics) || !json_array_size(topics))
		kafka_die("%s: no \"topics\" array", opt_str(o, "topics-to-move-json-file", ""));
	cur = rp_current(rk, NULL, topics);
	prop = rp_propose(&cur, brokers, nb);
	printf("Current partition replica assignment\n");
	rp_print_json(&cur);
	printf("\nProposed partition reassignment configuration\n");
	rp_print_json(&prop);
	json_decref(root);
	free(cur.v);
	free(prop.v);
	return 0;
}

static struct wire *rp_controller(rd_kafka_t *rk, const struct opts *o)
{
	int32_t ctl = rd_kafka_controllerid(rk, kafka_timeout_ms());

	if (ctl < 0)
		kafka_die("no controller known to the brokers at %s", opt_str(o, "bootstrap-server", ""));
	return wire_open(rk, ctl);
}

/* AlterPartitionReassignments of l (cancel: null replicas); prints the refused ones, returns their count. */
static int rp_alter(rd_kafka_t *rk, const struct opts *o, const struct rp_list *l, bool cancel, const char *what)
{
	struct AlterPartitionReassignmentsRequest req;
	struct AlterPartitionReassignmentsResponse resp;
	struct wire *wc = rp_controller(rk, o);
	int fails = 0;

	AlterPartitionReassignmentsRequest_init(&req);
	req.TimeoutMs = kafka_timeout_ms();
	req.Topics.v = arena_calloc(&rp_arena, (size_t)l->n, sizeof(*req.Topics.v));
	for (int i = 0; i < l->n; i++) { /* one topic entry per partition: the broker groups them */
		struct ReassignableTopic *t = &req.Topics.v[req.Topics.n++];
		struct ReassignablePartition *p = arena_calloc(&rp_arena, 1, sizeof(*p));

		ReassignableTopic_init(t);
		ReassignablePartition_init(p);
		t->Name = (struct kstr){ l->v[i].topic, (int32_t)strlen(l->v[i].topic) };
		p->PartitionIndex = l->v[i].partition;
		p->Replicas.n = cancel ? -1 : l->v[i].n;
		p->Replicas.v = cancel ? NULL : l->v[i].replicas;
		t->Partitions.v = p;
		t->Partitions.n = 1;
	}
	wire_call(wc, API_AlterPartitionReassignments, wire_version(wc, API_AlterPartitionReassignments, 0), &req,
		  &resp, &rp_arena);
	if (resp.ErrorCode)
		kafka_die("%s: %s", what, kafka_err_name(resp.ErrorCode));
	for (int32_t i = 0; i < resp.Responses.n; i++)
		for (int32_t k = 0; k < resp.Responses.v[i].Partitions.n; k++) {
			const struct ReassignablePartitionResponse *p = &resp.Responses.v[i].Partitions.v[k];

			if (!p->ErrorCode)
				continue;
			if (!fails++)
				printf("Error %s partition(s):\n", what);
			printf("%.*s-%" PRId32 ": %s\n", (int)resp.Responses.v[i].Name.len, resp.Responses.v[i].Name.p,
			       p->PartitionIndex, kafka_err_name(p->ErrorCode));
		}
	wire_close(wc);
	return fails;
}

static void rp_print_names(const char *head, const struct rp_list *l)
{
	printf("%s", head);
	for (int i = 0; i < l->n; i++)
		printf("%s%s-%" PRId32, i ? "," : "", l->v[i].topic, l->v[i].partition);
	putchar('\n');
}

static int rp_execute(const struct opts *o, rd_kafka_t *rk)
{
	struct rp_list want = rp_read_reassignment(opt_str(o, "reassignment-json-file", NULL));
	struct rp_list cur = rp_current(rk, &want, NULL);
	int fails;

	printf("Current partition replica assignment\n\n");
	rp_print_json(&cur);
	printf("\nSave this to use as the --reassignment-json-file option during rollback\n");
	fails = rp_alter(rk, o, &want, false, "reassigning");
	if (!fails)
		rp_print_names("Successfully started partition reassignments for ", &want);
	free(want.v);
	free(cur.v);
	return fails ? 1 : 0;
}

static int rp_cancel(const struct opts *o, rd_kafka_t *rk)
{
	struct rp_list want = rp_read_reassignment(opt_str(o, "reassignment-json-file", NULL));
	int fails = rp_alter(rk, o, &want, true, "cancelling");

	if (!fails)
		rp_print_names("Successfully cancelled partition reassignments for: ", &want);
	free(want.v);
	return fails ? 1 : 0;
}

/* The reassignments under way (ListPartitionReassignments, all topics). */
static void rp_ongoing(rd_kafka_t *rk, const struct opts *o, struct ListPartitionReassignmentsResponse *resp)
{
	struct ListPartitionReassignmentsRequest req;
	struct wire *wc = rp_controller(rk, o);

	ListPartitionReassignmentsRequest_init(&req);
	req.TimeoutMs = kafka_timeout_ms();
	req.Topics.n = -1;
	wire_call(wc, API_ListPartitionReassignments, wire_version(wc, API_ListPartitionReassignments, 0), &req, resp,
		  &rp_arena);
	if (resp->ErrorCode)
		kafka_die("listing partition reassignments: %s", kafka_err_name(resp->ErrorCode));
	wire_close(wc);
}

static const struct OngoingPartitionReassignment *rp_find(const struct ListPartitionReassignmentsResponse *r,
							  const struct rp_part *p)
{
	for (int32_t i = 0; i < r->Topics.n; i++) {
		const struct OngoingTopicReassignment *t = &r->Topics.v[i];

		if ((size_t)t->Name.len != strlen(p->topic) || memcmp(t->Name.p, p->topic, (size_t)t->Name.len))
			continue;
		for (int32_t k = 0; k < t->Partitions.n; k++)
			if (t->Partitions.v[k].PartitionIndex == p->partition)
				return &t->Partitions.v[k];
	}
	return NULL;
}

static void rp_print_ids(const int32_t *v, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		printf("%s%" PRId32, i ? "," : "", v[i]);
}

static int rp_verify(const struct opts *o, rd_kafka_t *rk)
{
	struct rp_list want = rp_read_reassignment(opt_str(o, "reassignment-json-file", NULL));
	struct rp_list cur = rp_current(rk, &want, NULL);
	struct ListPartitionReassignmentsResponse ongoing;
	int pending = 0;

	rp_ongoing(rk, o, &ongoing);
	printf("Status of partition reassignment:\n");
	for (int i = 0; i < want.n; i++) {
		const struct rp_part *w = &want.v[i], *c = NULL;

		for (int k = 0; k < cur.n && !c; k++)
			if (cur.v[k].partition == w->partition && !strcmp(cur.v[k].topic, w->topic))
				c = &cur.v[k];
		if (rp_find(&ongoing, w)) {
			printf("Reassignment of partition %s-%" PRId32 " is still in progress.\n", w->topic,
			       w->partition);
			pending++;
		} else if (c && c->n == w->n && !memcmp(c->replicas, w->replicas, sizeof(int32_t) * (size_t)w->n)) {
			printf("Reassignment of partition %s-%" PRId32 " is completed.\n", w->topic, w->partition);
		} else {
			printf("There is no active reassignment of partition %s-%" PRId32 ", but replica set is ",
			       w->topic, w->partition);
			rp_print_ids(c ? c->replicas : NULL, c ? c->n : 0);
			printf(" rather than ");
			rp_print_ids(w->replicas, w->n);
			printf(".\n");
			pending++;
		}
	}
	free(want.v);
	free(cur.v);
	return pending ? 1 : 0;
}

static int rp_list_all(const struct opts *o, rd_kafka_t *rk)
{
	struct ListPartitionReassignmentsResponse r;
	int n = 0;

	rp_ongoing(rk, o, &r);
	for (int32_t i = 0; i < r.Topics.n; i++)
		for (int32_t k = 0; k < r.Topics.v[i].Partitions.n; k++) {
			const struct OngoingPartitionReassignment *p = &r.Topics.v[i].Partitions.v[k];

			if (!n++)
				printf("Current partition reassignments:\n");
			printf("%.*s-%" PRId32 ": replicas: ", (int)r.Topics.v[i].Name.len, r.Topics.v[i].Name.p,
			       p->PartitionIndex);
			rp_print_ids(p->Replicas.v, p->Replicas.n);
			printf(". adding: ");
			rp_print_ids(p->AddingReplicas.v, p->AddingReplicas.n);
			printf(". removing: ");
			rp_print_ids(p->RemovingReplicas.v, p->RemovingReplicas.n);
			printf(".\n");
		}
	if (!n)
		printf("No partition reassignments found.\n");
	return 0;
}

static rd_kafka_t *rp_connect(const struct opts *o)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
	rd_kafka_t *rk;

	kafka_conf_apply(conf, o, "command-config", NULL);
	rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	return rk;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	int actions = opt_has(o, "generate") + opt_has(o, "execute") + opt_has(o, "verify") + opt_has(o, "cancel") +
		      opt_has(o, "list");
	rd_kafka_t *rk;
	int rc;

	opt_require(o, "bootstrap-server");
	if (actions != 1)
		opt_usage_error(o,
				"Command must include exactly one action: --generate, --execute, --verify, --cancel, "
				"or --list");
	if (opt_has(o, "generate") && (!opt_has(o, "topics-to-move-json-file") || !opt_has(o, "broker-list")))
		opt_usage_error(o, "--generate needs --topics-to-move-json-file and --broker-list");
	if ((opt_has(o, "execute") || opt_has(o, "verify") || opt_has(o, "cancel")) &&
	    !opt_has(o, "reassignment-json-file"))
		opt_usage_error(o, "Missing required argument \"[reassignment-json-file]\"");
	arena_init(&rp_arena, 0);
	rk = rp_connect(o);
	if (opt_has(o, "generate"))
		rc = rp_generate(o, rk);
	else if (opt_has(o, "execute"))
		rc = rp_execute(o, rk);
	else if (opt_has(o, "verify"))
		rc = rp_verify(o, rk);
	else if (opt_has(o, "cancel"))
		rc = rp_cancel(o, rk);
	else
		rc = rp_list_all(o, rk);
	rd_kafka_destroy(rk);
	arena_release(&rp_arena);
	opts_free(o);
	return rc;
}
