/* gregor-producer-perf-test - Kafka's kafka-producer-perf-test.sh on librdkafka.
 *
 * Same flags, same output as Apache Kafka's ProducerPerformance tool, so a
 * seed's benchmark recipe runs unchanged against Gregor:
 *
 *   - a progress line every 5 s of delivery reports:
 *     "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency."
 *   - a final line with the 50th/95th/99th/99.9th latency percentiles.
 *
 * Latency is per record, from rd_kafka_produce() to its delivery report,
 * read with rd_kafka_message_latency() in the callback. A dedicated poller
 * thread serves the delivery reports so that the main thread may sleep for
 * --throughput without delaying (and so inflating) them; the statistics are
 * under one mutex because rd_kafka_flush() and transaction commits serve
 * callbacks from the main thread too.
 *
 * Latencies go into a log-linear histogram (128 sub-buckets per power of
 * two of microseconds: < 0.8 % relative error, fixed 32 KiB) instead of
 * Kafka's sampled array, so every record counts and memory does not grow
 * with --num-records. Percentiles use Kafka's rank rule (the value at index
 * floor(p * n) of the sorted latencies) and print whole milliseconds as
 * Kafka does.
 *
 * Differences from the Java tool, on purpose:
 *   - enable.idempotence=true is checked like the Java client does
 *     (acks=all, retries > 0, max.in.flight.requests.per.connection <= 5)
 *     before anything is sent; a conflict names the setting and exits 2.
 *   - --producer-props takes one or more k=v values after it, as in Kafka
 *     (argparse nargs='+'); the shared parser takes one per occurrence, so
 *     expand_multi_values() rewrites argv first.
 *   - an unreachable broker is a clear error after default.api.timeout.ms
 *     (10 s unless set in the properties), exit 1, instead of blocking.
 *   - --bootstrap-server (Kafka 3.8+) is accepted as a shortcut for
 *     --producer-props bootstrap.servers=...
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "lib/kafka.h"
#include "lib/opt.h"

#define PROG "gregor-producer-perf-test"
#define REPORT_INTERVAL_MS 5000
#define DEFAULT_TXN_DURATION_MS 3000
#define PAYLOAD_POOL_BYTES (4u << 20) /* random bytes that --record-size payloads are cut from */

/* ---- latency histogram ------------------------------------------------ */

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_US ((uint64_t)1 << 36) /* ~19 h; larger values are clamped */
#define HIST_BUCKETS ((36 - HIST_SUB_BITS + 2) * HIST_SUB)

struct hist {
	uint64_t counts[HIST_BUCKETS];
	uint64_t n;
	uint64_t sum_us;
	uint64_t max_us;
};

static unsigned hist_index(uint64_t v_us)
{
	if (v_us >= HIST_MAX_US)
		v_us = HIST_MAX_US - 1;
	if (v_us < HIST_SUB)
		return (unsigned)v_us;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v_us);
	unsigned shift = msb - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB + (unsigned)((v_us >> shift) - HIST_SUB);
}

/* Lowest value that falls in bucket idx, and the bucket's width. */
static uint64_t hist_lowest(unsigned idx, uint64_t *width)
{
	if (idx < HIST_SUB) {
		*width = 1;
		return idx;
	}
	unsigned k = idx / HIST_SUB;
	*width = (uint64_t)1 << (k - 1);
	return ((uint64_t)(idx % HIST_SUB) + HIST_SUB) << (k - 1);
}

static void hist_record(struct hist *h, uint64_t v_us)
{
	h->counts[hist_index(v_us)]++;
	h->n++;
	h->sum_us += v_us;
	if (v_us > h->max_us)
		h->max_us = v_us;
}

/* The latency at index floor(p * n) of the sorted values (Kafka's rule),
 * as the middle of its bucket, never above the largest value recorded. */
static uint64_t hist_percentile_us(const struct hist *h, double p)
{
	uint64_t rank = (uint64_t)(p * (double)h->n);
	uint64_t seen = 0;

	if (h->n == 0)
		return 0;
	if (rank >= h->n)
		rank = h->n - 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen > rank) {
			uint64_t width, v = hist_lowest(i, &width) + width / 2;
			return v < h->max_us ? v : h->max_us;
		}
	}
	return h->max_us;
}

