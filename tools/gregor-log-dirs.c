/* gregor-log-dirs - kafka-log-dirs.sh for Gregor: which partitions each
 * broker's log directories hold and how many bytes each takes.
 *
 *     gregor-log-dirs --bootstrap-server H:P --describe [--topic-list t1,t2] [--broker-list 0,1]
 *
 * Output follows Kafka's LogDirsCommand: a line saying the brokers are being
 * asked, a line naming the brokers that answered, then one line of JSON
 *
 *     {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"t-0",
 *      "size":123,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data"}]}],"version":1}
 *
 * with the keys in the order Kafka's tool prints them. "error" is null or,
 * where Kafka prints the Java exception's class, the error's Kafka name
 * (KAFKA_STORAGE_ERROR for an offline directory). As in Kafka, every broker
 * is asked for every partition (Topics null) and --topic-list filters what
 * is printed; without --broker-list every broker of the metadata is asked.
 *
 * librdkafka 2.0.2 has no DescribeLogDirs, so the request goes through
 * tools/lib/wire.h, at the highest version (up to 4) both sides speak.
 *
 * Exit status: 0 ok, 1 failure (broker unreachable, a broker in
 * --broker-list that is not in the cluster, an error for the whole request),
 * 2 usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kafka.h"
#include "lib/opt.h"
#include "lib/wire.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: the server(s) to use for bootstrapping>",
	  "REQUIRED: the broker(s) to connect to, as host:port (several may be given, comma-separated)." },
	{ "command-config", true, false, "<String: Admin client property file>",
	  "Property file with configs passed to the client." },
	{ "describe", false, false, NULL, "REQUIRED: describe the log directories of the brokers." },
	{ "topic-list", true, false, "<String: Topic list>",
	  "Comma-separated topics whose partitions are shown, e.g. \"t1,t2\". Every topic if absent." },
	{ "broker-list", true, false, "<String: Broker list>",
	  "Comma-separated ids of the brokers to ask, e.g. \"0,1\". Every broker of the cluster if absent." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-log-dirs",
				    "This tool helps to query log directory usage on the specified brokers.", defs };

/* A comma-separated list's non-empty items. */
struct ld_list {
	char **v;
	int n;
};

static struct arena ld_arena; /* lists, requests and responses of the run */

static void *ld_alloc(size_t count, size_t size)
{
	void *p = arena_calloc(&ld_arena, count ? count : 1, size);

	if (!p)
		kafka_die("out of memory");
	return p;
}

/* Splits s on commas, dropping empty items (Kafka's split(",").filter(_.nonEmpty)). */
static struct ld_list ld_split(const char *s)
{
	size_t len = strlen(s);
	char *copy = arena_strndup(&ld_arena, s, len), *save = NULL;
	struct ld_list l = { ld_alloc(len / 2 + 1, sizeof(char *)), 0 };

	if (!copy)
		kafka_die("out of memory");
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
		l.v[l.n++] = item;
	return l;
}

/* --broker-list as ids; a bad number is a usage error (exit 2). OUT *ids. */
static int ld_broker_ids(const struct opts *o, int32_t **ids)
{
	struct ld_list l = ld_split(opt_str(o, "broker-list", ""));

	*ids = ld_alloc((size_t)l.n, sizeof(**ids));
	for (int i = 0; i < l.n; i++) {
		char *end;
		long long v = strtoll(l.v[i], &end, 10);

		if (*end || end == l.v[i] || v < 0 || v > INT32_MAX)
			opt_usage_error(o, "invalid broker id \"%s\" in --broker-list", l.v[i]);
		(*ids)[i] = (int32_t)v;
	}
	return l.n;
}

/* True if node is one of md's brokers. */
static bool ld_known(const struct rd_kafka_metadata *md, int32_t node)
{
	for (int i = 0; i < md->broker_cnt; i++)
		if (md->brokers[i].id == node)
			return true;
	return false;
}

/* The brokers to ask: --broker-list, or every broker of the metadata. Exits 1 naming unknown ones. OUT *ids. */
static int ld_brokers(rd_kafka_t *rk, const struct opts *o, int32_t **ids)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int n = opt_has(o, "broker-list") ? ld_broker_ids(o, ids) : 0;
	int unknown = 0;

	if (!opt_has(o, "broker-list")) {
		*ids = ld_alloc((size_t)md->broker_cnt, sizeof(**ids));
		for (n = 0; n < md->broker_cnt; n++)
			(*ids)[n] = md->brokers[n].id;
	}
	for (int i = 0; i < n; i++)
		if (!ld_known(md, (*ids)[i])) {
			fprintf(stderr, "%s: broker %" PRId32 " from --broker-list is not in the cluster\n", opt_prog(),
				(*ids)[i]);
			unknown++;
		}
	if (unknown) {
		fprintf(stderr, "%s: brokers in the cluster:", opt_prog());
		for (int i = 0; i < md->broker_cnt; i++)
			fprintf(stderr, "%s%" PRId32, i ? "," : " ", md->brokers[i].id);
		fputc('\n', stderr);
	}
	rd_kafka_metadata_destroy(md);
	if (unknown)
		exit(1);
	return n;
}

