/* gregor-leader-election - kafka-leader-election.sh for Gregor: asks the
 * controller to elect partition leaders, preferred replica or unclean.
 *
 *     gregor-leader-election --bootstrap-server H:P --election-type PREFERRED|UNCLEAN
 *         (--topic T --partition N | --all-topic-partitions | --path-to-json-file F)
 *
 * The JSON file has Kafka's shape: {"partitions":[{"topic":"t","partition":0},...]}.
 * Output follows Kafka's LeaderElectionCommand:
 *
 *     Successfully completed leader election (PREFERRED) for partitions t-0, t-1
 *     Valid replica already elected for partitions t-2
 *     Error completing leader election (PREFERRED) for partition: t-3: PREFERRED_LEADER_NOT_AVAILABLE: ...
 *
 * (where Kafka prints the Java exception, the error's Kafka name and message).
 *
 * librdkafka 2.0.2 has no ElectLeaders (rd_kafka_ElectLeaders came in 2.5),
 * so the request goes through tools/lib/wire.h to the controller librdkafka's
 * metadata names, at the highest version (up to 2) both sides speak.
 *
 * Exit status: 0 ok, 1 a partition not elected (or a failure), 2 usage error.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/kafka.h"
#include "lib/opt.h"
#include "lib/wire.h"
#include "proto/kerr.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: host:port>",
	  "A hostname and port for the broker to connect to, in the form host:port. Multiple comma separated URLs "
	  "can be given. REQUIRED." },
	{ "admin.config", true, false, "<String: config file>",
	  "Configuration properties files to pass to the admin client." },
	{ "command-config", true, false, "<String: config file>", "Same as --admin.config." },
	{ "election-type", true, false, "<[PREFERRED,UNCLEAN]: election type>",
	  "Type of election to attempt. Possible values are \"preferred\" for preferred leader election or "
	  "\"unclean\" for unclean leader election. REQUIRED." },
	{ "topic", true, false, "<String: topic name>",
	  "Name of topic for which to perform an election. Requires --partition." },
	{ "partition", true, false, "<Integer: partition id>",
	  "Partition id for which to perform an election. REQUIRED if --topic is specified." },
	{ "all-topic-partitions", false, false, NULL, "Perform election on all of the eligible topic partitions." },
	{ "path-to-json-file", true, false, "<String: Path to JSON file>",
	  "The JSON file with the list of partition for which leader elections should be performed: "
	  "{\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}, ...]}" },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-leader-election",
				    "This tool attempts to elect a new leader for a set of topic partitions.", defs };

static struct arena le_arena;

static void *le_alloc(size_t count, size_t size)
{
	void *p = arena_calloc(&le_arena, count ? count : 1, size);

	if (!p)
		kafka_die("out of memory");
	return p;
}

/* Adds partition p of topic (a copy of name[0..len)) to the request. */
static void le_add(struct ElectLeadersRequest *req, const char *name, size_t len, int32_t p)
{
	struct ElectLeadersRequestTopic *t = NULL;
	int32_t *parts;

	for (int32_t i = 0; i < req->TopicPartitions.n && !t; i++)
		if ((size_t)req->TopicPartitions.v[i].Topic.len == len &&
		    !memcmp(req->TopicPartitions.v[i].Topic.p, name, len))
			t = &req->TopicPartitions.v[i];
	if (!t) {
		struct ElectLeadersRequestTopic *v = le_alloc((size_t)req->TopicPartitions.n + 1, sizeof(*v));

		if (req->TopicPartitions.n > 0)
			memcpy(v, req->TopicPartitions.v, sizeof(*v) * (size_t)req->TopicPartitions.n);
		req->TopicPartitions.v = v;
		t = &v[req->TopicPartitions.n++];
		ElectLeadersRequestTopic_init(t);
		t->Topic.p = arena_strndup(&le_arena, name, len);
		t->Topic.len = (int32_t)len;
	}
	parts = le_alloc((size_t)t->Partitions.n + 1, sizeof(*parts));

	if (t->Partitions.n > 0)
		memcpy(parts, t->Partitions.v, sizeof(*parts) * (size_t)t->Partitions.n);
	parts[t->Partitions.n++] = p;
	t->Partitions.v = parts;
}

/* The string value after "key": in obj[0..end), or NULL; OUT *len. */
static const char *le_json_str(const char *obj, const char *end, const char *key, size_t *len)
{
	char pat[32];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = memmem(obj, (size_t)(end - obj), pat, strlen(pat));
	if (!p)
		return NULL;
	for (p += strlen(pat); p < end && (isspace((unsigned char)*p) || *p == ':'); p++)
		;
	if (p >= end || *p != '"' || !(q = memchr(p + 1, '"', (size_t)(end - p - 1))))
		return NULL;
	*len = (size_t)(q - p - 1);
	return p + 1;
}

