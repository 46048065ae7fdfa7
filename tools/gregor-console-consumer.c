/* gregor-console-consumer - kafka-console-consumer.sh for Gregor: print
 * records of a topic to standard output.
 *
 * Flags, --property names and the output layout follow Kafka's
 * ConsoleConsumer and DefaultMessageFormatter ([CreateTime:ts] [Partition:p]
 * [Offset:o] [headers] [key] value, separated by key.separator), and
 * "Processed a total of N messages" goes to stderr at the end.
 *
 * One difference in mechanism, not in behaviour: without a group (no
 * --group, no group.id property) Kafka joins a throw-away group
 * "console-consumer-NNNNN" with auto-commit off; here the consumer assigns
 * itself every partition of the topic instead, which reads the same
 * records from the same starting point without needing a group
 * coordinator. With a group it subscribes and commits as Kafka does.
 *
 * Ends on --max-messages, on --timeout-ms without a record (Kafka's
 * TimeoutException message, exit 0), or on SIGINT/SIGTERM. Exit status 1
 * for an unreachable broker or an unknown topic or partition, 2 for usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>", "REQUIRED: The server(s) to connect to." },
	{ "topic", true, false, "<String: topic>", "The topic to consume on." },
	{ "group", true, false, "<String: consumer group id>", "The consumer group id of the consumer." },
	{ "partition", true, false, "<Integer: partition>",
	  "The partition to consume from. Consumption starts from the end of the partition unless "
	  "'--offset' is specified." },
	{ "offset", true, false, "<String: consume offset>",
	  "The offset to consume from (a non-negative number), or 'earliest' which means from "
	  "beginning, or 'latest' which means from end (default: latest)" },
	{ "from-beginning", false, false, NULL,
	  "If the consumer does not already have an established offset to consume from, start with "
	  "the earliest message present in the log rather than the latest message." },
	{ "max-messages", true, false, "<Integer: num_messages>",
	  "The maximum number of messages to consume before exiting. If not set, consumption is "
	  "continual." },
	{ "timeout-ms", true, false, "<Integer: timeout_ms>",
	  "If specified, exit if no message is available for consumption for the specified "
	  "interval." },
	{ "isolation-level", true, false, "<String>",
	  "Set to read_committed in order to filter out transactional messages which are not "
	  "committed. Set to read_uncommitted to read all messages. (default: read_uncommitted)" },
	{ "property", true, true, "<String: prop>",
	  "The properties to initialize the message formatter: print.timestamp=true|false, "
	  "print.key=true|false, print.offset=true|false, print.partition=true|false, "
	  "print.headers=true|false, print.value=true|false, key.separator=<key.separator>, "
	  "line.separator=<line.separator>, headers.separator=<line.separator>, "
	  "null.literal=<null.literal>" },
	{ "consumer-property", true, true, "<String: consumer_prop>",
	  "A mechanism to pass user-defined properties in the form key=value to the consumer." },
	{ "command-config", true, false, "<String: config file>",
	  "Client properties file (security.protocol, sasl.*, ssl.*), applied before --consumer.config." },
	{ "consumer.config", true, false, "<String: config file>",
	  "Consumer config properties file. Note that --consumer-property takes precedence over "
	  "this config." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-console-consumer",
				    "This tool helps to read data from Kafka topics and outputs it to standard output.",
				    defs };

struct fmt {
	bool ts, key, offset, partition, headers, value;
	const char *key_sep, *line_sep, *hdr_sep, *null_lit;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void fmt_configure(struct fmt *f, const struct opts *o)
{
	*f = (struct fmt){ false, false, false, false, false, true, "\t", "\n", ",", "null" };
	for (int i = 0; i < opt_count(o, "property"); i++) {
		const char *kv = opt_nth(o, "property", i);
		const char *v = strchr(kv, '=');
		size_t kl = v ? (size_t)(v - kv) : 0;
		bool t;

		if (!v)
			opt_usage_error(o, "Invalid property \"%s\": expected key=value", kv);
		v++;
		t = !strcasecmp(v, "true");
#define IS(name) (kl == sizeof(name) - 1 && !strncmp(kv, name, kl))
		if (IS("print.timestamp"))
			f->ts = t;
		else if (IS("print.key"))
			f->key = t;
		else if (IS("print.offset"))
			f->offset = t;
		else if (IS("print.partition"))
			f->partition = t;
		else if (IS("print.headers"))
			f->headers = t;
		else if (IS("print.value"))
			f->value = t;
		else if (IS("key.separator"))
			f->key_sep = v;
		else if (IS("line.separator"))
			f->line_sep = v;
		else if (IS("headers.separator"))
			f->hdr_sep = v;
		else if (IS("null.literal"))
			f->null_lit = v;
#undef IS
		/* Other formatter properties (deserializers) are ignored. */
	}
}

static void put_bytes(const struct fmt *f, const void *p, size_t n)
{
	if (p)
		fwrite(p, 1, n, stdout);
	else
		fputs(f->null_lit, stdout);
}

