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
 * --no-transactions copies at least once instead, for comparison (what
 * gregor-verify-eos --mode idempotent shows): an idempotent producer, and
 * after each batch the output is flushed and then the consumed positions
 * are committed; a crash between the two copies those messages again.
 *
 *   eos-copier --bootstrap-server H:P --from A --to B --group G --transactional-id T
 *              [--txn-messages 500] [--txn-ms 100] [--idle-exit-ms 0] [--session-timeout-ms 10000]
 *              [--command-config FILE] [--group-instance-id I] [--throughput N]
 *   eos-copier --bootstrap-server H:P --from A --to B --group G --no-transactions [...]
 *
 * Client properties from --command-config (a Java properties file, e.g.
 * security settings) apply to both clients; the copier's own settings
 * (transactional.id, isolation.level, ...) are set over them.
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
static const char *copier_tid;                  /* --transactional-id, for the fencing message */
static int copier_in_txn;                       /* a transaction is open (the rebalance callback aborts it) */
static bool copier_txn = true;                  /* false: --no-transactions */
static rd_kafka_resp_err_t copier_delivery_err; /* first failed delivery (--no-transactions) */

#define COPIER_FLUSH_MS 60000 /* --no-transactions: longest wait for the output before a commit */

static const struct opt_def copier_defs[] = {
	{ "bootstrap-server", true, false, "<host:port>", "The broker to connect to." },
	{ "from", true, false, "<topic>", "The source topic." },
	{ "to", true, false, "<topic>", "The sink topic (at least as many partitions as the source)." },
	{ "group", true, false, "<group>", "The consumer group." },
	{ "transactional-id", true, false, "<id>",
	  "The producer's transactional.id (required unless --no-transactions)." },
	{ "no-transactions", false, false, NULL,
	  "Copy at least once, without transactions: an idempotent producer, the consumed offsets committed once "
	  "the output is acknowledged." },
	{ "command-config", true, false, "<file>", "Client properties for both clients (Java properties file)." },
	{ "txn-messages", true, false, "<n>", "Messages per transaction (default 500)." },
	{ "txn-ms", true, false, "<ms>", "Longest time a transaction stays open (default 100)." },
	{ "transaction-timeout-ms", true, false, "<ms>", "transaction.timeout.ms (default 10000)." },
	{ "idle-exit-ms", true, false, "<ms>", "Exit 0 after this long without input (default 0: never)." },
	{ "session-timeout-ms", true, false, "<ms>", "The consumer's session.timeout.ms (default 10000)." },
	{ "throughput", true, false, "<n>", "Copy at most n messages per second (default 0: as fast as it goes)." },
	{ "group-instance-id", true, false, "<id>",
	  "Static group membership: a restarted copier takes its partitions back at once instead of after the "
	  "session timeout." },
	{ NULL },
};

static const struct opt_cmd copier_cmd = {
	"eos-copier", "Copies a topic exactly once, upper-casing each value, with Kafka transactions.", copier_defs
};

static void copier_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err && !copier_delivery_err)
		copier_delivery_err = m->err;
}

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

/*
 * --no-transactions: waits until every message produced so far is
 * acknowledged, then commits the consumed positions (synchronously).  A
 * delivery failure or an output not acknowledged within COPIER_FLUSH_MS
 * ends the program before the commit, so the next run copies those
 * messages again: at least once.  A failed commit is only reported; the
 * next one covers it.
 */
static void copier_commit_plain(rd_kafka_t *consumer)
{
	rd_kafka_topic_partition_list_t *pos, *done;
	rd_kafka_resp_err_t err;

	if (rd_kafka_flush(copier_producer, COPIER_FLUSH_MS))
		die("flush", "output not acknowledged within 60 s");
	if (copier_delivery_err)
		die("delivery", rd_kafka_err2str(copier_delivery_err));
	if (rd_kafka_assignment(consumer, &pos))
		die("assignment", "failed");
	rd_kafka_position(consumer, pos);
	done = rd_kafka_topic_partition_list_new(pos->cnt);
	for (int i = 0; i < pos->cnt; i++)
		if (pos->elems[i].offset >= 0)
			rd_kafka_topic_partition_list_add(done, pos->elems[i].topic, pos->elems[i].partition)->offset =
				pos->elems[i].offset;
	err = done->cnt ? rd_kafka_commit(consumer, done, 0) : RD_KAFKA_RESP_ERR_NO_ERROR;
	if (err)
		fprintf(stderr, "eos-copier: commit: %s\n", rd_kafka_err2str(err));
	rd_kafka_topic_partition_list_destroy(done);
	rd_kafka_topic_partition_list_destroy(pos);
}

