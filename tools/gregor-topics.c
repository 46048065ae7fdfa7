/* gregor-topics - kafka-topics.sh for Gregor: create, delete, list,
 * describe a topic, or add partitions to it.
 *
 * Flags, messages and output follow Kafka's TopicCommand so scripts written
 * for kafka-topics.sh work with only the program name changed. --topic is a
 * regular expression (POSIX ERE, anchored, ',' meaning '|', as Kafka's
 * include list) for everything but --create. Differences from Kafka:
 * --describe omits TopicId (librdkafka 2.0.2 does not expose topic ids;
 * Kafka omits the field too when the id is unknown) and replica
 * reassignment options are not offered (single-node broker).
 *
 * Exit status: 0 ok, 1 failure (printed as Kafka's "Error while executing
 * topic command : ..."), 2 usage error.
 */
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/admin.h"
#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>",
	  "REQUIRED: The Kafka server to connect to." },
	{ "command-config", true, false, "<String: command config property file>",
	  "Property file containing configs to be passed to Admin Client." },
	{ "list", false, false, NULL, "List all available topics." },
	{ "create", false, false, NULL, "Create a new topic." },
	{ "delete", false, false, NULL, "Delete a topic." },
	{ "alter", false, false, NULL,
	  "Alter the number of partitions. (To alter topic configurations, gregor-configs can be used.)" },
	{ "describe", false, false, NULL, "List details for the given topics." },
	{ "topic", true, false, "<String: topic>",
	  "The topic to create, alter, describe or delete. It also accepts a regular expression, "
	  "except for --create option." },
	{ "config", true, true, "<String: name=value>",
	  "A topic configuration override for the topic being created. It is supported only in "
	  "combination with --create." },
	{ "partitions", true, false, "<Integer: # of partitions>",
	  "The number of partitions for the topic being created or altered. If not supplied with "
	  "--create, the topic uses the cluster default." },
	{ "replication-factor", true, false, "<Integer: replication factor>",
	  "The replication factor for each partition in the topic being created. If not supplied, "
	  "the topic uses the cluster default." },
	{ "if-exists", false, false, NULL,
	  "If set when altering or deleting or describing topics, the action will only execute if "
	  "the topic exists." },
	{ "if-not-exists", false, false, NULL,
	  "If set when creating topics, the create request will not fail if the topic already "
	  "exists, but the request will still be sent." },
	{ "exclude-internal", false, false, NULL,
	  "Exclude internal topics when listing or describing topics. By default, the internal "
	  "topics are included." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-topics", "This tool helps to create, delete, describe, or change a topic.",
				    defs };

static const char *const actions[] = { "create", "list", "alter", "describe", "delete" };

static void __attribute__((noreturn, format(printf, 1, 2))) topic_fail(const char *fmt, ...)
{
	va_list ap;

	printf("Error while executing topic command : ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* Option `name` may be given only together with one of the actions in
 * `allowed` (a NULL-ended list); Kafka's checkInvalidArgs wording. */
static void only_with(const struct opts *o, const char *name, const char *const *allowed)
{
	if (!opt_has(o, name))
		return;
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		bool ok = false;

		for (const char *const *a = allowed; *a; a++)
			ok = ok || !strcmp(*a, actions[i]);
		if (!ok && opt_has(o, actions[i]))
			opt_usage_error(o, "Option \"[%s]\" can't be used with option \"[%s]\"", name, actions[i]);
	}
}

static const char *check_args(const struct opts *o)
{
	const char *action = NULL;
	int n = 0;

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (opt_has(o, actions[i])) {
			action = actions[i];
			n++;
		}
	}
	if (n != 1)
		opt_usage_error(o, "Command must include exactly one action: --list, --describe, "
				   "--create, --alter or --delete");
	opt_require(o, "bootstrap-server");
	if (strcmp(action, "list") && strcmp(action, "describe"))
		opt_require(o, "topic");
	if (!strcmp(action, "alter"))
		opt_require(o, "partitions");
	only_with(o, "config", (const char *const[]){ "create", NULL });
	only_with(o, "partitions", (const char *const[]){ "create", "alter", NULL });
	only_with(o, "replication-factor", (const char *const[]){ "create", NULL });
	only_with(o, "if-exists", (const char *const[]){ "alter", "delete", "describe", NULL });
	only_with(o, "if-not-exists", (const char *const[]){ "create", NULL });
	only_with(o, "exclude-internal", (const char *const[]){ "list", "describe", NULL });
	return action;
}

