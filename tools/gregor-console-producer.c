/* gregor-console-producer - kafka-console-producer.sh for Gregor: one
 * record per line of standard input.
 *
 * Flags and the line format follow Kafka's ConsoleProducer and its
 * LineMessageReader (parse.key, key.separator, parse.headers,
 * headers.delimiter, headers.separator, headers.key.separator, null.marker,
 * ignore.error). Producer defaults are Kafka's console producer defaults
 * (acks=-1, linger.ms=1000 via --timeout, compression none) and the Java
 * client's partitioner (murmur2), so a keyed line lands on the same
 * partition as with kafka-console-producer.sh; --producer.config and
 * --producer-property override the defaults, explicit flags override both.
 * A ">" prompt is printed only when stdin is a terminal.
 *
 * Exit status: 0 when every line was delivered, 1 if any delivery failed
 * (each failure printed with Kafka's error name) or the broker is
 * unreachable, 2 usage error. --compression-codec needs a value here
 * (Kafka lets it default to gzip when given bare).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>",
	  "REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to. The "
	  "broker list string in the form HOST1:PORT1,HOST2:PORT2." },
	{ "broker-list", true, false, "<String: broker-list>",
	  "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified." },
	{ "topic", true, false, "<String: topic>", "REQUIRED: The topic id to produce messages to." },
	{ "sync", false, false, NULL,
	  "If set message send requests to the brokers are synchronously, one at a time as they "
	  "arrive." },
	{ "compression-codec", true, false, "<String: compression-codec>",
	  "The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'." },
	{ "batch-size", true, false, "<Integer: size>",
	  "Number of messages to send in a single batch if they are not being sent synchronously "
	  "(librdkafka batch.num.messages)." },
	{ "message-send-max-retries", true, false, "<Integer>",
	  "The number of retries before the producer gives up and drops a message (retries)." },
	{ "retry-backoff-ms", true, false, "<Long>", "Time to wait before retrying (retry.backoff.ms)." },
	{ "timeout", true, false, "<Long: timeout_ms>",
	  "The maximum time a message will queue awaiting sufficient batch size (linger.ms). "
	  "Default 1000." },
	{ "request-required-acks", true, false, "<String: request required acks>",
	  "The required `acks` of the producer requests. Default -1." },
	{ "request-timeout-ms", true, false, "<Integer: request timeout ms>",
	  "The ack timeout of the producer requests (request.timeout.ms). Default 1500." },
	{ "property", true, true, "<String: prop>",
	  "Properties for the line reader: parse.key=false, parse.headers=false, ignore.error=false, "
	  "key.separator=<tab>, headers.delimiter=<tab>, headers.separator=',', "
	  "headers.key.separator=':', null.marker (fields equal to it become null). Values are taken "
	  "literally (as Kafka does). Line layout with parse.headers and parse.key: "
	  "\"h1:v1,h2:v2...<tab>key<tab>value\"." },
	{ "producer-property", true, true, "<String: producer_prop>",
	  "A mechanism to pass user-defined properties in the form key=value to the producer." },
	{ "command-config", true, false, "<String: config file>",
	  "Client properties file (security.protocol, sasl.*, ssl.*), applied before --producer.config." },
	{ "producer.config", true, false, "<String: config file>",
	  "Producer config properties file. Note that --producer-property takes precedence over "
	  "this config." },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-console-producer",
				    "This tool helps to read data from standard input and publish it to Kafka.", defs };

struct reader_cfg {
	bool parse_key, parse_headers, ignore_error;
	const char *key_sep, *hdr_delim, *hdr_sep, *hdr_key_sep, *null_marker;
};

static int failed_deliveries;
static const char *topic_name;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	char keylen[32];

	(void)opaque;
	if (!m->err)
		return;
	snprintf(keylen, sizeof(keylen), "%zu bytes", m->key_len);
	failed_deliveries++;
	fprintf(stderr,
		"ERROR Error when sending message to topic %s with key: %s%s, value: %zu bytes "
		"with error: %s (%s)\n",
		topic_name, m->key ? "" : "null", m->key ? keylen : "", m->len, rd_kafka_err2str(m->err),
		kafka_err_name(m->err));
}

static void reader_configure(struct reader_cfg *rc, const struct opts *o)
{
	*rc = (struct reader_cfg){ false, false, false, "\t", "\t", ",", ":", NULL };
	for (int i = 0; i < opt_count(o, "property"); i++) {
		const char *kv = opt_nth(o, "property", i);
		const char *eq = strchr(kv, '=');
		size_t kl = eq ? (size_t)(eq - kv) : 0;
		const char *v;

		if (!eq)
			opt_usage_error(o, "Invalid property \"%s\": expected key=value", kv);
		v = eq + 1;
		if (kl == 9 && !strncmp(kv, "parse.key", kl))
			rc->parse_key = !strcasecmp(v, "true");
		else if (kl == 13 && !strncmp(kv, "parse.headers", kl))
			rc->parse_headers = !strcasecmp(v, "true");
		else if (kl == 12 && !strncmp(kv, "ignore.error", kl))
			rc->ignore_error = !strcasecmp(v, "true");
		else if (kl == 13 && !strncmp(kv, "key.separator", kl))
			rc->key_sep = v;
		else if (kl == 17 && !strncmp(kv, "headers.delimiter", kl))
			rc->hdr_delim = v;
		else if (kl == 17 && !strncmp(kv, "headers.separator", kl))
			rc->hdr_sep = v;
		else if (kl == 21 && !strncmp(kv, "headers.key.separator", kl))
			rc->hdr_key_sep = v;
		else if (kl == 11 && !strncmp(kv, "null.marker", kl))
			rc->null_marker = v;
		/* Unknown reader properties are ignored, as Kafka's reader does. */
	}
	if (!*rc->key_sep || !*rc->hdr_delim || !*rc->hdr_sep || !*rc->hdr_key_sep)
		opt_usage_error(o, "reader separators must not be empty");
}

