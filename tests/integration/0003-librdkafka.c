/* 0003-librdkafka: librdkafka admin + producer + consumer round trip.
 *
 *   0003-librdkafka <bootstrap> <none|gzip|snappy|lz4|zstd>
 *
 * Creates a 6-partition topic with the admin API, produces 10,000 keyed
 * messages with headers and explicit timestamps using compression.type=<codec>,
 * requires every delivery report to succeed with offsets 0..n-1 per partition
 * in production order, then consumes every partition with assign() from the
 * beginning (check.crcs=true) and requires byte-identical key, value,
 * headers (including a NULL-valued and an empty-valued header) and timestamp
 * at exactly the reported offsets. Driven by 0003-librdkafka.sh for all codecs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/itest.h"

#define MSG_CNT 10000
#define PART_CNT 6
#define TIMEOUT_MS 60000
#define TS_BASE 1700000000000LL

static const char *codec;
static char topic[128];

static int dr_cnt;
static int dr_err_cnt;
static int32_t dr_part[MSG_CNT];
static int64_t dr_off[MSG_CNT];

/* Deterministic message i: key, value, timestamp. Values vary in size and
 * compressibility; every 50th is 20 KB so batches of different shapes occur. */
static size_t gen_key(int i, char *buf, size_t size)
{
	return (size_t)snprintf(buf, size, "key-%d-%08x", i, (unsigned)(i * 2654435761u));
}

static size_t gen_value(int i, unsigned char *buf, size_t size)
{
	size_t len = (i % 50 == 0) ? 20000 : (size_t)(i * 7919 % 600);
	uint32_t x = (uint32_t)i * 2246822519u + 1;

	if (len > size)
		len = size;
	for (size_t k = 0; k < len; k++) {
		if (i % 3 == 0) { /* compressible text */
			buf[k] = (unsigned char)("gregor-says-hello-"[(k + (size_t)i) % 18]);
		} else { /* noise, includes 0x00 bytes */
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			buf[k] = (unsigned char)x;
		}
	}
	return len;
}

static int64_t gen_ts(int i)
{
	return TS_BASE + i;
}

/* Headers: "idx" = decimal i; "bin" = 4 big-endian bytes of i (often with
 * 0x00); "nul" with a NULL value on every 3rd; "empty" with a 0-byte value on
 * every 5th; a repeated "dup" key on every 7th. */
static rd_kafka_headers_t *gen_headers(int i)
{
	rd_kafka_headers_t *hdrs = rd_kafka_headers_new(5);
	char idx[16];
	unsigned char bin[4] = { (unsigned char)(i >> 24), (unsigned char)(i >> 16), (unsigned char)(i >> 8),
				 (unsigned char)i };

	snprintf(idx, sizeof(idx), "%d", i);
	rd_kafka_header_add(hdrs, "idx", -1, idx, -1);
	rd_kafka_header_add(hdrs, "bin", -1, bin, sizeof(bin));
	if (i % 3 == 0)
		rd_kafka_header_add(hdrs, "nul", -1, NULL, 0);
	if (i % 5 == 0)
		rd_kafka_header_add(hdrs, "empty", -1, "", 0);
	if (i % 7 == 0) {
		rd_kafka_header_add(hdrs, "dup", -1, "one", 3);
		rd_kafka_header_add(hdrs, "dup", -1, "two", 3);
	}
	return hdrs;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	int i = (int)(intptr_t)m->_private;

	(void)rk;
	(void)opaque;
	if (i < 0 || i >= MSG_CNT)
		ITEST_FAIL("delivery report with bad opaque %d", i);
	if (m->err) {
		if (dr_err_cnt++ < 10)
			fprintf(stderr, "delivery of message %d failed: %s\n", i, rd_kafka_err2str(m->err));
	}
	dr_part[i] = m->partition;
	dr_off[i] = m->offset;
	dr_cnt++;
}

static void create_topic(rd_kafka_t *rk)
{
	char errstr[512];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, PART_CNT, 1, errstr, sizeof(errstr));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t cnt;

	ITEST_CHECK(nt, "NewTopic_new: %s", errstr);
	rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, errstr, sizeof(errstr));
	rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
	ev = rd_kafka_queue_poll(q, 30000);
	ITEST_CHECK(ev, "no CreateTopics result within 30 s");
	ITEST_EQ_INT(rd_kafka_event_type(ev), RD_KAFKA_EVENT_CREATETOPICS_RESULT, "event type");
	ITEST_CHECK(!rd_kafka_event_error(ev), "CreateTopics request failed: %s", rd_kafka_event_error_string(ev));
	res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
	ITEST_EQ_INT(cnt, 1, "CreateTopics result count");
	ITEST_CHECK(!strcmp(rd_kafka_topic_result_name(res[0]), topic), "result topic %s",
		    rd_kafka_topic_result_name(res[0]));
	ITEST_CHECK(rd_kafka_topic_result_error(res[0]) == RD_KAFKA_RESP_ERR_NO_ERROR,
		    "CreateTopics %s: got %s (%s), want NO_ERROR", topic,
		    rd_kafka_err2name(rd_kafka_topic_result_error(res[0])),
		    rd_kafka_topic_result_error_string(res[0]) ? rd_kafka_topic_result_error_string(res[0]) : "");
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(opts);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_queue_destroy(q);

	/* The metadata must show 6 partitions. */
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
	ITEST_CHECK(!err, "metadata: %s", rd_kafka_err2str(err));
	ITEST_EQ_INT(md->topic_cnt, 1, "metadata topic count");
	ITEST_CHECK(!md->topics[0].err, "metadata topic error %s", rd_kafka_err2name(md->topics[0].err));
	ITEST_EQ_INT(md->topics[0].partition_cnt, PART_CNT, "metadata partition count");
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
}