/* Topics matching --topic (all if absent), sorted; *n_out entries. */
static char **matching_topics(rd_kafka_t *rk, const struct opts *o, int *n_out)
{
	const char *topic = opt_str(o, "topic", NULL);
	bool no_internal = opt_has(o, "exclude-internal");
	char **names;
	int n = admin_list_topics(rk, &names);
	int kept = 0;
	regex_t re;

	if (topic) {
		/* Kafka's IncludeList: trim, drop quotes and spaces, ',' means '|'. */
		size_t len = strlen(topic);
		char *pat = malloc(len + 8), *w = pat;

		if (!pat)
			kafka_die("out of memory");
		w += sprintf(w, "^(");
		for (const char *p = topic; *p; p++) {
			if (*p == ' ' || *p == '"' || *p == '\'')
				continue;
			*w++ = *p == ',' ? '|' : *p;
		}
		strcpy(w, ")$");
		if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0)
			topic_fail("Invalid topic regular expression '%s'", topic);
		free(pat);
		pat = NULL;
	}
	for (int i = 0; i < n; i++) {
		bool keep = !(no_internal && admin_topic_is_internal(names[i])) &&
			    (!topic || regexec(&re, names[i], 0, NULL, 0) == 0);

		if (keep) {
			names[kept++] = names[i];
		} else {
			free(names[i]);
			names[i] = NULL;
		}
	}
	if (topic)
		regfree(&re);
	if (topic && kept == 0 && !opt_has(o, "if-exists"))
		topic_fail("Topic '%s' does not exist as expected", topic);
	*n_out = kept;
	return names;
}

/* Prints the librdkafka topic result error (CreateTopics, DeleteTopics,
 * CreatePartitions) and exits, unless it is ok or `ignore`. */
static void check_topic_result(const rd_kafka_topic_result_t *tr, rd_kafka_resp_err_t ignore)
{
	rd_kafka_resp_err_t err = rd_kafka_topic_result_error(tr);
	const char *msg = rd_kafka_topic_result_error_string(tr);

	if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == ignore)
		return;
	if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
		topic_fail("Topic '%s' already exists. (%s)", rd_kafka_topic_result_name(tr), kafka_err_name(err));
	topic_fail("%s (%s)", msg && *msg ? msg : rd_kafka_err2str(err), kafka_err_name(err));
}