/* DescribeLogDirs of every partition at broker node. */
static struct DescribeLogDirsResponse *ld_describe(rd_kafka_t *rk, int32_t node)
{
	struct wire *wc = wire_open(rk, node);
	struct DescribeLogDirsRequest req;
	struct DescribeLogDirsResponse *resp = ld_alloc(1, sizeof(*resp));

	DescribeLogDirsRequest_init(&req);
	req.Topics.n = -1; /* null: every partition */
	wire_call(wc, API_DescribeLogDirs, wire_version(wc, API_DescribeLogDirs, 4), &req, resp, &ld_arena);
	wire_close(wc);
	if (resp->ErrorCode)
		kafka_die("DescribeLogDirs to broker %" PRId32 ": %s", node, kafka_err_name(resp->ErrorCode));
	return resp;
}

/* The bytes p[0..len) inside a JSON string (RFC 8259 escapes; bytes >= 0x80 pass through). */
static void ld_json_chars(const char *p, int32_t len)
{
	for (int32_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
}

/* True if topic is in the --topic-list (or there is none). */
static bool ld_wanted(const struct ld_list *topics, struct kstr name)
{
	if (topics->n == 0)
		return true;
	for (int i = 0; i < topics->n; i++)
		if ((int32_t)strlen(topics->v[i]) == name.len && !memcmp(topics->v[i], name.p, (size_t)name.len))
			return true;
	return false;
}

/* One log dir's JSON object, its partitions filtered by topics. */
static void ld_print_dir(const struct DescribeLogDirsResult *d, const struct ld_list *topics)
{
	bool first = true;

	printf("{\"partitions\":[");
	for (int32_t i = 0; i < d->Topics.n; i++) {
		const struct DescribeLogDirsTopic *t = &d->Topics.v[i];

		for (int32_t j = 0; ld_wanted(topics, t->Name) && j < t->Partitions.n; j++) {
			const struct DescribeLogDirsPartition *p = &t->Partitions.v[j];

			printf("%s{\"partition\":\"", first ? "" : ",");
			ld_json_chars(t->Name.p, t->Name.len);
			printf("-%" PRId32 "\",\"size\":%" PRId64 ",\"offsetLag\":%" PRId64 ",\"isFuture\":%s}",
			       p->PartitionIndex, p->PartitionSize, p->OffsetLag, p->IsFutureKey ? "true" : "false");
			first = false;
		}
	}
	printf("],\"error\":");
	if (d->ErrorCode)
		printf("\"%s\"", kafka_err_name(d->ErrorCode));
	else
		printf("null");
	printf(",\"logDir\":\"");
	ld_json_chars(d->LogDir.p, d->LogDir.len);
	printf("\"}");
}

static void ld_print(const int32_t *ids, struct DescribeLogDirsResponse **resps, int n, const struct ld_list *topics)
{
	printf("{\"brokers\":[");
	for (int b = 0; b < n; b++) {
		printf("%s{\"broker\":%" PRId32 ",\"logDirs\":[", b ? "," : "", ids[b]);
		for (int32_t i = 0; i < resps[b]->Results.n; i++) {
			if (i)
				putchar(',');
			ld_print_dir(&resps[b]->Results.v[i], topics);
		}
		printf("]}");
	}
	printf("],\"version\":1}\n");
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	struct DescribeLogDirsResponse **resps;
	struct ld_list topics;
	rd_kafka_t *rk;
	int32_t *ids;
	int n;

	opt_require(o, "bootstrap-server");
	opt_require(o, "describe");
	arena_init(&ld_arena, 0);
	topics = ld_split(opt_str(o, "topic-list", ""));
	if (opt_has(o, "broker-list"))
		ld_broker_ids(o, &ids); /* a bad id is a usage error before connecting */
	rk = kafka_admin_connect(o);
	n = ld_brokers(rk, o, &ids);
	printf("Querying brokers for log directories information\n");
	resps = ld_alloc((size_t)n, sizeof(*resps));
	for (int b = 0; b < n; b++)
		resps[b] = ld_describe(rk, ids[b]);
	printf("Received log directory information from brokers ");
	for (int b = 0; b < n; b++)
		printf("%s%" PRId32, b ? "," : "", ids[b]);
	putchar('\n');
	ld_print(ids, resps, n, &topics);
	rd_kafka_destroy(rk);
	arena_release(&ld_arena);
	opts_free(o);
	return 0;
}
