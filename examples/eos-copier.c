/*
 * eos-copier.c - exactly-once consume-transform-produce on librdkafka.
 *
 * Consumes --from in consumer group --group (read_committed), upper-cases
 * each value, produces it to the same partition of --to, and commits the
 * consumed positions with send_offsets_to_transaction() in the same
 * transaction as the output.  After any crash the next run resumes from
 * the offsets of the last committed transaction, so each input appears in
 * the committed output exactly once.
 *
 * On an abortable error the transaction is aborted and the consumer
 * rewound to the committed offsets; a fatal error (another copier with the
 * same --transactional-id fenced this one) leaves the group and ends the
 * program with exit 1 and one line on stderr:
 *
 *   eos-copier: fenced: another copier with the same transactional id 'T' took over (...); exiting
 *
 *   eos-copier --bootstrap-server H:P --from A --to B --group G --transactional-id T
 *              [--txn-messages 500] [--txn-ms 100] [--idle-exit-ms 0] [--session-timeout-ms 10000]
 */
#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static volatile sig_atomic_t copier_stop;
static rd_kafka_t *copier_producer;
static rd_kafka_t *copier_consumer;
static const char *copier_tid; /* --transactional-id, for the fencing message */
static int copier_in_txn;      /* a transaction is open (the rebalance callback aborts it) */

static const struct opt_def copier_defs[] = {
	{ "bootstrap-server", true, false, "<host:port>", "The broker to connect to." },
	{ "from", true, false, "<topic>", "The source topic." },
	{ "to", true, false, "<topic>", "The sink topic (at least as many partitions as the source)." },
	{ "group", true, false, "<group>", "The consumer group." },
	{ "transactional-id", true, false, "<id>", "The producer's transactional.id." },
	{ "txn-messages", true, false, "<n>", "Messages per transaction (default 500)." },
	{ "txn-ms", true, false, "<ms>", "Longest time a transaction stays open (default 100)." },
	{ "transaction-timeout-ms", true, false, "<ms>", "transaction.timeout.ms (default 10000)." },
	{ "idle-exit-ms", true, false, "<ms>", "Exit 0 after this long without input (default 0: never)." },
	{ "session-timeout-ms", true, false, "<ms>", "The consumer's session.timeout.ms (default 10000)." },
	{ NULL },
};

static const struct opt_cmd copier_cmd = {
	"eos-copier", "Copies a topic exactly once, upper-casing each value, with Kafka transactions.", copier_defs
};

static void on_signal(int sig)
{
	(void)sig;
	copier_stop = 1;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "eos-copier: %s: %s\n", what, why);
	exit(1);
}

/*
 * Ends the program after a fatal producer error, which for a transactional
 * producer nearly always means a newer copier with the same transactional id
 * fenced this one.  Unless called from the rebalance callback (leave_group
 * false, where closing is not allowed), it first leaves the group so the
 * partitions move to the newer copier at once instead of after the session
 * timeout.  Nothing is committed: enable.auto.commit is off.
 */