static bool is_null(const struct reader_cfg *rc, const char *p, size_t n)
{
	return rc->null_marker && strlen(rc->null_marker) == n && !memcmp(rc->null_marker, p, n);
}

/* Parses "h1:v1,h2:v2" into hdrs. Returns 0 or -EINVAL. */
static int parse_headers(const struct reader_cfg *rc, char *s, rd_kafka_headers_t *hdrs)
{
	size_t seplen = strlen(rc->hdr_sep), kslen = strlen(rc->hdr_key_sep);

	while (s) {
		char *end = strstr(s, rc->hdr_sep);
		char *ks;

		if (end)
			*end = '\0';
		ks = strstr(s, rc->hdr_key_sep);
		if (!ks)
			return -EINVAL;
		*ks = '\0';
		ks += kslen;
		if (is_null(rc, s, strlen(s)))
			return -EINVAL; /* Kafka: header keys must not be null */
		rd_kafka_header_add(hdrs, s, -1, is_null(rc, ks, strlen(ks)) ? NULL : ks,
				    is_null(rc, ks, strlen(ks)) ? 0 : (ssize_t)strlen(ks));
		s = end ? end + seplen : NULL;
	}
	return 0;
}

/* Produces one line. Returns 0, or -EINVAL for a malformed line (message
 * printed). */