/* Kafka's election JSON file: each {"topic":...,"partition":...} object of the "partitions" array. */
static void le_json_file(const char *path, struct ElectLeadersRequest *req)
{
	static char text[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	const char *p, *end = text + n;

	if (!f)
		kafka_die("cannot read %s", path);
	fclose(f);
	text[n] = '\0';
	p = strstr(text, "\"partitions\"");
	if (!p || !(p = strchr(p, '[')))
		kafka_die("%s: no \"partitions\" array", path);
	while ((p = memchr(p, '{', (size_t)(end - p)))) {
		const char *close = memchr(p, '}', (size_t)(end - p)), *topic, *num;
		size_t tlen;
		char *stop;
		long part;

		if (!close)
			break;
		topic = le_json_str(p, close, "topic", &tlen);
		num = memmem(p, (size_t)(close - p), "\"partition\"", 11);
		if (!topic || !num)
			kafka_die("%s: each partition needs a \"topic\" and a \"partition\"", path);
		for (num += 11; num < close && (isspace((unsigned char)*num) || *num == ':'); num++)
			;
		part = strtol(num, &stop, 10);
		if (stop == num || part < 0 || part > INT32_MAX)
			kafka_die("%s: bad partition number", path);
		le_add(req, topic, tlen, (int32_t)part);
		p = close + 1;
	}
	if (req->TopicPartitions.n == 0)
		kafka_die("%s: no partition listed", path);
}

/* Prints Kafka's lines; returns the number of partitions that failed. */
static int le_print(const struct ElectLeadersResponse *resp, const char *type)
{
	int fails = 0;

	for (int pass = 0; pass < 3; pass++) {
		bool first = true;

		for (int32_t i = 0; i < resp->ReplicaElectionResults.n; i++) {
			const struct ElectLeadersResult *t = &resp->ReplicaElectionResults.v[i];

			for (int32_t j = 0; j < t->PartitionResult.n; j++) {
				const struct ElectLeadersPartitionResult *p = &t->PartitionResult.v[j];
				int kind = p->ErrorCode == 0 ? 0 : p->ErrorCode == KERR_ELECTION_NOT_NEEDED ? 1 : 2;

				if (kind != pass)
					continue;
				if (pass == 2) {
					printf("Error completing leader election (%s) for partition: %.*s-%" PRId32
					       ": %s: %.*s\n",
					       type, (int)t->Topic.len, t->Topic.p, p->PartitionId,
					       kafka_err_name(p->ErrorCode),
					       p->ErrorMessage.len > 0 ? (int)p->ErrorMessage.len : 0,
					       p->ErrorMessage.len > 0 ? p->ErrorMessage.p : "");
					fails++;
					continue;
				}
				if (first)
					printf(pass == 0 ? "Successfully completed leader election (%s) for partitions "
							 : "Valid replica already elected for partitions ",
					       type);
				printf("%s%.*s-%" PRId32, first ? "" : ", ", (int)t->Topic.len, t->Topic.p,
				       p->PartitionId);
				first = false;
			}
		}
		if (!first)
			putchar('\n');
	}
	return fails;
}

static rd_kafka_t *le_connect(const struct opts *o)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
	rd_kafka_t *rk;

	kafka_conf_apply(conf, o, opt_has(o, "admin.config") ? "admin.config" : "command-config", NULL);
	rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	return rk;
}

/* The request the options ask for (usage errors exit 2). */
static void le_request(const struct opts *o, struct ElectLeadersRequest *req, const char **type)
{
	const char *et = opt_str(o, "election-type", NULL);
	int sources = opt_has(o, "topic") + opt_has(o, "all-topic-partitions") + opt_has(o, "path-to-json-file");

	opt_require(o, "bootstrap-server");
	if (!et)
		opt_usage_error(o, "Missing required option(s): election-type");
	if (strcasecmp(et, "preferred") && strcasecmp(et, "unclean"))
		opt_usage_error(o, "Unknown election type: %s", et);
	if (sources != 1)
		opt_usage_error(o, "One and only one of the following options is required: all-topic-partitions, "
				   "topic, path-to-json-file");
	if (opt_has(o, "topic") != opt_has(o, "partition"))
		opt_usage_error(o, "--topic and --partition must be given together");
	*type = strcasecmp(et, "preferred") ? "UNCLEAN" : "PREFERRED";
	ElectLeadersRequest_init(req);
	req->ElectionType = strcasecmp(et, "preferred") ? 1 : 0;
	req->TimeoutMs = kafka_timeout_ms();
	req->TopicPartitions.n = -1; /* all */
	if (opt_has(o, "topic")) {
		const char *t = opt_str(o, "topic", NULL);

		req->TopicPartitions.n = 0;
		le_add(req, t, strlen(t), (int32_t)opt_int(o, "partition", 0, 0, INT32_MAX));
	} else if (opt_has(o, "path-to-json-file")) {
		req->TopicPartitions.n = 0;
		le_json_file(opt_str(o, "path-to-json-file", NULL), req);
	}
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	struct ElectLeadersRequest req;
	struct ElectLeadersResponse resp;
	const char *type;
	struct wire *wc;
	rd_kafka_t *rk;
	int32_t ctl;
	int fails;

	arena_init(&le_arena, 0);
	le_request(o, &req, &type);
	rk = le_connect(o);
	ctl = rd_kafka_controllerid(rk, kafka_timeout_ms());
	if (ctl < 0)
		kafka_die("no controller known to the brokers at %s", opt_str(o, "bootstrap-server", ""));
	wc = wire_open(rk, ctl);
	wire_call(wc, API_ElectLeaders, wire_version(wc, API_ElectLeaders, 2), &req, &resp, &le_arena);
	if (resp.ErrorCode)
		kafka_die("leader election failed: %s", kafka_err_name(resp.ErrorCode));
	fails = le_print(&resp, type);
	if (fails)
		fprintf(stderr, "Error: %d replica(s) could not be elected\n", fails);
	wire_close(wc);
	rd_kafka_destroy(rk);
	arena_release(&le_arena);
	opts_free(o);
	return fails ? 1 : 0;
}
