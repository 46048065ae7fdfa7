/*
 * 3002-idem-proxy.c - librdkafka side of the idempotence fault tests
 * (drivers: 3002-idem-proxy.py, 3003-idem-kill9.py).
 *
 *   3002-idem-proxy produce BOOTSTRAP TOPIC COUNT PARTITIONS IDEMPOTENCE [RATE]
 *       sends messages "00000000".."COUNT-1", message i to partition
 *       i % PARTITIONS, acks=all, max.in.flight=5, retries unbounded within
 *       message.timeout.ms=120s; IDEMPOTENCE 1 sets enable.idempotence.
 *       RATE > 0 paces production (messages per second).  Exits 0 when every
 *       delivery report is a success, 1 otherwise.
 *   3002-idem-proxy verify BOOTSTRAP TOPIC COUNT PARTITIONS EXACT
 *       reads every partition from the start to its high watermark and
 *       prints "total=N dups=N missing=N reordered=N misplaced=N".  With
 *       EXACT 1 any non-zero count (or total != COUNT) fails the test.
 */
#include "../lib/itest.h"

#include <stdbool.h>
#include <unistd.h>

#define PARTS_MAX 64

static int64_t delivered, failed;
static rd_kafka_resp_err_t first_err;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err) {
		if (!failed++)
			first_err = m->err;
	} else {
		delivered++;
	}
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	char fatal[512];

	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
		ITEST_FAIL("fatal producer error: %s", fatal);
	}
	/* connection errors are expected: the proxy cuts connections */
	(void)reason;
}

static int produce(const char *bootstrap, const char *topic, long count, int nparts, bool idem, long rate)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);
	char errstr[512], val[24];
	int64_t t0 = itest_now_ms();
	rd_kafka_t *rk;

	itest_conf_set(conf, "acks", "all");
	itest_conf_set(conf, "enable.idempotence", idem ? "true" : "false");
	itest_conf_set(conf, "max.in.flight.requests.per.connection", "5");
	itest_conf_set(conf, "retries", "2147483647");
	itest_conf_set(conf, "retry.backoff.ms", "20");
	itest_conf_set(conf, "message.timeout.ms", "120000");
	itest_conf_set(conf, "linger.ms", "2");
	itest_conf_set(conf, "batch.num.messages", "100");
	itest_conf_set(conf, "reconnect.backoff.ms", "10");
	itest_conf_set(conf, "reconnect.backoff.max.ms", "200");
	itest_conf_set(conf, "log.connection.close", "false");
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	ITEST_CHECK(rk, "rd_kafka_new: %s", errstr);
	for (long i = 0; i < count; i++) {
		rd_kafka_resp_err_t err;

		snprintf(val, sizeof(val), "%08ld", i);
		while ((err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
						RD_KAFKA_V_PARTITION((int32_t)(i % nparts)), RD_KAFKA_V_VALUE(val, 8),
						RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
		       RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 10);
		ITEST_CHECK(!err, "produce %ld: %s", i, rd_kafka_err2str(err));
		rd_kafka_poll(rk, 0);
		if (rate > 0 && i % 100 == 99)
			while (itest_now_ms() - t0 < (i + 1) * 1000 / rate)
				rd_kafka_poll(rk, 5);
	}
	for (int64_t deadline = itest_now_ms() + 150000; rd_kafka_outq_len(rk) > 0;) {
		rd_kafka_poll(rk, 50);
		ITEST_CHECK(itest_now_ms() < deadline, "%d messages still queued after 150 s", rd_kafka_outq_len(rk));
	}
	ITEST_LOG("produced %ld to %s: delivered=%" PRId64 " failed=%" PRId64 " (first error: %s) in %" PRId64 " ms",
		  count, topic, delivered, failed, failed ? rd_kafka_err2str(first_err) : "none", itest_now_ms() - t0);
	rd_kafka_destroy(rk);
	return failed == 0 && delivered == count ? 0 : 1;
}

struct part_seen {
	long last; /* last number seen in this partition */
	int64_t hw;
	bool done;
};

static int verify(const char *bootstrap, const char *topic, long count, int nparts, bool exact)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);
	rd_kafka_topic_partition_list_t *tps = rd_kafka_topic_partition_list_new(nparts);
	struct part_seen ps[PARTS_MAX];
	long total = 0, dups = 0, missing = 0, reordered = 0, misplaced = 0;
	int64_t deadline = itest_now_ms() + 60000;
	uint8_t *seen = calloc((size_t)count, 1);
	char errstr[512];
	int done = 0;
	rd_kafka_t *rk;

	ITEST_CHECK(nparts <= PARTS_MAX && seen, "bad arguments");
	itest_conf_set(conf, "group.id", "itest-3002-verify");
	itest_conf_set(conf, "enable.auto.commit", "false");
	itest_conf_set(conf, "check.crcs", "true");
	itest_conf_set(conf, "fetch.wait.max.ms", "50");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	ITEST_CHECK(rk, "rd_kafka_new: %s", errstr);
	for (int p = 0; p < nparts; p++) {
		int64_t lo;
		rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &ps[p].hw, 10000);

		ITEST_CHECK(!err, "watermarks of %s-%d: %s", topic, p, rd_kafka_err2str(err));
		ps[p].last = -1;
		ps[p].done = ps[p].hw == 0;
		done += ps[p].done;
		rd_kafka_topic_partition_list_add(tps, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
	}
	ITEST_CHECK(!rd_kafka_assign(rk, tps), "assign");
	while (done < nparts) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		long n;

		ITEST_CHECK(itest_now_ms() < deadline, "verify %s: %d of %d partitions read in 60 s", topic, done,
			    nparts);
		if (!m)
			continue;
		ITEST_CHECK(!m->err || m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF, "consume: %s",
			    rd_kafka_message_errstr(m));
		if (!m->err) {
			struct part_seen *s = &ps[m->partition];
			char buf[16] = { 0 };

			memcpy(buf, m->payload, m->len < 15 ? m->len : 15);
			n = strtol(buf, NULL, 10);
			total++;
			if (n < 0 || n >= count || n % nparts != m->partition)
				misplaced++;
			else if (seen[n]++)
				dups++;
			else if (n < s->last)
				reordered++;
			if (n > s->last)
				s->last = n;
			if (m->offset + 1 >= s->hw && !s->done) {
				s->done = true;
				done++;
			}
		}
		rd_kafka_message_destroy(m);
	}
	for (long i = 0; i < count; i++)
		missing += !seen[i];
	printf("verify %s: total=%ld dups=%ld missing=%ld reordered=%ld misplaced=%ld\n", topic, total, dups, missing,
	       reordered, misplaced);
	fflush(stdout);
	rd_kafka_topic_partition_list_destroy(tps);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	free(seen);
	if (exact && (total != count || dups || missing || reordered || misplaced))
		ITEST_FAIL("%s is not exactly once in order", topic);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 7 && !strcmp(argv[1], "produce"))
		return produce(argv[2], argv[3], atol(argv[4]), atoi(argv[5]), atoi(argv[6]) != 0,
			       argc > 7 ? atol(argv[7]) : 0);
	if (argc >= 7 && !strcmp(argv[1], "verify"))
		return verify(argv[2], argv[3], atol(argv[4]), atoi(argv[5]), atoi(argv[6]) != 0);
	fprintf(stderr, "usage: %s produce|verify BOOTSTRAP TOPIC COUNT PARTITIONS IDEMPOTENCE|EXACT [RATE]\n",
		argv[0]);
	return 2;
}