/* ---- statistics (Kafka's Stats) --------------------------------------- */

struct stats {
	pthread_mutex_t lock;
	int64_t start_ms;
	struct hist hist; /* whole run */
	uint64_t bytes;   /* payload bytes delivered */
	uint64_t failed;  /* delivery reports with an error */
	int64_t window_start_ms;
	uint64_t window_count;
	uint64_t window_bytes;
	uint64_t window_sum_us;
	uint64_t window_max_us;
	char last_err[512]; /* first delivery error, reported at the end */
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void stats_init(struct stats *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->start_ms = s->window_start_ms = wall_ms();
}

static void stats_print_window(struct stats *s, int64_t now_ms)
{
	int64_t elapsed = now_ms - s->window_start_ms;

	if (elapsed <= 0)
		elapsed = 1;
	printf("%llu records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
	       (unsigned long long)s->window_count, 1000.0 * (double)s->window_count / (double)elapsed,
	       1000.0 * (double)s->window_bytes / (double)elapsed / (1024.0 * 1024.0),
	       (double)s->window_sum_us / 1000.0 / (double)s->window_count, (double)s->window_max_us / 1000.0);
	fflush(stdout);
	s->window_start_ms = now_ms;
	s->window_count = s->window_bytes = s->window_sum_us = s->window_max_us = 0;
}

/* One successful delivery; called with s->lock held. */
static void stats_record(struct stats *s, uint64_t latency_us, size_t bytes, int64_t now_ms)
{
	hist_record(&s->hist, latency_us);
	s->bytes += bytes;
	s->window_count++;
	s->window_bytes += bytes;
	s->window_sum_us += latency_us;
	if (latency_us > s->window_max_us)
		s->window_max_us = latency_us;
	if (now_ms - s->window_start_ms >= REPORT_INTERVAL_MS)
		stats_print_window(s, now_ms);
}

static void stats_print_total(struct stats *s)
{
	const struct hist *h = &s->hist;
	int64_t elapsed = wall_ms() - s->start_ms;

	if (elapsed <= 0)
		elapsed = 1;
	printf("%llu records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, "
	       "%llu ms 50th, %llu ms 95th, %llu ms 99th, %llu ms 99.9th.\n",
	       (unsigned long long)h->n, 1000.0 * (double)h->n / (double)elapsed,
	       1000.0 * (double)s->bytes / (double)elapsed / (1024.0 * 1024.0),
	       h->n ? (double)h->sum_us / 1000.0 / (double)h->n : 0.0, (double)h->max_us / 1000.0,
	       (unsigned long long)(hist_percentile_us(h, 0.5) / 1000),
	       (unsigned long long)(hist_percentile_us(h, 0.95) / 1000),
	       (unsigned long long)(hist_percentile_us(h, 0.99) / 1000),
	       (unsigned long long)(hist_percentile_us(h, 0.999) / 1000));
	fflush(stdout);
}

/* ---- librdkafka callbacks and the poller thread ------------------------ */

static struct stats stats;
static char *last_stats_json; /* for --print-metrics; under stats.lock */
static atomic_bool poller_stop;

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	int64_t lat_us = rd_kafka_message_latency(m);

	(void)rk;
	(void)opaque;
	pthread_mutex_lock(&stats.lock);
	if (m->err) {
		if (stats.failed++ == 0)
			snprintf(stats.last_err, sizeof(stats.last_err), "%s: %s", kafka_err_name(m->err),
				 rd_kafka_err2str(m->err));
	} else {
		stats_record(&stats, lat_us < 0 ? 0 : (uint64_t)lat_us, m->len, wall_ms());
	}
	pthread_mutex_unlock(&stats.lock);
}

static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
	(void)rk;
	(void)len;
	(void)opaque;
	pthread_mutex_lock(&stats.lock);
	free(last_stats_json);
	last_stats_json = json; /* keeps it: returning 1 tells librdkafka not to free */
	pthread_mutex_unlock(&stats.lock);
	return 1;
}