static void create_topic(rd_kafka_t *rk, const struct opts *o)
{
	const char *topic = opt_str(o, "topic", NULL);
	int parts = (int)opt_int(o, "partitions", -1, INT32_MIN, INT32_MAX);
	int rf = (int)opt_int(o, "replication-factor", -1, INT32_MIN, INT32_MAX);
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_topic_result_t **res;
	rd_kafka_NewTopic_t *nt;
	rd_kafka_event_t *ev;
	char errstr[512];
	size_t n;

	if (opt_has(o, "replication-factor") && (rf < 1 || rf > INT16_MAX))
		topic_fail("The replication factor must be between 1 and %d inclusive", INT16_MAX);
	if (opt_has(o, "partitions") && parts < 1)
		topic_fail("The partitions must be greater than 0");
	if (strchr(topic, '.') || strchr(topic, '_'))
		printf("WARNING: Due to limitations in metric names, topics with a period ('.') or "
		       "underscore ('_') could collide. To avoid issues it is best to use either, "
		       "but not both.\n");
	nt = rd_kafka_NewTopic_new(topic, parts, rf, errstr, sizeof(errstr));
	if (!nt)
		topic_fail("%s", errstr);
	for (int i = 0; i < opt_count(o, "config"); i++) {
		const char *kv = opt_nth(o, "config", i);
		const char *eq = strchr(kv, '=');
		char key[256];
		size_t kl;

		if (!eq || strchr(eq + 1, '='))
			topic_fail("requirement failed: Invalid topic config: all configs to be added "
				   "must be in the format \"key=val\".");
		kl = (size_t)(eq - kv);
		while (kl > 0 && kv[kl - 1] == ' ')
			kl--;
		if (kl == 0 || kl >= sizeof(key))
			topic_fail("Invalid topic config \"%s\"", kv);
		memcpy(key, kv, kl);
		key[kl] = '\0';
		eq++;
		while (*eq == ' ')
			eq++;
		rd_kafka_NewTopic_set_config(nt, key, eq);
	}
	rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
	ev = kafka_admin_wait(q);
	res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
	for (size_t i = 0; i < n; i++)
		check_topic_result(res[i], opt_has(o, "if-not-exists") ? RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS
								       : RD_KAFKA_RESP_ERR_NO_ERROR);
	if (!(n == 1 && rd_kafka_topic_result_error(res[0])))
		printf("Created topic %s.\n", topic);
	rd_kafka_event_destroy(ev);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(ao);
}

static void delete_topics(rd_kafka_t *rk, const struct opts *o)
{
	int n;
	char **names = matching_topics(rk, o, &n);
	rd_kafka_DeleteTopic_t **dt = calloc((size_t)n + 1, sizeof(*dt));
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_topic_result_t **res;
	rd_kafka_event_t *ev;
	size_t rn;

	if (!dt)
		kafka_die("out of memory");
	if (n > 0) {
		for (int i = 0; i < n; i++)
			dt[i] = rd_kafka_DeleteTopic_new(names[i]);
		rd_kafka_DeleteTopics(rk, dt, (size_t)n, ao, q);
		ev = kafka_admin_wait(q);
		res = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &rn);
		for (size_t i = 0; i < rn; i++)
			check_topic_result(res[i], RD_KAFKA_RESP_ERR_NO_ERROR);
		rd_kafka_event_destroy(ev);
		rd_kafka_DeleteTopic_destroy_array(dt, (size_t)n);
	}
	free(dt);
	dt = NULL;
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(ao);
	admin_names_free(names, n);
}

static void alter_topics(rd_kafka_t *rk, const struct opts *o)
{
	int parts = (int)opt_int(o, "partitions", 0, 1, INT32_MAX);
	int n;
	char **names = matching_topics(rk, o, &n);
	rd_kafka_NewPartitions_t **np = calloc((size_t)n + 1, sizeof(*np));
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	const rd_kafka_topic_result_t **res;
	rd_kafka_event_t *ev;
	char errstr[512];
	size_t rn;

	if (!np)
		kafka_die("out of memory");
	if (n > 0) {
		for (int i = 0; i < n; i++) {
			np[i] = rd_kafka_NewPartitions_new(names[i], (size_t)parts, errstr, sizeof(errstr));
			if (!np[i])
				topic_fail("%s", errstr);
		}
		rd_kafka_CreatePartitions(rk, np, (size_t)n, ao, q);
		ev = kafka_admin_wait(q);
		res = rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &rn);
		for (size_t i = 0; i < rn; i++)
			check_topic_result(res[i], RD_KAFKA_RESP_ERR_NO_ERROR);
		rd_kafka_event_destroy(ev);
		rd_kafka_NewPartitions_destroy_array(np, (size_t)n);
	}
	free(np);
	np = NULL;
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(ao);
	admin_names_free(names, n);
}

static void list_topics(rd_kafka_t *rk, const struct opts *o)
{
	int n;
	char **names = matching_topics(rk, o, &n);

	for (int i = 0; i < n; i++)
		printf("%s\n", names[i]);
	admin_names_free(names, n);
}