static void copier_fatal(const char *what, const char *why, bool leave_group)
{
	char reason[512];
	rd_kafka_resp_err_t err = rd_kafka_fatal_error(copier_producer, reason, sizeof(reason));

	if (err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
	    err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
		fprintf(stderr,
			"eos-copier: fenced: another copier with the same transactional id '%s' took over "
			"(%s: %s); exiting\n",
			copier_tid, what, why);
	else
		fprintf(stderr, "eos-copier: fatal error in %s: %s; exiting\n", what, why);
	if (leave_group && copier_consumer) {
		copier_in_txn = 0;
		rd_kafka_consumer_close(copier_consumer);
	}
	exit(1);
}

static rd_kafka_t *copier_client(rd_kafka_type_t type, const char **kv)
{
	char err[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;

	for (; kv[0]; kv += 2)
		if (rd_kafka_conf_set(conf, kv[0], kv[1], err, sizeof(err)) != RD_KAFKA_CONF_OK)
			die(kv[0], err);
	rk = rd_kafka_new(type, conf, err, sizeof(err));
	if (!rk)
		die("cannot create client", err);
	return rk;
}

/* Seeks every assigned partition back to its committed offset (after an abort). */
static void copier_rewind(rd_kafka_t *consumer)
{
	rd_kafka_topic_partition_list_t *parts;
	rd_kafka_resp_err_t err = rd_kafka_assignment(consumer, &parts);

	if (err)
		die("assignment", rd_kafka_err2str(err));
	err = rd_kafka_committed(consumer, parts, 30000);
	if (err)
		die("committed offsets", rd_kafka_err2str(err));
	for (int i = 0; i < parts->cnt; i++) {
		rd_kafka_topic_partition_t *tp = &parts->elems[i];

		if (tp->offset < 0)
			tp->offset = RD_KAFKA_OFFSET_BEGINNING;
	}
	rd_kafka_error_t *e = rd_kafka_seek_partitions(consumer, parts, 30000);

	if (e) {
		fprintf(stderr, "eos-copier: rewind: %s\n", rd_kafka_error_string(e));
		rd_kafka_error_destroy(e);
	}
	rd_kafka_topic_partition_list_destroy(parts);
}

/* Handles a transactional error: abort + rewind, retry (returns 1), or exit on a fatal one. */
static int copier_txn_error(rd_kafka_t *consumer, rd_kafka_error_t *e, const char *what)
{
	int retry = 0;

	if (!e)
		return 0;
	if (rd_kafka_error_is_fatal(e))
		copier_fatal(what, rd_kafka_error_string(e), true);
	if (rd_kafka_error_txn_requires_abort(e)) {
		fprintf(stderr, "eos-copier: %s: %s: aborting and rewinding\n", what, rd_kafka_error_string(e));
		rd_kafka_error_t *ae = rd_kafka_abort_transaction(copier_producer, -1);

		if (ae) {
			if (rd_kafka_error_is_fatal(ae))
				copier_fatal("abort_transaction", rd_kafka_error_string(ae), true);
			fprintf(stderr, "eos-copier: abort failed: %s\n", rd_kafka_error_string(ae));
			rd_kafka_error_destroy(ae);
		}
		copier_rewind(consumer);
	} else {
		fprintf(stderr, "eos-copier: %s: %s: retrying\n", what, rd_kafka_error_string(e));
		retry = 1;
	}
	rd_kafka_error_destroy(e);
	return retry ? 1 : -1;
}

/* Commits the open transaction with the consumer's positions.  0 committed, -1 aborted. */
static int copier_commit(rd_kafka_t *consumer)
{
	rd_kafka_topic_partition_list_t *pos;
	rd_kafka_consumer_group_metadata_t *cgmd;
	int rc;

	if (rd_kafka_assignment(consumer, &pos))
		die("assignment", "failed");
	rd_kafka_position(consumer, pos);
	cgmd = rd_kafka_consumer_group_metadata(consumer);
	do
		rc = copier_txn_error(consumer, rd_kafka_send_offsets_to_transaction(copier_producer, pos, cgmd, -1),
				      "send_offsets_to_transaction");
	while (rc == 1);
	rd_kafka_consumer_group_metadata_destroy(cgmd);
	rd_kafka_topic_partition_list_destroy(pos);
	if (rc < 0)
		return -1;
	do
		rc = copier_txn_error(consumer, rd_kafka_commit_transaction(copier_producer, -1), "commit_transaction");
	while (rc == 1);
	return rc < 0 ? -1 : 0;
}

/* leave_group: see copier_fatal() (false inside the rebalance callback). */
static void copier_begin(bool leave_group)
{
	rd_kafka_error_t *e = rd_kafka_begin_transaction(copier_producer);

	if (e && rd_kafka_error_is_fatal(e))
		copier_fatal("begin_transaction", rd_kafka_error_string(e), leave_group);
	if (e)
		die("begin_transaction", rd_kafka_error_string(e));
}

/* Rebalance: a revoke aborts the open transaction (its offsets may belong to another member now). */

static void copier_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
			     void *opaque)
{
	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		rd_kafka_assign(rk, parts);
		return;
	}
	if (copier_in_txn) {
		rd_kafka_error_t *e = rd_kafka_abort_transaction(copier_producer, -1);

		if (e) {
			if (rd_kafka_error_is_fatal(e))
				copier_fatal("abort on revoke", rd_kafka_error_string(e), false);
			rd_kafka_error_destroy(e);
		}
		copier_begin(false);
	}
	rd_kafka_assign(rk, NULL);
}

