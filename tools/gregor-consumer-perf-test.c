/* gregor-consumer-perf-test - Kafka's kafka-consumer-perf-test.sh on librdkafka.
 *
 * Same flags and the same CSV-like output as Apache Kafka's
 * ConsumerPerformance tool:
 *
 *   start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
 *   nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
 *
 * then one data row (or, with --show-detailed-stats, one row per reporting
 * interval under a "time, threadId, ..." header). Bytes are key + value
 * bytes; MB is 1024 * 1024 bytes; rebalance.time.ms is the time from
 * subscribing until the first partitions were assigned; fetch.time.ms is
 * end - start - rebalance time. The run ends after --messages records or
 * when no record arrived for --timeout ms (then a WARNING line, as Kafka).
 *
 * Group or not. Kafka's tool always joins --group. A broker that does not
 * advertise JoinGroup (Gregor before its group coordinator lands) would
 * leave librdkafka looking for a coordinator forever, so the tool asks the
 * bootstrap broker for its ApiVersions first and, without group support,
 * reads every partition of the topic itself with the simple-consumer API
 * (from the earliest offset, or the latest with --from-latest; no group.id,
 * no commits) and says so on stderr. --assign forces that mode (Gregor
 * extension; bench/compare uses it against both brokers so they serve the
 * same fetch path and nothing else).
 *
 * Records are taken with rd_kafka_consume_batch_queue() (up to 1000 at a
 * time), which is what keeps a C consumer from being the bottleneck; the
 * main queue is forwarded to it (rd_kafka_poll_set_consumer()), so the same
 * call serves the rebalance, error and statistics callbacks. rd_kafka_poll()
 * must not be called after that.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "lib/kafka.h"
#include "lib/opt.h"

#define PROG "gregor-consumer-perf-test"
#define BATCH_MAX 1000
#define API_KEY_JOIN_GROUP 11
#define API_KEY_API_VERSIONS 18

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>",
	  "REQUIRED (unless --broker-list is given): The server(s) to connect to." },
	{ "broker-list", true, false, "<String: broker-list>", "DEPRECATED, use --bootstrap-server instead." },
	{ "topic", true, false, "<String: topic>", "REQUIRED: The topic to consume from." },
	{ "messages", true, false, "<Long: count>", "REQUIRED: The number of messages to consume." },
	{ "group", true, false, "<String: gid>", "The group id to consume on. (default: perf-consumer-<random>)" },
	{ "command-config", true, false, "<String: config file>",
	  "Client properties file (security.protocol, sasl.*, ssl.*), applied before --consumer.config." },
	{ "consumer.config", true, false, "<String: config file>", "Consumer config properties file." },
	{ "fetch-size", true, false, "<Integer: size>",
	  "The amount of data to fetch in a single request (max.partition.fetch.bytes). (default: 1048576)" },
	{ "socket-buffer-size", true, false, "<Integer: size>", "The size of the tcp RECV size. (default: 2097152)" },
	{ "timeout", true, false, "<Long: milliseconds>",
	  "The maximum allowed time in milliseconds between returned records. (default: 10000)" },
	{ "show-detailed-stats", false, false, NULL,
	  "If set, stats are reported for each reporting interval as configured by reporting-interval." },
	{ "reporting-interval", true, false, "<Long: interval_ms>",
	  "Interval in milliseconds at which to print progress info. (default: 5000)" },
	{ "hide-header", false, false, NULL, "If set, skips printing the header for the stats." },
	{ "from-latest", false, false, NULL,
	  "If the consumer does not already have an established offset to consume from, start with the "
	  "latest message present in the log rather than the earliest message." },
	{ "print-metrics", false, false, NULL, "Print out the metrics (librdkafka statistics)." },
	{ "assign", false, false, NULL,
	  "Gregor extension: do not join a group; assign every partition of the topic directly." },
	{ NULL },
};

static const struct opt_cmd cmd = { PROG, "This tool is used to verify the consumer performance.", defs };

struct config {
	const char *bootstrap;
	const char *topic;
	const char *group;
	int64_t messages;
	int64_t timeout_ms;
	int64_t interval_ms;
	bool detailed;
	bool from_latest;
	bool assign;
	bool print_metrics;
};

struct progress {
	int64_t start_ms;
	int64_t join_start_ms;
	int64_t join_ms;       /* total rebalance time */
	int64_t join_ms_round; /* rebalance time since the last detailed row */
	int assigned;          /* partitions currently assigned */
	int64_t msgs, bytes;
	int64_t last_report_ms, last_msgs, last_bytes;
};