/* Commits the open transaction with the consumer's positions.  0 committed, -1 aborted. */
static int copier_commit(rd_kafka_t *consumer)
{
	rd_kafka_topic_partition_list_t *pos;
	rd_kafka_consumer_group_metadata_t *cgmd;
	int rc;

	if (!copier_txn) {
		copier_commit_plain(consumer);
		return 0;
	}
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
	rd_kafka_error_t *e;

	if (!copier_txn)
		return;
	e = rd_kafka_begin_transaction(copier_producer);
	if (e && rd_kafka_error_is_fatal(e))
		copier_fatal("begin_transaction", rd_kafka_error_string(e), leave_group);
	if (e)
		die("begin_transaction", rd_kafka_error_string(e));
}

/*
 * Rebalance: a revoke aborts the open transaction (its offsets may belong
 * to another member now); without transactions it commits what is
 * acknowledged, as an at-least-once consumer does.
 */
static void copier_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
			     void *opaque)
{
	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		rd_kafka_assign(rk, parts);
		return;
	}
	if (!copier_txn)
		copier_commit_plain(rk);
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

/*
 * One client of the copier: bootstrap.servers, then --command-config, then
 * the copier's own settings kv (NULL-ended pairs) over them.  Exits 2 on a
 * bad property, 1 if the client cannot be made.
 */
static rd_kafka_t *copier_client(const struct opts *o, rd_kafka_type_t type, const char **kv)
{
	rd_kafka_conf_t *conf = kafka_conf_new(opt_str(o, "bootstrap-server", NULL));

	kafka_conf_apply(conf, o, "command-config", NULL);
	for (; kv[0]; kv += 2)
		if (kafka_conf_set(conf, kv[0], kv[1]) != 0)
			exit(2);
	if (type == RD_KAFKA_CONSUMER)
		rd_kafka_conf_set_rebalance_cb(conf, copier_rebalance);
	else
		rd_kafka_conf_set_dr_msg_cb(conf, copier_on_delivery);
	return kafka_new(type, conf);
}

/* Makes both clients, initialises the transactions and subscribes to --from. */
static void copier_open(const struct opts *o)
{
	const char *txn_kv[] = { "transactional.id",
				 copier_tid,
				 "transaction.timeout.ms",
				 opt_str(o, "transaction-timeout-ms", "10000"),
				 "linger.ms",
				 "5",
				 NULL };
	const char *idem_kv[] = { "enable.idempotence", "true", "linger.ms", "5", NULL };
	const char *cons_kv[] = { "group.id",
				  opt_str(o, "group", NULL),
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
				  opt_has(o, "group-instance-id") ? "group.instance.id" : NULL,
				  opt_str(o, "group-instance-id", NULL),
				  NULL };
	rd_kafka_topic_partition_list_t *sub;
	rd_kafka_error_t *e;

	copier_producer = copier_client(o, RD_KAFKA_PRODUCER, copier_txn ? txn_kv : idem_kv);
	copier_consumer = copier_client(o, RD_KAFKA_CONSUMER, cons_kv);
	rd_kafka_poll_set_consumer(copier_consumer);
	if (copier_txn) {
		e = rd_kafka_init_transactions(copier_producer, 60000);
		if (e)
			die("init_transactions", rd_kafka_error_string(e));
	}
	sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(sub, opt_str(o, "from", NULL), RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(copier_consumer, sub))
		die("subscribe", opt_str(o, "from", NULL));
	rd_kafka_topic_partition_list_destroy(sub);
}