/* One record in DefaultMessageFormatter's layout: each printed field is
 * followed by key.separator if another field follows, the value by
 * line.separator. */
static void fmt_write(const struct fmt *f, const rd_kafka_message_t *m)
{
	bool more[6] = {
		f->partition || f->offset || f->headers || f->key || f->value,
		f->offset || f->headers || f->key || f->value,
		f->headers || f->key || f->value,
		f->key || f->value,
		f->value,
	};
	rd_kafka_timestamp_type_t tstype;
	int64_t ts = rd_kafka_message_timestamp(m, &tstype);
	rd_kafka_headers_t *hdrs = NULL;

	if (f->ts) {
		if (tstype == RD_KAFKA_TIMESTAMP_CREATE_TIME)
			printf("CreateTime:%lld", (long long)ts);
		else if (tstype == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME)
			printf("LogAppendTime:%lld", (long long)ts);
		else
			fputs("NO_TIMESTAMP", stdout);
		fputs(more[0] ? f->key_sep : f->line_sep, stdout);
	}
	if (f->partition) {
		printf("Partition:%d", (int)m->partition);
		fputs(more[1] ? f->key_sep : f->line_sep, stdout);
	}
	if (f->offset) {
		printf("Offset:%lld", (long long)m->offset);
		fputs(more[2] ? f->key_sep : f->line_sep, stdout);
	}
	if (f->headers) {
		const char *name;
		const void *val;
		size_t len;

		if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
		    rd_kafka_header_cnt(hdrs) == 0) {
			fputs("NO_HEADERS", stdout);
		} else {
			for (size_t i = 0; !rd_kafka_header_get_all(hdrs, i, &name, &val, &len); i++) {
				printf("%s%s:", i ? f->hdr_sep : "", name);
				put_bytes(f, val, len);
			}
		}
		fputs(more[3] ? f->key_sep : f->line_sep, stdout);
	}
	if (f->key) {
		put_bytes(f, m->key, m->key_len);
		fputs(more[4] ? f->key_sep : f->line_sep, stdout);
	}
	if (f->value) {
		put_bytes(f, m->payload, m->len);
		fputs(f->line_sep, stdout);
	}
}

/* The group from --group, group.id in the files/properties, or NULL;
 * differing values are a usage error (Kafka's check). */
static const char *group_of(const struct opts *o, rd_kafka_conf_t *conf)
{
	static char buf[256];
	size_t n = sizeof(buf);
	const char *g = opt_str(o, "group", NULL);

	if (rd_kafka_conf_get(conf, "group.id", buf, &n) != RD_KAFKA_CONF_OK || !buf[0])
		return g;
	if (g && strcmp(g, buf))
		opt_usage_error(o,
				"The group ids provided in different places (directly using "
				"'--group', via '--consumer-property', or via '--consumer.config') "
				"do not match. Detected group ids: '%s', '%s'",
				g, buf);
	return buf;
}

static void check_args(const struct opts *o)
{
	opt_require(o, "bootstrap-server");
	opt_require(o, "topic");
	if (opt_has(o, "partition") && opt_has(o, "from-beginning") && opt_has(o, "offset"))
		opt_usage_error(o, "Options from-beginning and offset cannot be specified together.");
	if (!opt_has(o, "partition") && opt_has(o, "offset"))
		opt_usage_error(o, "The partition is required when offset is specified.");
}

static int64_t start_offset(const struct opts *o)
{
	const char *s = opt_str(o, "offset", NULL);
	char *end;
	long long v;

	if (!s)
		return opt_has(o, "from-beginning") ? RD_KAFKA_OFFSET_BEGINNING : RD_KAFKA_OFFSET_END;
	if (!strcasecmp(s, "earliest"))
		return RD_KAFKA_OFFSET_BEGINNING;
	if (!strcasecmp(s, "latest"))
		return RD_KAFKA_OFFSET_END;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		opt_usage_error(o,
				"The provided offset value '%s' is incorrect. Valid values are "
				"'earliest', 'latest', or a non-negative long.",
				s);
	return v;
}