static void copier_produce(const rd_kafka_message_t *m, const char *to)
{
	char *v = malloc(m->len ? m->len : 1);

	for (size_t i = 0; i < m->len; i++)
		v[i] = (char)toupper(((const unsigned char *)m->payload)[i]);
	for (;;) {
		rd_kafka_resp_err_t err =
			rd_kafka_producev(copier_producer, RD_KAFKA_V_TOPIC(to), RD_KAFKA_V_PARTITION(m->partition),
					  RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(v, m->len),
					  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE), RD_KAFKA_V_END);

		if (!err)
			return;
		if (err == RD_KAFKA_RESP_ERR__FATAL)
			copier_fatal("produce", rd_kafka_err2str(err), true);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			die("produce", rd_kafka_err2str(err));
		rd_kafka_poll(copier_producer, 50);
	}
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&copier_cmd, argc, argv);
	const char *bs, *from, *to, *group, *tid, *tto;
	int64_t txn_msgs, txn_ms, idle_ms, last_msg, txn_start = 0;
	int n = 0;
	rd_kafka_t *consumer;
	rd_kafka_topic_partition_list_t *sub;
	rd_kafka_error_t *e;

	opt_require(o, "bootstrap-server");
	opt_require(o, "from");
	opt_require(o, "to");
	opt_require(o, "group");
	opt_require(o, "transactional-id");
	bs = opt_str(o, "bootstrap-server", NULL);
	from = opt_str(o, "from", NULL);
	to = opt_str(o, "to", NULL);
	group = opt_str(o, "group", NULL);
	tid = opt_str(o, "transactional-id", NULL);
	copier_tid = tid;
	tto = opt_str(o, "transaction-timeout-ms", "10000");
	txn_msgs = opt_int(o, "txn-messages", 500, 1, 1000000);
	txn_ms = opt_int(o, "txn-ms", 100, 1, 3600000);
	idle_ms = opt_int(o, "idle-exit-ms", 0, 0, INT32_MAX);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	copier_producer = copier_client(RD_KAFKA_PRODUCER,
					(const char *[]){ "bootstrap.servers", bs, "transactional.id", tid,
							  "transaction.timeout.ms", tto, "linger.ms", "5", NULL });
	{
		rd_kafka_conf_t *conf = rd_kafka_conf_new();
		char err[512];
		const char *kv[] = { "bootstrap.servers",
				     bs,
				     "group.id",
				     group,
				     "enable.auto.commit",
				     "false",
				     "auto.offset.reset",
				     "earliest",
				     "isolation.level",
				     "read_committed",
				     "session.timeout.ms",
				     opt_str(o, "session-timeout-ms", "10000"),
				     "heartbeat.interval.ms",
				     "1000",
				     NULL };

		for (int i = 0; kv[i]; i += 2)
			if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], err, sizeof(err)) != RD_KAFKA_CONF_OK)
				die(kv[i], err);
		rd_kafka_conf_set_rebalance_cb(conf, copier_rebalance);
		consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
		if (!consumer)
			die("consumer", err);
		copier_consumer = consumer;
	}
	rd_kafka_poll_set_consumer(consumer);
	e = rd_kafka_init_transactions(copier_producer, 60000);
	if (e)
		die("init_transactions", rd_kafka_error_string(e));
	sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(sub, from, RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(consumer, sub))
		die("subscribe", from);
	rd_kafka_topic_partition_list_destroy(sub);

	copier_begin(true);
	copier_in_txn = 1;
	last_msg = kafka_now_ms();
	while (!copier_stop) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);

		if (m && !m->err) {
			if (n == 0)
				txn_start = kafka_now_ms();
			copier_produce(m, to);
			n++;
			last_msg = kafka_now_ms();
		} else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			fprintf(stderr, "eos-copier: consume: %s\n", rd_kafka_message_errstr(m));
		}
		if (m)
			rd_kafka_message_destroy(m);
		rd_kafka_poll(copier_producer, 0);
		if (n > 0 && (n >= txn_msgs || kafka_now_ms() - txn_start >= txn_ms)) {
			copier_commit(consumer);
			n = 0;
			copier_begin(true);
		}
		if (idle_ms > 0 && n == 0 && kafka_now_ms() - last_msg > idle_ms)
			break;
	}
	if (n > 0)
		copier_commit(consumer);
	else
		rd_kafka_error_destroy(rd_kafka_abort_transaction(copier_producer, -1));
	copier_in_txn = 0;
	rd_kafka_consumer_close(consumer);
	rd_kafka_destroy(consumer);
	rd_kafka_destroy(copier_producer);
	opts_free(o);
	return 0;
}