static struct progress prog_state;
static char *last_stats_json;

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Kafka's default date format, yyyy-MM-dd HH:mm:ss:SSS, local time. */
static const char *fmt_time(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	localtime_r(&t, &tm);
	n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + n, size - n, ":%03d", (int)(ms % 1000));
	return buf;
}

/* ---- does the broker have groups? -------------------------------------- */

static int connect_first(const char *bootstrap, int timeout_ms)
{
	char host[256], *port;
	const char *b = strstr(bootstrap, "://") ? strstr(bootstrap, "://") + 3 : bootstrap;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1;

	snprintf(host, sizeof(host), "%.*s", (int)strcspn(b, ","), b);
	port = strrchr(host, ':');
	if (!port)
		return -1;
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0) {
		/* SO_SNDTIMEO also bounds connect() on Linux. */
		struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static bool read_full(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

/* Asks the first bootstrap broker for ApiVersions v0 (the one version
 * every broker answers) and reports whether JoinGroup is listed. On any
 * failure it answers true, so that the normal (Kafka) path runs and
 * librdkafka reports the problem. */
static bool broker_has_groups(const char *bootstrap, int timeout_ms)
{
	static const uint8_t req[] = {
		0, 0,
		0, 10, /* size */
		0, API_KEY_API_VERSIONS,
		0, 0, /* api key, version 0 */
		0, 0,
		0, 1, /* correlation id */
		0, 0, /* client id "" */
	};
	uint8_t hdr[4], *resp = NULL;
	bool has = true;
	int fd = connect_first(bootstrap, timeout_ms);

	if (fd < 0)
		return true;
	if (write(fd, req, sizeof(req)) != (ssize_t)sizeof(req) || !read_full(fd, hdr, 4))
		goto out;
	uint32_t len, count;
	uint16_t key;

	memcpy(&len, hdr, 4); /* memcpy: the frame bytes have no alignment */
	len = ntohl(len);
	if (len < 10 || len > (1u << 20) || !(resp = malloc(len)) || !read_full(fd, resp, len))
		goto out;
	/* correlation id (4), error code (2), count (4), [key, min, max] */
	memcpy(&count, resp + 6, 4);
	count = ntohl(count);
	if (resp[4] || resp[5] || count > (len - 10) / 6)
		goto out;
	has = false;
	for (uint32_t i = 0; i < count; i++) {
		memcpy(&key, resp + 10 + 6 * i, 2);
		if (ntohs(key) == API_KEY_JOIN_GROUP)
			has = true;
	}
out:
	free(resp);
	close(fd);
	return has;
}

/* ---- consuming ------------------------------------------------------------ */

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque)
{
	struct progress *ps = &prog_state;
	bool cooperative = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");

	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		if (ps->assigned == 0) {
			int64_t elapsed = wall_ms() - ps->join_start_ms;
			ps->join_ms += elapsed;
			ps->join_ms_round += elapsed;
		}
		ps->assigned += parts->cnt;
		if (cooperative)
			rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
		else
			rd_kafka_assign(rk, parts);
	} else {
		ps->assigned = cooperative ? ps->assigned - parts->cnt : 0;
		if (ps->assigned <= 0) {
			ps->assigned = 0;
			ps->join_start_ms = wall_ms();
		}
		if (cooperative)
			rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
		else
			rd_kafka_assign(rk, NULL);
	}
}