static rd_kafka_conf_t *make_conf(const struct opts *o, const char **group)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));
	char buf[64];
	size_t n = sizeof(buf);

	kafka_conf_set(conf, "client.id", "console-consumer");
	kafka_conf_set(conf, "isolation.level", "read_uncommitted"); /* Kafka's default */
	/* Set before the user's files and properties so an explicit
	 * auto.offset.reset wins (Kafka's order), checked against --from-beginning below. */
	kafka_conf_set(conf, "auto.offset.reset", opt_has(o, "from-beginning") ? "earliest" : "latest");
	kafka_conf_apply(conf, o, "command-config", NULL);
	kafka_conf_apply(conf, o, "consumer.config", "consumer-property");
	if (opt_has(o, "isolation-level") &&
	    kafka_conf_set(conf, "isolation.level", opt_str(o, "isolation-level", NULL)) != 0)
		exit(2);
	if (opt_has(o, "from-beginning") && rd_kafka_conf_get(conf, "auto.offset.reset", buf, &n) == RD_KAFKA_CONF_OK &&
	    strcmp(buf, "smallest") && strcmp(buf, "earliest") && strcmp(buf, "beginning")) {
		fprintf(stderr,
			"Can't simultaneously specify --from-beginning and "
			"'auto.offset.reset=%s', please remove one option\n",
			buf);
		exit(1);
	}
	*group = group_of(o, conf);
	if (*group && opt_has(o, "partition"))
		opt_usage_error(o, "Options group and partition cannot be specified together.");
	if (*group && kafka_conf_set(conf, "group.id", *group) != 0)
		exit(2);
	if (!*group) {
		/* librdkafka refuses assign() without a group.id; this one is never
		 * joined and nothing is committed to it. */
		char id[64];

		srand((unsigned)time(NULL) ^ (unsigned)getpid());
		snprintf(id, sizeof(id), "console-consumer-%d", rand() % 100000);
		kafka_conf_set(conf, "group.id", id);
		kafka_conf_set(conf, "enable.auto.commit", "false");
		kafka_conf_set(conf, "enable.auto.offset.store", "false");
	}
	return conf;
}

/* Without a group: assign the topic's partitions (or --partition) at the
 * starting offset. Exits 1 on an unknown topic or partition. */
static void assign_partitions(rd_kafka_t *rk, const struct opts *o, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, kafka_timeout_ms());
	int64_t off = start_offset(o);
	int part = (int)opt_int(o, "partition", -1, 0, INT32_MAX);
	rd_kafka_topic_partition_list_t *tpl;

	if (!err && md->topic_cnt == 1)
		err = md->topics[0].err;
	if (err)
		kafka_die("cannot consume from topic '%s': %s (%s)", topic, rd_kafka_err2str(err), kafka_err_name(err));
	tpl = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
	for (int i = 0; i < md->topics[0].partition_cnt; i++) {
		int32_t id = md->topics[0].partitions[i].id;

		if (part < 0 || part == id)
			rd_kafka_topic_partition_list_add(tpl, topic, id)->offset = off;
	}
	if (tpl->cnt == 0)
		kafka_die("cannot consume from topic '%s': partition %d does not exist (%s)", topic, part,
			  kafka_err_name(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
	err = rd_kafka_assign(rk, tpl);
	if (err)
		kafka_die("cannot assign partitions: %s", rd_kafka_err2str(err));
	rd_kafka_topic_partition_list_destroy(tpl);
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
}

static void subscribe(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_topic_partition_list_t *tpl = rd_kafka_topic_partition_list_new(1);
	rd_kafka_resp_err_t err;

	rd_kafka_topic_partition_list_add(tpl, topic, RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(rk, tpl);
	if (err)
		kafka_die("cannot subscribe to '%s': %s (%s)", topic, rd_kafka_err2str(err), kafka_err_name(err));
	rd_kafka_topic_partition_list_destroy(tpl);
}

/* Consumes until a limit or a signal. Returns the exit status. */
static int consume(rd_kafka_t *rk, const struct opts *o, const struct fmt *f, long *count)
{
	int64_t max = opt_int(o, "max-messages", -1, INT64_MIN, INT64_MAX);
	int64_t timeout_ms = opt_int(o, "timeout-ms", -1, INT64_MIN, INT64_MAX);
	int64_t last = kafka_now_ms();
	bool tty = isatty(STDOUT_FILENO);

	while (!stop && (max < 0 || *count < max)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);

		if (!m) {
			fflush(stdout);
			if (timeout_ms >= 0 && kafka_now_ms() - last >= timeout_ms) {
				fprintf(stderr, "ERROR Error processing message, terminating consumer "
						"process: org.apache.kafka.common.errors.TimeoutException\n");
				break;
			}
			continue;
		}
		if (m->err) {
			rd_kafka_resp_err_t err = m->err;

			if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				fprintf(stderr, "%s: %s (%s)\n", opt_prog(), rd_kafka_message_errstr(m),
					kafka_err_name(err));
			rd_kafka_message_destroy(m);
			if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
			    err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
			    err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
				return 1;
			continue;
		}
		last = kafka_now_ms();
		fmt_write(f, m);
		if (tty)
			fflush(stdout);
		(*count)++;
		rd_kafka_message_destroy(m);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	const char *topic, *group;
	struct sigaction sa = { .sa_handler = on_signal };
	rd_kafka_t *rk;
	struct fmt f;
	long count = 0;
	int status;

	check_args(o);
	topic = opt_str(o, "topic", NULL);
	fmt_configure(&f, o);
	rk = kafka_new(RD_KAFKA_CONSUMER, make_conf(o, &group));
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	rd_kafka_poll_set_consumer(rk);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (group)
		subscribe(rk, topic);
	else
		assign_partitions(rk, o, topic);
	status = consume(rk, o, &f, &count);
	fflush(stdout);
	fprintf(stderr, "Processed a total of %ld messages\n", count);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	opts_free(o);
	return status;
}