static void produce_all(const char *bootstrap)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);
	char errstr[512], key[64];
	static unsigned char val[32768];
	rd_kafka_t *rk;

	itest_conf_set(conf, "compression.type", codec);
	itest_conf_set(conf, "acks", "all");
	itest_conf_set(conf, "linger.ms", "10");
	itest_conf_set(conf, "batch.num.messages", "1000");
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	ITEST_CHECK(rk, "rd_kafka_new producer: %s", errstr);

	create_topic(rk);
	ITEST_LOG("%s: created topic %s with %d partitions", codec, topic, PART_CNT);

	for (int i = 0; i < MSG_CNT; i++) {
		size_t klen = gen_key(i, key, sizeof(key));
		size_t vlen = gen_value(i, val, sizeof(val));
		rd_kafka_resp_err_t err;

		do {
			err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, klen),
						RD_KAFKA_V_VALUE(val, vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
						RD_KAFKA_V_TIMESTAMP(gen_ts(i)), RD_KAFKA_V_HEADERS(gen_headers(i)),
						RD_KAFKA_V_OPAQUE((void *)(intptr_t)i), RD_KAFKA_V_END);
			if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
				rd_kafka_poll(rk, 100);
		} while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL);
		ITEST_CHECK(!err, "producev %d: %s", i, rd_kafka_err2str(err));
		rd_kafka_poll(rk, 0);
	}
	rd_kafka_resp_err_t err = rd_kafka_flush(rk, TIMEOUT_MS);
	ITEST_CHECK(!err, "flush: %s (%d of %d delivery reports)", rd_kafka_err2str(err), dr_cnt, MSG_CNT);
	ITEST_EQ_INT(dr_cnt, MSG_CNT, "delivery reports");
	ITEST_EQ_INT(dr_err_cnt, 0, "failed deliveries");
	rd_kafka_destroy(rk);
}

/* Delivery reports must give each partition offsets 0..n-1 in production order. */
static int *by_off[PART_CNT];
static int part_cnt[PART_CNT];

static void index_offsets(void)
{
	int64_t next[PART_CNT] = { 0 };

	for (int i = 0; i < MSG_CNT; i++) {
		int32_t p = dr_part[i];

		ITEST_CHECK(p >= 0 && p < PART_CNT, "message %d reported in partition %d", i, p);
		ITEST_CHECK(dr_off[i] == next[p],
			    "message %d: reported offset %" PRId64 " in partition %d, want %" PRId64
			    " (offsets must be dense and in production order)",
			    i, dr_off[i], p, next[p]);
		next[p]++;
	}
	for (int p = 0; p < PART_CNT; p++) {
		part_cnt[p] = (int)next[p];
		by_off[p] = calloc(part_cnt[p] + 1, sizeof(int));
		ITEST_LOG("%s: partition %d holds %d messages", codec, p, part_cnt[p]);
	}
	for (int i = 0; i < MSG_CNT; i++)
		by_off[dr_part[i]][dr_off[i]] = i;
}

static void check_headers(int i, const rd_kafka_message_t *m)
{
	rd_kafka_headers_t *want = gen_headers(i), *got = NULL;
	rd_kafka_resp_err_t err = rd_kafka_message_headers(m, &got);
	size_t n = rd_kafka_header_cnt(want);

	ITEST_CHECK(!err, "message %d: no headers (%s)", i, rd_kafka_err2name(err));
	ITEST_EQ_INT(rd_kafka_header_cnt(got), n, "header count");
	for (size_t k = 0; k < n; k++) {
		const char *wn, *gn;
		const void *wv, *gv;
		size_t wl, gl;

		rd_kafka_header_get_all(want, k, &wn, &wv, &wl);
		rd_kafka_header_get_all(got, k, &gn, &gv, &gl);
		ITEST_CHECK(!strcmp(wn, gn), "message %d header %zu name: got '%s', want '%s'", i, k, gn, wn);
		ITEST_CHECK((wv == NULL) == (gv == NULL), "message %d header '%s': got %s value, want %s", i, wn,
			    gv ? "non-NULL" : "NULL", wv ? "non-NULL" : "NULL");
		ITEST_EQ_INT(gl, wl, "header value length");
		ITEST_CHECK(wl == 0 || !memcmp(wv, gv, wl), "message %d header '%s' value differs", i, wn);
	}
	rd_kafka_headers_destroy(want);
}