static void *poller_main(void *arg)
{
	rd_kafka_t *rk = arg;

	while (!atomic_load(&poller_stop))
		rd_kafka_poll(rk, 50);
	return NULL;
}

/* ---- options ---------------------------------------------------------- */

static const struct opt_def defs[] = {
	{ "topic", true, false, "<TOPIC>", "REQUIRED: produce messages to this topic." },
	{ "num-records", true, false, "<NUM-RECORDS>", "REQUIRED: number of messages to produce." },
	{ "record-size", true, false, "<RECORD-SIZE>",
	  "message size in bytes. Exactly one of --record-size, --payload-file or --payload-monotonic "
	  "must be given." },
	{ "payload-file", true, false, "<PAYLOAD-FILE>",
	  "file to read the message payloads from (UTF-8 text); a payload is picked at random for each "
	  "message." },
	{ "payload-delimiter", true, false, "<PAYLOAD-DELIMITER>",
	  "delimiter between payloads in --payload-file (default: \\n)." },
	{ "payload-monotonic", false, false, NULL, "payload is a monotonically increasing integer." },
	{ "throughput", true, false, "<THROUGHPUT>",
	  "REQUIRED: throttle to approximately THROUGHPUT messages/sec, as a steady rate; -1 disables "
	  "throttling." },
	{ "producer-props", true, true, "<PROP-NAME=PROP-VALUE>",
	  "producer configuration properties (bootstrap.servers, acks, linger.ms, ...), one or more "
	  "after the flag; they take precedence over --producer.config." },
	{ "command-config", true, false, "<String: config file>",
	  "Client properties file (security.protocol, sasl.*, ssl.*), applied before --producer.config." },
	{ "producer.config", true, false, "<CONFIG-FILE>", "producer config properties file." },
	{ "bootstrap-server", true, false, "<HOST:PORT>",
	  "the broker(s) to connect to; same as --producer-props bootstrap.servers=..." },
	{ "print-metrics", false, false, NULL, "print out the client's metrics at the end of the test." },
	{ "transactional-id", true, false, "<TRANSACTIONAL-ID>", "the transactional id to use; enables transactions." },
	{ "transaction-duration-ms", true, false, "<TRANSACTION-DURATION>",
	  "commit the transaction after this many ms (> 0; default 3000 when transactions are on); "
	  "enables transactions." },
	{ "warmup-records", true, false, "<WARMUP-RECORDS>",
	  "accepted for compatibility; must be smaller than --num-records (not reported separately)." },
	{ NULL },
};

static const struct opt_cmd cmd = {
	PROG,
	"This tool is used to verify the producer performance. To enable transactions, give a "
	"transactional id (--transactional-id, or transactional.id in the properties) or a transaction "
	"duration (--transaction-duration-ms).",
	defs,
};

/* Kafka's --producer-props takes every following value up to the next
 * option; the shared parser takes one value per occurrence. Returns a new
 * argv (the caller's strings, a heap array) where each such value is
 * preceded by its own "--producer-props". */
static char **expand_multi_values(int argc, char **argv, int *argc_out)
{
	char **out = calloc((size_t)argc * 2 + 1, sizeof(*out));
	int n = 0;

	if (!out)
		kafka_die("out of memory");
	for (int i = 0; i < argc; i++) {
		out[n++] = argv[i];
		if (strcmp(argv[i], "--producer-props") != 0)
			continue;
		char *flag = argv[i];
		for (int first = 1; i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0; first = 0) {
			if (!first)
				out[n++] = flag;
			out[n++] = argv[++i];
		}
	}
	*argc_out = n;
	return out;
}

struct config {
	const char *topic;
	int64_t num_records;
	int64_t record_size; /* 0 when payloads come from a file or are monotonic */
	bool monotonic;
	double throughput; /* records/s; <= 0 means unthrottled */
	bool transactions;
	int64_t txn_duration_ms;
	bool print_metrics;
};