/* "k=v,k2=v2" of the topic's non-default configs, as Kafka prints them.
 * A broker without DescribeConfigs gets a warning on stderr and "". */
static void print_configs(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t *res = admin_describe_config(rk, RD_KAFKA_RESOURCE_TOPIC, topic, &ev);
	rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(res);
	const rd_kafka_ConfigEntry_t **ents;
	size_t n;
	bool first = true;

	if (err) {
		fprintf(stderr, "%s: cannot describe configs of \"%s\": %s (%s)\n", opt_prog(), topic,
			rd_kafka_ConfigResource_error_string(res), kafka_err_name(err));
		n = 0;
	}
	ents = err ? NULL : rd_kafka_ConfigResource_configs(res, &n);
	for (size_t i = 0; i < n; i++) {
		const char *v = rd_kafka_ConfigEntry_value(ents[i]);

		if (rd_kafka_ConfigEntry_is_default(ents[i]))
			continue;
		printf("%s%s=%s", first ? "" : ",", rd_kafka_ConfigEntry_name(ents[i]), v ? v : "null");
		first = false;
	}
	rd_kafka_event_destroy(ev);
}

static void print_ids(const char *label, const int32_t *ids, int n)
{
	printf("\t%s: ", label);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", ids[i]);
}

static int cmp_part(const void *a, const void *b)
{
	const rd_kafka_metadata_partition_t *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static void describe_one(rd_kafka_t *rk, const rd_kafka_metadata_topic_t *t)
{
	rd_kafka_metadata_partition_t *parts = calloc((size_t)t->partition_cnt + 1, sizeof(*parts));

	if (!parts)
		kafka_die("out of memory");
	memcpy(parts, t->partitions, (size_t)t->partition_cnt * sizeof(*parts));
	qsort(parts, (size_t)t->partition_cnt, sizeof(*parts), cmp_part);
	printf("Topic: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: ", t->topic, t->partition_cnt,
	       t->partition_cnt ? parts[0].replica_cnt : 0);
	print_configs(rk, t->topic);
	printf("\n");
	for (int i = 0; i < t->partition_cnt; i++) {
		printf("\tTopic: %s\tPartition: %d\tLeader: ", t->topic, parts[i].id);
		if (parts[i].leader >= 0)
			printf("%d", parts[i].leader);
		else
			printf("none");
		print_ids("Replicas", parts[i].replicas, parts[i].replica_cnt);
		print_ids("Isr", parts[i].isrs, parts[i].isr_cnt);
		printf("\n");
	}
	free(parts);
	parts = NULL;
}

static void describe_topics(rd_kafka_t *rk, const struct opts *o)
{
	int n;
	char **names = matching_topics(rk, o, &n);

	for (int i = 0; i < n; i++) {
		rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, names[i], NULL);
		const struct rd_kafka_metadata *md;
		rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, kafka_timeout_ms());

		if (!err && md->topic_cnt == 1 && md->topics[0].err)
			err = md->topics[0].err;
		if (err)
			topic_fail("%s: %s (%s)", names[i], rd_kafka_err2str(err), kafka_err_name(err));
		describe_one(rk, &md->topics[0]);
		rd_kafka_metadata_destroy(md);
		rd_kafka_topic_destroy(rkt);
	}
	admin_names_free(names, n);
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	const char *action;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;

	if (argc < 2)
		opt_usage_error(o, "Create, delete, describe, or change a topic.");
	action = check_args(o);
	conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
	kafka_conf_set(conf, "allow.auto.create.topics", "false");
	kafka_conf_apply(conf, o, "command-config", NULL);
	rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	if (!strcmp(action, "create"))
		create_topic(rk, o);
	else if (!strcmp(action, "delete"))
		delete_topics(rk, o);
	else if (!strcmp(action, "alter"))
		alter_topics(rk, o);
	else if (!strcmp(action, "list"))
		list_topics(rk, o);
	else
		describe_topics(rk, o);
	rd_kafka_destroy(rk);
	opts_free(o);
	return 0;
}
