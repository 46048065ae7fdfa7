/*
 * 1055-offsets-compaction.c - librdkafka side of the __consumer_offsets
 * compaction test (driver: 1055-offsets-compaction.py) and of the start-up
 * figure of bench/cleaner: many offset commits for one group, as fast as a
 * real client sends them.
 *
 *   1055-offsets-compaction BOOTSTRAP GROUP TOPIC PARTITIONS COMMITS [FIRST]
 *
 * Commit i (FIRST <= i < FIRST + COMMITS, FIRST default 0, so that a run
 * can continue an earlier one) is one rd_kafka_commit() call, asynchronous,
 * for offset i + 1 of partition i % PARTITIONS of TOPIC: one OffsetCommit
 * request, one record in __consumer_offsets.  The consumer never
 * subscribes (a "simple" consumer: generation -1), so commits are not
 * held up by rebalances.  At most WINDOW commits are outstanding; every
 * result is counted and any error fails.  The last committed offset of
 * partition p is therefore the largest i + 1 with i % PARTITIONS == p.
 * Prints "committed N in MS ms (R/s)".
 */
#include "../lib/itest.h"

#include <stdbool.h>

#define WINDOW 2000

static int64_t answered, failed;
static rd_kafka_resp_err_t first_err;

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
	(void)rk;
	(void)opaque;
	answered++;
	if (!err && offsets)
		for (int i = 0; i < offsets->cnt; i++)
			if (offsets->elems[i].err && !err)
				err = offsets->elems[i].err;
	if (err && !failed++)
		first_err = err;
}

static rd_kafka_t *consumer_new(const char *bootstrap, const char *group)
{
	rd_kafka_conf_t *conf = itest_conf_new(bootstrap);
	char errstr[512];
	rd_kafka_t *rk;

	itest_conf_set(conf, "group.id", group);
	itest_conf_set(conf, "enable.auto.commit", "false");
	rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	ITEST_CHECK(rk, "rd_kafka_new: %s", errstr);
	return rk;
}

/* Serves commit results until at most `left` commits are outstanding (bounded wait). */
static void drain_to(rd_kafka_t *rk, int64_t sent, int64_t left, int64_t timeout_ms)
{
	int64_t deadline = itest_now_ms() + timeout_ms;

	while (sent - answered > left) {
		ITEST_CHECK(itest_now_ms() < deadline, "%" PRId64 " commits unanswered after %" PRId64 " ms",
			    sent - answered, timeout_ms);
		rd_kafka_poll(rk, 10);
	}
	ITEST_CHECK(!failed, "%" PRId64 " commits failed, the first with %s", failed, rd_kafka_err2str(first_err));
}

int main(int argc, char **argv)
{
	rd_kafka_topic_partition_list_t *one;
	int64_t commits, first = 0, t0, ms;
	rd_kafka_resp_err_t err;
	int nparts;
	rd_kafka_t *rk;

	if (argc != 6 && argc != 7)
		ITEST_FAIL("usage: %s BOOTSTRAP GROUP TOPIC PARTITIONS COMMITS [FIRST]", argv[0]);
	nparts = atoi(argv[4]);
	commits = atoll(argv[5]);
	if (argc == 7)
		first = atoll(argv[6]);
	ITEST_CHECK(nparts > 0 && commits > 0 && first >= 0, "bad PARTITIONS, COMMITS or FIRST");
	rk = consumer_new(argv[1], argv[2]);
	one = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(one, argv[3], 0);
	t0 = itest_now_ms();
	for (int64_t n = 0; n < commits; n++) {
		one->elems[0].partition = (int32_t)((first + n) % nparts);
		one->elems[0].offset = first + n + 1;
		err = rd_kafka_commit(rk, one, 1);
		ITEST_CHECK(!err, "rd_kafka_commit #%" PRId64 ": %s", first + n, rd_kafka_err2str(err));
		if (n + 1 - answered >= WINDOW)
			drain_to(rk, n + 1, WINDOW / 2, 60000);
	}
	drain_to(rk, commits, 0, 60000);
	ms = itest_now_ms() - t0;
	ITEST_LOG("committed %" PRId64 " in %" PRId64 " ms (%.0f/s)", commits, ms,
		  (double)commits * 1000.0 / (double)(ms ? ms : 1));
	rd_kafka_topic_partition_list_destroy(one);
	rd_kafka_destroy(rk);
	return 0;
}