static double parse_throughput(const struct opts *o)
{
	const char *s = opt_str(o, "throughput", NULL);
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || isnan(v) || v == 0)
		opt_usage_error(o, "invalid value \"%s\" for --throughput (want -1 or a rate > 0)", s);
	return v;
}

static void parse_config(const struct opts *o, struct config *c)
{
	int payload_opts = opt_has(o, "record-size") + opt_has(o, "payload-file") + opt_has(o, "payload-monotonic");

	opt_require(o, "topic");
	opt_require(o, "num-records");
	opt_require(o, "throughput");
	if (payload_opts != 1)
		opt_usage_error(o, "exactly one of --record-size, --payload-file or --payload-monotonic "
				   "must be specified");
	if (!opt_has(o, "producer-props") && !opt_has(o, "producer.config") && !opt_has(o, "bootstrap-server"))
		opt_usage_error(o, "Either --producer-props or --producer.config must be specified.");
	c->topic = opt_str(o, "topic", NULL);
	if (!*c->topic)
		opt_usage_error(o, "--topic must not be empty");
	c->num_records = opt_int(o, "num-records", 0, 1, INT64_MAX);
	c->record_size = opt_int(o, "record-size", 0, 1, 100 * 1024 * 1024);
	c->monotonic = opt_has(o, "payload-monotonic");
	c->throughput = parse_throughput(o);
	if (opt_int(o, "warmup-records", 0, 0, INT64_MAX) >= c->num_records)
		opt_usage_error(o, "The value for --warmup-records must be strictly fewer than the number "
				   "of records in the test, --num-records.");
	c->txn_duration_ms = opt_int(o, "transaction-duration-ms", 0, 1, INT64_MAX);
	c->print_metrics = opt_has(o, "print-metrics");
}

/* ---- payloads ----------------------------------------------------------- */