static int produce_line(rd_kafka_t *rk, const struct reader_cfg *rc, char *line, long lineno, bool sync)
{
	char *key = NULL, *val = line, *sep;
	rd_kafka_headers_t *hdrs = NULL;
	rd_kafka_resp_err_t err;

	if (rc->parse_headers) {
		sep = strstr(val, rc->hdr_delim);
		if (!sep) {
			if (!rc->ignore_error)
				goto out_bad;
		} else {
			*sep = '\0';
			hdrs = rd_kafka_headers_new(8);
			if (parse_headers(rc, val, hdrs) != 0)
				goto out_bad;
			val = sep + strlen(rc->hdr_delim);
		}
	}
	if (rc->parse_key) {
		sep = strstr(val, rc->key_sep);
		if (!sep) {
			if (!rc->ignore_error)
				goto out_bad;
		} else {
			*sep = '\0';
			key = val;
			val = sep + strlen(rc->key_sep);
		}
	}
	if (key && is_null(rc, key, strlen(key)))
		key = NULL;
	if (is_null(rc, val, strlen(val)))
		val = NULL;
	do {
		err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic_name), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
					RD_KAFKA_V_VALUE(val, val ? strlen(val) : 0), RD_KAFKA_V_HEADERS(hdrs),
					RD_KAFKA_V_END);
		if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 100);
	} while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL);
	if (err) {
		rd_kafka_headers_destroy(hdrs);
		kafka_die("cannot produce to %s: %s (%s)", topic_name, rd_kafka_err2str(err), kafka_err_name(err));
	}
	/* On success the message owns hdrs. */
	if (sync)
		rd_kafka_flush(rk, -1);
	rd_kafka_poll(rk, 0);
	return 0;
out_bad:
	rd_kafka_headers_destroy(hdrs);
	fprintf(stderr, "%s: No %s found on line number %ld: '%s'\n", opt_prog(),
		rc->parse_headers && !hdrs ? "headers delimiter" : "key separator", lineno, line);
	return -EINVAL;
}

/* Kafka's option-to-property merge: a flag given explicitly overrides the
 * properties files; its default was set before them (make_conf()). */
static void merge(rd_kafka_conf_t *conf, const struct opts *o, const char *opt, const char *key)
{
	const char *v = opt_str(o, opt, NULL);

	if (v && kafka_conf_set(conf, key, v) != 0)
		exit(2);
}

static rd_kafka_conf_t *make_conf(const struct opts *o, const char *bootstrap)
{
	rd_kafka_conf_t *conf = kafka_conf_new(bootstrap);

	/* Java client defaults first, so the user's files and flags win. */
	kafka_conf_set(conf, "client.id", "console-producer");
	kafka_conf_set(conf, "partitioner", "murmur2_random");
	kafka_conf_set(conf, "message.timeout.ms", "120000");
	kafka_conf_set(conf, "acks", "-1");
	kafka_conf_set(conf, "linger.ms", "1000");
	kafka_conf_set(conf, "request.timeout.ms", "1500");
	kafka_conf_apply(conf, o, "command-config", NULL);
	kafka_conf_apply(conf, o, "producer.config", "producer-property");
	merge(conf, o, "timeout", "linger.ms");
	merge(conf, o, "request-required-acks", "acks");
	merge(conf, o, "request-timeout-ms", "request.timeout.ms");
	merge(conf, o, "message-send-max-retries", "retries");
	merge(conf, o, "retry-backoff-ms", "retry.backoff.ms");
	merge(conf, o, "batch-size", "batch.num.messages");
	merge(conf, o, "compression-codec", "compression.codec");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	return conf;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	const char *bootstrap = opt_str(o, "bootstrap-server", opt_str(o, "broker-list", NULL));
	bool tty = isatty(STDIN_FILENO);
	struct reader_cfg rc;
	rd_kafka_t *rk;
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	int status = 0;
	ssize_t n;

	opt_require(o, "topic");
	if (!bootstrap)
		opt_usage_error(o, "Missing required argument \"[bootstrap-server]\"");
	topic_name = opt_str(o, "topic", NULL);
	reader_configure(&rc, o);
	rk = kafka_new(RD_KAFKA_PRODUCER, make_conf(o, bootstrap));
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	for (;;) {
		if (tty) {
			fputs(">", stdout);
			fflush(stdout);
		}
		n = getline(&line, &cap, stdin);
		if (n < 0)
			break;
		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (produce_line(rk, &rc, line, lineno, opt_has(o, "sync")) != 0) {
			status = 1;
			break;
		}
	}
	free(line);
	line = NULL;
	while (rd_kafka_outq_len(rk) > 0)
		rd_kafka_flush(rk, 1000);
	if (failed_deliveries > 0)
		status = 1;
	rd_kafka_destroy(rk);
	opts_free(o);
	return status;
}