static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
	(void)rk;
	(void)len;
	(void)opaque;
	free(last_stats_json);
	last_stats_json = json;
	return 1; /* we keep json */
}

/* --assign: starts every partition of the topic on one queue with the
 * simple-consumer API, so no group.id, no coordinator and no offset commits
 * are involved (the broker serves Metadata, ListOffsets and Fetch only).
 * Returns the queue; *parts_out gets the partition list to stop. */
static rd_kafka_queue_t *assign_all(rd_kafka_t *rk, const struct config *c, rd_kafka_topic_t **rkt_out, int *parts_out)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, c->topic, NULL);
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, kafka_timeout_ms());
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);

	if (err)
		kafka_die("cannot get metadata for topic \"%s\": %s", c->topic, kafka_err_name(err));
	if (md->topic_cnt != 1 || md->topics[0].err)
		kafka_die("topic \"%s\": %s", c->topic,
			  kafka_err_name(md->topic_cnt ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART));
	for (int i = 0; i < md->topics[0].partition_cnt; i++) {
		if (rd_kafka_consume_start_queue(rkt, md->topics[0].partitions[i].id,
						 c->from_latest ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING,
						 q) != 0)
			kafka_die("cannot start partition %d: %s", md->topics[0].partitions[i].id,
				  kafka_err_name(rd_kafka_last_error()));
	}
	*parts_out = md->topics[0].partition_cnt;
	*rkt_out = rkt;
	prog_state.assigned = *parts_out;
	prog_state.join_ms = prog_state.join_ms_round = wall_ms() - prog_state.join_start_ms;
	rd_kafka_metadata_destroy(md);
	return q;
}

static void assign_stop(rd_kafka_topic_t *rkt, int parts)
{
	for (int i = 0; i < parts; i++)
		rd_kafka_consume_stop(rkt, i);
	rd_kafka_topic_destroy(rkt);
}

static void print_detailed(struct progress *ps, int64_t now_ms)
{
	char tbuf[64];
	double elapsed = (double)(now_ms - ps->last_report_ms);
	double mb_total = (double)ps->bytes / (1024.0 * 1024.0);
	double mb_int = (double)(ps->bytes - ps->last_bytes) / (1024.0 * 1024.0);
	int64_t n_int = ps->msgs - ps->last_msgs;
	int64_t fetch_ms = now_ms - ps->last_report_ms - ps->join_ms_round;

	printf("%s, %d, %.4f, %.4f, %lld, %.4f, %lld, %lld, %.4f, %.4f\n", fmt_time(now_ms, tbuf, sizeof(tbuf)), 0,
	       mb_total, 1000.0 * mb_int / elapsed, (long long)ps->msgs, 1000.0 * (double)n_int / elapsed,
	       (long long)ps->join_ms_round, (long long)fetch_ms,
	       fetch_ms <= 0 ? 0.0 : 1000.0 * mb_int / (double)fetch_ms,
	       fetch_ms <= 0 ? 0.0 : 1000.0 * (double)n_int / (double)fetch_ms);
	fflush(stdout);
	ps->join_ms_round = 0;
	ps->last_report_ms = now_ms;
	ps->last_msgs = ps->msgs;
	ps->last_bytes = ps->bytes;
}

/* Reads records from q until --messages or --timeout. In --assign mode
 * (no group, so the main queue is not forwarded) it also serves the main
 * queue's error and statistics callbacks with rd_kafka_poll(). */