struct payloads {
	char *pool; /* --record-size: random A-Z bytes to cut records from */
	size_t pool_len;
	char **list; /* --payload-file: the payloads */
	size_t *lens;
	size_t count;
	uint64_t rng; /* xorshift64* state */
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* "\n", "\t", "\r" and "\\" in a delimiter given on the command line. */
static char *unescape(const char *s)
{
	char *out = malloc(strlen(s) + 1), *w = out;

	if (!out)
		kafka_die("out of memory");
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*w++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
	return out;
}

static void payloads_load_file(struct payloads *p, const char *path, const char *delim_arg)
{
	char *delim = unescape(delim_arg), *data = NULL, abs[PATH_MAX];
	size_t len = 0, dlen = strlen(delim);
	FILE *fp = fopen(path, "rb");

	if (!fp || dlen == 0)
		kafka_die("cannot read payload file \"%s\": %s", path,
			  fp ? "empty --payload-delimiter" : strerror(errno));
	printf("Reading payloads from: %s\n", realpath(path, abs) ? abs : path);
	for (size_t cap = 0;;) {
		if (len + 65536 > cap && !(data = realloc(data, cap = cap * 2 + 65536)))
			kafka_die("out of memory");
		size_t r = fread(data + len, 1, cap - len - 1, fp);
		len += r;
		if (r == 0)
			break;
	}
	fclose(fp);
	if (len == 0)
		kafka_die("File does not exist or empty file provided.");
	data[len] = '\0';
	for (char *s = data, *e; s < data + len; s = e + dlen) {
		e = memmem(s, (size_t)(data + len - s), delim, dlen);
		if (!e)
			e = data + len;
		if (e == s)
			continue;
		p->list = realloc(p->list, (p->count + 1) * sizeof(*p->list));
		p->lens = realloc(p->lens, (p->count + 1) * sizeof(*p->lens));
		if (!p->list || !p->lens)
			kafka_die("out of memory");
		p->list[p->count] = s;
		p->lens[p->count++] = (size_t)(e - s);
	}
	printf("Number of messages read: %zu\n", p->count);
	if (p->count == 0)
		kafka_die("no payloads in \"%s\"", path);
	free(delim);
}

static void payloads_init(struct payloads *p, const struct opts *o, const struct config *c)
{
	memset(p, 0, sizeof(*p));
	p->rng = 0x9E3779B97F4A7C15ULL;
	if (opt_has(o, "payload-file")) {
		payloads_load_file(p, opt_str(o, "payload-file", NULL), opt_str(o, "payload-delimiter", "\\n"));
		return;
	}
	if (c->monotonic)
		return;
	p->pool_len = PAYLOAD_POOL_BYTES + (size_t)c->record_size;
	p->pool = malloc(p->pool_len);
	if (!p->pool)
		kafka_die("out of memory");
	for (size_t i = 0; i < p->pool_len; i++)
		p->pool[i] = (char)('A' + rng_next(&p->rng) % 26);
}

/* The payload of record i: random uppercase letters like Kafka's, cut at a
 * random offset from a pre-generated pool (generating them byte by byte
 * would cost more CPU than the broker under test). */
static const char *payloads_pick(struct payloads *p, const struct config *c, int64_t i, size_t *len, char *numbuf)
{
	if (p->count) {
		size_t k = (size_t)(rng_next(&p->rng) % p->count);
		*len = p->lens[k];
		return p->list[k];
	}
	if (c->monotonic) {
		*len = (size_t)sprintf(numbuf, "%lld", (long long)i);
		return numbuf;
	}
	*len = (size_t)c->record_size;
	return p->pool + rng_next(&p->rng) % PAYLOAD_POOL_BYTES;
}

/* ---- producer configuration -------------------------------------------- */

/* A property's current value, global or (like acks) per-topic default;
 * "" if unknown. */
static const char *conf_str(rd_kafka_conf_t *conf, const char *key, char *buf, size_t size)
{
	size_t sz = size;
	const rd_kafka_topic_conf_t *tconf = rd_kafka_conf_get_default_topic_conf(conf);

	if (rd_kafka_conf_get(conf, key, buf, &sz) == RD_KAFKA_CONF_OK)
		return buf;
	sz = size;
	if (tconf && rd_kafka_topic_conf_get(tconf, key, buf, &sz) == RD_KAFKA_CONF_OK)
		return buf;
	buf[0] = '\0';
	return buf;
}

static bool conf_is(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char buf[64];

	return !strcmp(conf_str(conf, key, buf, sizeof(buf)), val);
}

static long long conf_ll(rd_kafka_conf_t *conf, const char *key)
{
	char buf[64];

	return strtoll(conf_str(conf, key, buf, sizeof(buf)), NULL, 10);
}

/* What the Java producer checks when enable.idempotence=true (ProducerConfig
 * postProcessAndValidateIdempotenceConfigs): acks must be all, retries must
 * be > 0, max.in.flight.requests.per.connection must be at most 5. librdkafka
 * defaults max.in.flight to 1000000 and lowers it itself when it was not
 * set, so only other values count as "set". Exits 2 naming the setting. */
static void check_idempotence(rd_kafka_conf_t *conf)
{
	long long inflight;

	if (!conf_is(conf, "enable.idempotence", "true"))
		return;
	/* acks is a topic property; without a default topic conf it has
	 * librdkafka's default, -1 (all). */
	if (rd_kafka_conf_get_default_topic_conf(conf) && !conf_is(conf, "acks", "-1") &&
	    !conf_is(conf, "acks", "all")) {
		fprintf(stderr,
			"%s: invalid configuration: acks must be \"all\" (or -1) when "
			"enable.idempotence=true; got acks=%lld\n",
			PROG, conf_ll(conf, "acks"));
		exit(2);
	}
	if (conf_ll(conf, "retries") <= 0) {
		fprintf(stderr,
			"%s: invalid configuration: retries must be greater than 0 when "
			"enable.idempotence=true; got retries=%lld\n",
			PROG, conf_ll(conf, "retries"));
		exit(2);
	}
	inflight = conf_ll(conf, "max.in.flight.requests.per.connection");
	if (inflight > 5 && inflight != 1000000) {
		fprintf(stderr,
			"%s: invalid configuration: max.in.flight.requests.per.connection must be "
			"at most 5 when enable.idempotence=true; got %lld\n",
			PROG, inflight);
		exit(2);
	}
}

static void apply_props(rd_kafka_conf_t *conf, const struct opts *o)
{
	if (opt_has(o, "bootstrap-server") &&
	    kafka_conf_set(conf, "bootstrap.servers", opt_str(o, "bootstrap-server", NULL)) != 0)
		exit(2);
	kafka_conf_apply(conf, o, "command-config", NULL);
	kafka_conf_apply(conf, o, "producer.config", "producer-props");
}

/* Builds the configuration: bootstrap and properties, client.id
 * perf-producer-client unless given, the transactional id, and callbacks. */
static rd_kafka_conf_t *build_conf(const struct opts *o, struct config *c)
{
	char bootstrap[1024] = "", txn_id[256] = "";
	size_t sz = sizeof(bootstrap);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	/* First pass only to learn bootstrap.servers, for kafka_conf_new()'s
	 * error messages; it exits on any bad property. */
	apply_props(conf, o);
	rd_kafka_conf_get(conf, "bootstrap.servers", bootstrap, &sz);
	rd_kafka_conf_destroy(conf);

	conf = kafka_conf_new(bootstrap[0] ? bootstrap : NULL);
	if (kafka_conf_set(conf, "client.id", "perf-producer-client") != 0)
		exit(2);
	apply_props(conf, o);
	sz = sizeof(txn_id);
	rd_kafka_conf_get(conf, "transactional.id", txn_id, &sz);
	c->transactions = opt_has(o, "transactional-id") || opt_has(o, "transaction-duration-ms") || txn_id[0];
	if (c->transactions) {
		if (opt_has(o, "transactional-id"))
			snprintf(txn_id, sizeof(txn_id), "%s", opt_str(o, "transactional-id", NULL));
		else if (!txn_id[0])
			snprintf(txn_id, sizeof(txn_id), "performance-producer-%lx-%x", (long)mono_ns(),
				 (unsigned)getpid());
		if (kafka_conf_set(conf, "transactional.id", txn_id) != 0)
			exit(2);
		if (c->txn_duration_ms == 0)
			c->txn_duration_ms = DEFAULT_TXN_DURATION_MS;
	}
	check_idempotence(conf);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
	if (c->print_metrics) {
		rd_kafka_conf_set_stats_cb(conf, stats_cb);
		if (conf_ll(conf, "statistics.interval.ms") == 0 &&
		    kafka_conf_set(conf, "statistics.interval.ms", "1000") != 0)
			exit(2);
	}
	return conf;
}

/* ---- the run ------------------------------------------------------------ */

static void check_fatal(rd_kafka_t *rk)
{
	char why[512];
	rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk, why, sizeof(why));