static void check_message(const rd_kafka_message_t *m)
{
	static unsigned char val[32768];
	char key[64];
	int p = m->partition, i;
	size_t klen, vlen;
	rd_kafka_timestamp_type_t tstype;
	int64_t ts;

	ITEST_CHECK(p >= 0 && p < PART_CNT, "consumed from partition %d", p);
	ITEST_CHECK(m->offset >= 0 && m->offset < part_cnt[p],
		    "partition %d: consumed offset %" PRId64 ", only %d produced", p, m->offset, part_cnt[p]);
	i = by_off[p][m->offset];
	klen = gen_key(i, key, sizeof(key));
	vlen = gen_value(i, val, sizeof(val));
	ITEST_CHECK(m->key_len == klen && !memcmp(m->key, key, klen),
		    "partition %d offset %" PRId64 ": key '%.*s', want '%s'", p, m->offset, (int)m->key_len,
		    (const char *)m->key, key);
	ITEST_CHECK(m->len == vlen && (vlen == 0 || !memcmp(m->payload, val, vlen)),
		    "partition %d offset %" PRId64 " (message %d): value of %zu bytes differs from the %zu produced", p,
		    m->offset, i, m->len, vlen);
	ts = rd_kafka_message_timestamp(m, &tstype);
	ITEST_EQ_INT(tstype, RD_KAFKA_TIMESTAMP_CREATE_TIME, "timestamp type");
	ITEST_EQ_INT(ts, gen_ts(i), "timestamp");
	check_headers(i, m);
}

static void consume_all(const char *bootstrap)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(PART_CNT);
	int64_t next[PART_CNT] = { 0 }, deadline = itest_now_ms() + TIMEOUT_MS;
	char errstr[512];
	int total = 0;
	rd_kafka_t *rk;

	/* librdkafka 2.0.2 refuses assign() without a group.id ("Unknown
	 * group"); nothing is committed, so no coordinator is needed. */
	snprintf(errstr, sizeof(errstr), "itest-0003-%s-%d", codec, (int)getpid());
	itest_conf_set(conf, "group.id", errstr);
	itest_conf_set(conf, "enable.auto.commit", "false");
	itest_conf_set(conf, "enable.auto.offset.store", "false");
	itest_conf_set(conf, "check.crcs", "true");
	itest_conf_set(conf, "enable.partition.eof", "false");
	itest_conf_set(conf, "fetch.wait.max.ms", "100");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	ITEST_CHECK(rk, "rd_kafka_new consumer: %s", errstr);
	for (int p = 0; p < PART_CNT; p++)
		rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_resp_err_t err = rd_kafka_assign(rk, parts);
	ITEST_CHECK(!err, "assign: %s", rd_kafka_err2str(err));
	rd_kafka_topic_partition_list_destroy(parts);

	while (total < MSG_CNT) {
		rd_kafka_message_t *m;

		if (itest_now_ms() > deadline) {
			for (int p = 0; p < PART_CNT; p++)
				fprintf(stderr, "partition %d: consumed %" PRId64 " of %d\n", p, next[p], part_cnt[p]);
			ITEST_FAIL("consumed %d of %d messages within %d ms", total, MSG_CNT, TIMEOUT_MS);
		}
		m = rd_kafka_consumer_poll(rk, 200);
		if (!m)
			continue;
		if (m->err)
			ITEST_FAIL("consume error on partition %d offset %" PRId64 ": %s", m->partition, m->offset,
				   rd_kafka_message_errstr(m));
		ITEST_CHECK(!strcmp(rd_kafka_topic_name(m->rkt), topic), "message from topic %s",
			    rd_kafka_topic_name(m->rkt));
		ITEST_CHECK(m->offset == next[m->partition],
			    "partition %d: got offset %" PRId64 ", want %" PRId64 " (order/gap)", m->partition,
			    m->offset, next[m->partition]);
		check_message(m);
		next[m->partition]++;
		total++;
		rd_kafka_message_destroy(m);
	}
	for (int p = 0; p < PART_CNT; p++)
		ITEST_EQ_INT(next[p], part_cnt[p], "messages consumed from a partition");
	/* Nothing beyond what was produced. */
	rd_kafka_message_t *extra = rd_kafka_consumer_poll(rk, 1000);
	if (extra) {
		ITEST_CHECK(extra->err, "unexpected extra message at partition %d offset %" PRId64, extra->partition,
			    extra->offset);
		rd_kafka_message_destroy(extra);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	ITEST_LOG("%s: consumed and verified %d messages", codec, total);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s <bootstrap> <none|gzip|snappy|lz4|zstd>\n", argv[0]);
		return 2;
	}
	codec = argv[2];
	snprintf(topic, sizeof(topic), "itest-rk-%s-%d", codec, (int)getpid());
	produce_all(argv[1]);
	index_offsets();
	consume_all(argv[1]);
	for (int p = 0; p < PART_CNT; p++)
		free(by_off[p]);
	return 0;
}