static void consume(rd_kafka_t *rk, rd_kafka_queue_t *q, const struct config *c)
{
	struct progress *ps = &prog_state;
	rd_kafka_message_t *batch[BATCH_MAX];
	int64_t now = wall_ms(), last_consumed = now;

	ps->last_report_ms = now;
	while (ps->msgs < c->messages && now - last_consumed <= c->timeout_ms) {
		size_t want =
			(size_t)(c->messages - ps->msgs) < BATCH_MAX ? (size_t)(c->messages - ps->msgs) : BATCH_MAX;
		ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch, want);
		now = wall_ms();
		for (ssize_t i = 0; i < n; i++) {
			rd_kafka_message_t *m = batch[i];
			if (m->err) {
				if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
					fprintf(stderr, "%s: consume error: %s: %s\n", PROG, kafka_err_name(m->err),
						rd_kafka_message_errstr(m));
			} else {
				last_consumed = now;
				ps->msgs++;
				ps->bytes += (int64_t)m->len + (int64_t)m->key_len;
				if (now - ps->last_report_ms >= c->interval_ms) {
					if (c->detailed)
						print_detailed(ps, now);
					ps->join_ms_round = 0;
					ps->last_report_ms = now;
					ps->last_msgs = ps->msgs;
					ps->last_bytes = ps->bytes;
				}
			}
			rd_kafka_message_destroy(m);
		}
		if (c->assign)
			rd_kafka_poll(rk, 0);
	}
	if (ps->msgs < c->messages)
		printf("WARNING: Exiting before consuming the expected number of messages: timeout (%lld ms) "
		       "exceeded. You can use the --timeout option to increase the timeout.\n",
		       (long long)c->timeout_ms);
}

static void parse_config(const struct opts *o, struct config *c)
{
	static char group[64];

	opt_require(o, "messages");
	opt_require(o, "topic");
	c->bootstrap = opt_str(o, "bootstrap-server", opt_str(o, "broker-list", NULL));
	if (!c->bootstrap)
		opt_usage_error(o, "Missing required argument \"[bootstrap-server]\"");
	c->topic = opt_str(o, "topic", NULL);
	if (!*c->topic)
		opt_usage_error(o, "--topic must not be empty");
	c->messages = opt_int(o, "messages", 0, 0, INT64_MAX);
	c->timeout_ms = opt_int(o, "timeout", 10000, 0, INT32_MAX);
	c->interval_ms = opt_int(o, "reporting-interval", 5000, 1, INT64_MAX);
	snprintf(group, sizeof(group), "perf-consumer-%d", (int)((wall_ms() ^ getpid()) % 100000));
	c->group = opt_str(o, "group", group);
	if (!*c->group)
		opt_usage_error(o, "--group must not be empty");
	(void)opt_int(o, "fetch-size", 1048576, 1, INT32_MAX);
	(void)opt_int(o, "socket-buffer-size", 2097152, 1, INT32_MAX);
	c->detailed = opt_has(o, "show-detailed-stats");
	c->from_latest = opt_has(o, "from-latest");
	c->assign = opt_has(o, "assign");
	c->print_metrics = opt_has(o, "print-metrics");
}

static rd_kafka_conf_t *build_conf(const struct opts *o, const struct config *c)
{
	char timeout[32];
	rd_kafka_conf_t *conf = kafka_conf_new(c->bootstrap);

	/* Bound the broker wait by --timeout unless the file says otherwise. */
	snprintf(timeout, sizeof(timeout), "%lld", (long long)(c->timeout_ms > 0 ? c->timeout_ms : 1));
	if (kafka_conf_set(conf, "default.api.timeout.ms", timeout) != 0 ||
	    kafka_conf_set(conf, "client.id", "perf-consumer-client") != 0)
		exit(2);
	kafka_conf_apply(conf, o, "command-config", NULL);
	kafka_conf_apply(conf, o, "consumer.config", NULL);
	/* Kafka sets these over whatever the file says. */
	if (kafka_conf_set(conf, "bootstrap.servers", c->bootstrap) != 0 ||
	    (!c->assign && kafka_conf_set(conf, "group.id", c->group) != 0) ||
	    kafka_conf_set(conf, "socket.receive.buffer.bytes", opt_str(o, "socket-buffer-size", "2097152")) != 0 ||
	    kafka_conf_set(conf, "max.partition.fetch.bytes", opt_str(o, "fetch-size", "1048576")) != 0 ||
	    kafka_conf_set(conf, "auto.offset.reset", c->from_latest ? "latest" : "earliest") != 0 ||
	    kafka_conf_set(conf, "check.crcs", "false") != 0)
		exit(2);
	if (c->print_metrics) {
		rd_kafka_conf_set_stats_cb(conf, stats_cb);
		if (kafka_conf_set(conf, "statistics.interval.ms", "1000") != 0)
			exit(2);
	}
	return conf;
}