	if (err)
		kafka_die("fatal producer error: %s: %s", kafka_err_name(err), why);
}

static void txn_check(rd_kafka_error_t *error, const char *what)
{
	if (!error)
		return;
	kafka_die("%s failed: %s: %s", what, kafka_err_name(rd_kafka_error_code(error)), rd_kafka_error_string(error));
}

/* Sleeps until record i is due at the steady rate (absolute schedule, so
 * sleep overshoot does not accumulate). Bursts are at most 100 us long. */
static void throttle(const struct config *c, int64_t start_ns, int64_t i)
{
	if (c->throughput <= 0)
		return;
	int64_t due = start_ns + (int64_t)((double)i * 1e9 / c->throughput);
	if (due - mono_ns() > 100000) {
		struct timespec ts = { due / 1000000000, due % 1000000000 };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

static void produce_one(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const char *buf, size_t len)
{
	while (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)buf, len, NULL, 0, NULL) !=
	       0) {
		rd_kafka_resp_err_t err = rd_kafka_last_error();
		check_fatal(rk);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			kafka_die("produce failed: %s: %s", kafka_err_name(err), rd_kafka_err2str(err));
		usleep(200); /* the poller thread drains delivery reports meanwhile */
	}
}

static void run(rd_kafka_t *rk, const struct config *c, struct payloads *p)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, c->topic, NULL);
	int64_t txn_start_ms = 0, txn_size = 0;
	char numbuf[32];

	if (!rkt)
		kafka_die("cannot create topic handle for \"%s\"", c->topic);
	pthread_mutex_lock(&stats.lock);
	stats.start_ms = stats.window_start_ms = wall_ms();
	pthread_mutex_unlock(&stats.lock);
	int64_t start_ns = mono_ns();
	for (int64_t i = 0; i < c->num_records; i++) {
		size_t len;
		const char *buf = payloads_pick(p, c, i, &len, numbuf);

		if (c->transactions && txn_size == 0) {
			txn_check(rd_kafka_begin_transaction(rk), "begin transaction");
			txn_start_ms = wall_ms();
		}
		produce_one(rk, rkt, buf, len);
		txn_size++;
		if (c->transactions && wall_ms() - txn_start_ms >= c->txn_duration_ms) {
			txn_check(rd_kafka_commit_transaction(rk, -1), "commit transaction");
			txn_size = 0;
		}
		if ((i & 1023) == 0)
			check_fatal(rk);
		throttle(c, start_ns, i + 1);
	}
	if (c->transactions && txn_size)
		txn_check(rd_kafka_commit_transaction(rk, -1), "commit transaction");
	while (rd_kafka_flush(rk, 1000) == RD_KAFKA_RESP_ERR__TIMED_OUT)
		check_fatal(rk);
	rd_kafka_topic_destroy(rkt);
}