/* How the copy runs: commit cadence, idle exit, pace. */
struct copier_pace {
	int64_t txn_msgs;   /* commit after this many messages */
	int64_t txn_ms;     /* or once the transaction is this old */
	int64_t idle_ms;    /* > 0: exit after this long without input */
	int64_t throughput; /* > 0: at most this many messages per second */
	double tokens;      /* messages that may be copied now (up to a fifth of a second's worth) */
	int64_t tokens_ms;  /* when tokens was last topped up */
};

/* --throughput: true if a message may be copied now (a token bucket, so a stall is not followed by a burst). */
static bool copier_may_copy(struct copier_pace *pace)
{
	int64_t now = kafka_now_ms();
	double cap = pace->throughput > 5 ? (double)pace->throughput / 5 : 1;

	if (pace->throughput <= 0)
		return true;
	pace->tokens += (double)(now - pace->tokens_ms) * (double)pace->throughput / 1000.0;
	pace->tokens_ms = now;
	if (pace->tokens > cap)
		pace->tokens = cap;
	return pace->tokens >= 1;
}

/* Copies until a signal, or pace->idle_ms without input; commits every txn_msgs messages or txn_ms. */
static void copier_run(rd_kafka_t *consumer, const char *to, struct copier_pace *pace)
{
	int64_t last_msg = kafka_now_ms(), txn_start = 0;
	int n = 0;

	copier_begin(true);
	copier_in_txn = copier_txn;
	pace->tokens_ms = kafka_now_ms();
	while (!copier_stop) {
		bool may = copier_may_copy(pace);
		rd_kafka_message_t *m = may ? rd_kafka_consumer_poll(consumer, 50) : NULL;

		if (m && !m->err) {
			if (n == 0)
				txn_start = kafka_now_ms();
			copier_produce(m, to);
			n++;
			pace->tokens--;
			last_msg = kafka_now_ms();
		} else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			fprintf(stderr, "eos-copier: consume: %s\n", rd_kafka_message_errstr(m));
		}
		if (m)
			rd_kafka_message_destroy(m);
		rd_kafka_poll(copier_producer, may ? 0 : 2);
		if (n > 0 && (n >= pace->txn_msgs || kafka_now_ms() - txn_start >= pace->txn_ms)) {
			copier_commit(consumer);
			n = 0;
			copier_begin(true);
		}
		if (pace->idle_ms > 0 && n == 0 && kafka_now_ms() - last_msg > pace->idle_ms)
			break;
	}
	if (n > 0)
		copier_commit(consumer);
	else if (copier_txn)
		rd_kafka_error_destroy(rd_kafka_abort_transaction(copier_producer, -1));
	copier_in_txn = 0;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&copier_cmd, argc, argv);
	struct copier_pace pace = { 0 };

	opt_require(o, "bootstrap-server");
	opt_require(o, "from");
	opt_require(o, "to");
	opt_require(o, "group");
	copier_txn = !opt_has(o, "no-transactions");
	if (copier_txn)
		opt_require(o, "transactional-id");
	else if (opt_has(o, "transactional-id"))
		opt_usage_error(o, "--transactional-id does not go with --no-transactions");
	copier_tid = opt_str(o, "transactional-id", NULL);
	opt_int(o, "transaction-timeout-ms", 10000, 1, INT32_MAX);
	opt_int(o, "session-timeout-ms", 10000, 1, INT32_MAX);
	pace.txn_msgs = opt_int(o, "txn-messages", 500, 1, 1000000);
	pace.txn_ms = opt_int(o, "txn-ms", 100, 1, 3600000);
	pace.idle_ms = opt_int(o, "idle-exit-ms", 0, 0, INT32_MAX);
	pace.throughput = opt_int(o, "throughput", 0, 0, INT32_MAX);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	copier_open(o);
	copier_run(copier_consumer, opt_str(o, "to", NULL), &pace);
	rd_kafka_consumer_close(copier_consumer);
	rd_kafka_destroy(copier_consumer);
	rd_kafka_destroy(copier_producer);
	opts_free(o);
	return 0;
}