static void print_summary(const struct progress *ps, int64_t end_ms)
{
	char t0[64], t1[64];
	double elapsed_s = (double)(end_ms - ps->start_ms) / 1000.0;
	int64_t fetch_ms = end_ms - ps->start_ms - ps->join_ms;
	double mb = (double)ps->bytes / (1024.0 * 1024.0);

	if (elapsed_s <= 0)
		elapsed_s = 0.001;
	printf("%s, %s, %.4f, %.4f, %lld, %.4f, %lld, %lld, %.4f, %.4f\n", fmt_time(ps->start_ms, t0, sizeof(t0)),
	       fmt_time(end_ms, t1, sizeof(t1)), mb, mb / elapsed_s, (long long)ps->msgs, (double)ps->msgs / elapsed_s,
	       (long long)ps->join_ms, (long long)fetch_ms, fetch_ms > 0 ? mb / ((double)fetch_ms / 1000.0) : 0.0,
	       fetch_ms > 0 ? (double)ps->msgs / ((double)fetch_ms / 1000.0) : 0.0);
}

int main(int argc, char **argv)
{
	struct config c = { 0 };
	struct opts *o = opts_parse(&cmd, argc, argv);

	parse_config(o, &c);
	rd_kafka_topic_t *rkt = NULL;
	rd_kafka_queue_t *q;
	int parts = 0;

	if (!c.assign && !broker_has_groups(c.bootstrap, (int)(c.timeout_ms > 0 ? c.timeout_ms : 1))) {
		fprintf(stderr,
			"%s: the broker does not support consumer groups (no JoinGroup); "
			"assigning all partitions of \"%s\" directly\n",
			PROG, c.topic);
		c.assign = true;
	}
	rd_kafka_conf_t *conf = build_conf(o, &c);
	if (!c.assign)
		rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	rd_kafka_t *rk = kafka_new(RD_KAFKA_CONSUMER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	if (!c.assign)
		rd_kafka_poll_set_consumer(rk);

	if (!opt_has(o, "hide-header"))
		printf("%s, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
		       "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n",
		       c.detailed ? "time, threadId" : "start.time, end.time");
	prog_state.start_ms = prog_state.join_start_ms = wall_ms();
	if (c.assign) {
		q = assign_all(rk, &c, &rkt, &parts);
	} else {
		q = rd_kafka_queue_get_consumer(rk);
		rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(topics, c.topic, RD_KAFKA_PARTITION_UA);
		rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics);
		rd_kafka_topic_partition_list_destroy(topics);
		if (err)
			kafka_die("cannot subscribe to \"%s\": %s", c.topic, kafka_err_name(err));
	}
	consume(rk, q, &c);
	int64_t end_ms = wall_ms();
	rd_kafka_queue_destroy(q);
	if (c.assign)
		assign_stop(rkt, parts);
	if (!c.detailed)
		print_summary(&prog_state, end_ms);
	if (c.print_metrics && last_stats_json)
		printf("%s\n", last_stats_json);
	fflush(stdout);
	if (!c.assign)
		rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	free(last_stats_json);
	opts_free(o);
	return 0;
}