/* Kafka prints a table of metric names and values; librdkafka's metrics
 * are its statistics JSON, so this prints the last one, top-level fields
 * as "name : value" lines, then the full document on one line. */
static void print_metrics(void)
{
	pthread_mutex_lock(&stats.lock);
	if (!last_stats_json) {
		pthread_mutex_unlock(&stats.lock);
		printf("(no metrics: librdkafka emitted no statistics yet)\n");
		return;
	}
	printf("\nMetric Name                                                                   Value\n");
	const char *s = last_stats_json + 1;
	while (*s == '"') {
		const char *ke = strchr(s + 1, '"');
		if (!ke || ke[1] != ':' || ke[2] == '{' || ke[2] == '[')
			break;
		const char *ve = ke + 2 + strcspn(ke + 2, ",}");
		printf("librdkafka:%-66.*s: %.*s\n", (int)(ke - s - 1), s + 1, (int)(ve - ke - 2), ke + 2);
		if (*ve != ',')
			break;
		s = ve + 1;
	}
	printf("%s\n", last_stats_json);
	pthread_mutex_unlock(&stats.lock);
}

int main(int argc, char **argv)
{
	struct config c = { 0 };
	struct payloads p;
	pthread_t poller;
	int xargc;
	char **xargv = expand_multi_values(argc, argv, &xargc);
	struct opts *o = opts_parse(&cmd, xargc, xargv);

	parse_config(o, &c);
	stats_init(&stats);
	rd_kafka_conf_t *conf = build_conf(o, &c);
	payloads_init(&p, o, &c);
	rd_kafka_t *rk = kafka_new(RD_KAFKA_PRODUCER, conf);
	if (kafka_wait_broker(rk) != 0)
		exit(1);
	if (c.transactions)
		txn_check(rd_kafka_init_transactions(rk, kafka_timeout_ms()), "init transactions");
	pthread_create(&poller, NULL, poller_main, rk);
	run(rk, &c, &p);
	atomic_store(&poller_stop, true);
	pthread_join(poller, NULL);
	rd_kafka_poll(rk, 0);
	check_fatal(rk);

	pthread_mutex_lock(&stats.lock);
	stats_print_total(&stats);
	uint64_t failed = stats.failed;
	pthread_mutex_unlock(&stats.lock);
	if (c.print_metrics)
		print_metrics();
	if (failed)
		fprintf(stderr, "%s: %llu records failed; first error: %s\n", PROG, (unsigned long long)failed,
			stats.last_err);
	rd_kafka_destroy(rk);
	free(p.pool); /* the random payload pool (LeakSanitizer reports it otherwise) */
	opts_free(o);
	free(xargv);
	return failed ? 1 : 0;
}
