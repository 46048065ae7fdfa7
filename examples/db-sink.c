/*
 * db-sink.c - consumer-side idempotence: exactly-once into a database
 * without Kafka transactions.
 *
 * Consumes --topic and, in ONE SQLite transaction per batch of messages:
 *   - inserts each message into processed(topic, partition, offset), whose
 *     primary key makes a second delivery of the same message fail;
 *   - applies the business effect (here: the value is stored in
 *     messages(value) and a per-partition counter is bumped);
 *   - stores the next offset of each partition in consumer_offsets.
 * The consumer never commits offsets to Kafka: on (re)assignment it starts
 * from the offsets in the database (after storing the batch in hand), so
 * after a crash or a rebalance at any moment the database holds every
 * message exactly once.  A duplicate (a bug, or a
 * second sink on the same database) rolls the whole batch back.
 *
 * The SQL is plain SQL-92 apart from the SQLite pragmas.
 *
 *   db-sink --bootstrap-server H:P --topic T --group G --db FILE [--batch 100] [--idle-exit-ms 0]
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <sqlite3.h>

#include "lib/kafka.h"
#include "lib/opt.h"

static const struct opt_def sink_defs[] = {
	{ "bootstrap-server", true, false, "<host:port>", "The broker to connect to." },
	{ "topic", true, false, "<topic>", "The topic to consume." },
	{ "group", true, false, "<group>", "The consumer group (offsets are kept in the database, not in Kafka)." },
	{ "db", true, false, "<file>", "The SQLite database file." },
	{ "batch", true, false, "<n>", "Messages per database transaction (default 100)." },
	{ "idle-exit-ms", true, false, "<ms>", "Exit 0 after this long without input (default 0: never)." },
	{ NULL },
};

static const struct opt_cmd sink_cmd = {
	"db-sink", "Consumes a topic into SQLite exactly once: data and offsets in one database transaction.", sink_defs
};

static sqlite3 *sink_db;
static volatile sig_atomic_t sink_stop;

static void on_signal(int sig)
{
	(void)sig;
	sink_stop = 1;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "db-sink: %s: %s\n", what, why);
	exit(1);
}

static void sink_exec(const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(sink_db, sql, NULL, NULL, &err) != SQLITE_OK)
		die(sql, err ? err : "?");
}

static void sink_open(const char *path)
{
	if (sqlite3_open(path, &sink_db) != SQLITE_OK)
		die(path, sqlite3_errmsg(sink_db));
	sqlite3_busy_timeout(sink_db, 10000);
	sink_exec("PRAGMA journal_mode=WAL");
	sink_exec("PRAGMA synchronous=FULL");
	sink_exec("CREATE TABLE IF NOT EXISTS processed (topic VARCHAR(255) NOT NULL, part INTEGER NOT NULL,"
		  " msg_offset BIGINT NOT NULL, PRIMARY KEY (topic, part, msg_offset))");
	sink_exec("CREATE TABLE IF NOT EXISTS messages (topic VARCHAR(255) NOT NULL, part INTEGER NOT NULL,"
		  " msg_offset BIGINT NOT NULL, value TEXT)");
	sink_exec("CREATE TABLE IF NOT EXISTS counters (topic VARCHAR(255) NOT NULL, part INTEGER NOT NULL,"
		  " n BIGINT NOT NULL, PRIMARY KEY (topic, part))");
	sink_exec("CREATE TABLE IF NOT EXISTS consumer_offsets (grp VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL,"
		  " part INTEGER NOT NULL, next_offset BIGINT NOT NULL, PRIMARY KEY (grp, topic, part))");
}

static const char *sink_group;

/* The messages consumed but not yet stored (one batch). */
static rd_kafka_message_t **sink_msgs;
static int sink_n;

static int sink_store(rd_kafka_message_t **msgs, int n);

/* Stores the pending batch (store) or drops it; either way it is empty after. */
static void sink_flush(bool store)
{
	if (store && sink_n > 0 && sink_store(sink_msgs, sink_n))
		die("batch", "duplicate message: database and consumer disagree");
	for (int i = 0; i < sink_n; i++)
		rd_kafka_message_destroy(sink_msgs[i]);
	sink_n = 0;
}

/*
 * Assignment: start every partition from the database's offset (the
 * beginning if none).  The pending batch is stored first, before a
 * revocation hands its partitions to another member and before the
 * offsets are read (else they would be re-fetched and met twice); it is
 * dropped instead when the assignment was lost (the group already gave
 * those partitions to someone else, who may have stored them).
 */
static void sink_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
			   void *opaque)
{
	sqlite3_stmt *st;

	(void)opaque;
	sink_flush(!rd_kafka_assignment_lost(rk));
	if (err != RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		rd_kafka_assign(rk, NULL);
		return;
	}
	if (sqlite3_prepare_v2(sink_db,
			       "SELECT next_offset FROM consumer_offsets WHERE grp = ? AND topic = ? AND part = ?", -1,
			       &st, NULL) != SQLITE_OK)
		die("prepare", sqlite3_errmsg(sink_db));
	for (int i = 0; i < parts->cnt; i++) {
		rd_kafka_topic_partition_t *tp = &parts->elems[i];

		sqlite3_bind_text(st, 1, sink_group, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, tp->topic, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, tp->partition);
		tp->offset = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : RD_KAFKA_OFFSET_BEGINNING;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	rd_kafka_assign(rk, parts);
}

static sqlite3_stmt *sink_prepare(const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(sink_db, sql, -1, &st, NULL) != SQLITE_OK)
		die(sql, sqlite3_errmsg(sink_db));
	return st;
}

/* One database transaction for msgs[0..n-1].  0, or -1 after a rollback (a duplicate). */
static int sink_store(rd_kafka_message_t **msgs, int n)
{
	sqlite3_stmt *ins = sink_prepare("INSERT INTO processed (topic, part, msg_offset) VALUES (?, ?, ?)");
	sqlite3_stmt *eff = sink_prepare("INSERT INTO messages (topic, part, msg_offset, value) VALUES (?, ?, ?, ?)");
	sqlite3_stmt *cnt = sink_prepare("UPDATE counters SET n = n + 1 WHERE topic = ? AND part = ?");
	sqlite3_stmt *cnt0 = sink_prepare("INSERT INTO counters (topic, part, n) SELECT ?, ?, 1 WHERE NOT EXISTS "
					  "(SELECT 1 FROM counters WHERE topic = ? AND part = ?)");
	sqlite3_stmt *off = sink_prepare("INSERT OR REPLACE INTO consumer_offsets (grp, topic, part, next_offset) "
					 "VALUES (?, ?, ?, ?)");
	int rc = 0;

	sink_exec("BEGIN");
	for (int i = 0; i < n && !rc; i++) {
		const rd_kafka_message_t *m = msgs[i];
		const char *topic = rd_kafka_topic_name(m->rkt);

		sqlite3_bind_text(ins, 1, topic, -1, SQLITE_STATIC);
		sqlite3_bind_int(ins, 2, m->partition);
		sqlite3_bind_int64(ins, 3, m->offset);
		if (sqlite3_step(ins) != SQLITE_DONE) {
			fprintf(stderr, "db-sink: %s [%d] offset %lld already processed: rolling back\n", topic,
				m->partition, (long long)m->offset);
			rc = -1;
			break;
		}
		sqlite3_reset(ins);
		sqlite3_bind_text(eff, 1, topic, -1, SQLITE_STATIC);
		sqlite3_bind_int(eff, 2, m->partition);
		sqlite3_bind_int64(eff, 3, m->offset);
		sqlite3_bind_text(eff, 4, m->payload, (int)m->len, SQLITE_STATIC);
		sqlite3_step(eff);
		sqlite3_reset(eff);
		sqlite3_bind_text(cnt, 1, topic, -1, SQLITE_STATIC);
		sqlite3_bind_int(cnt, 2, m->partition);
		sqlite3_step(cnt);
		sqlite3_reset(cnt);
		if (sqlite3_changes(sink_db) == 0) {
			sqlite3_bind_text(cnt0, 1, topic, -1, SQLITE_STATIC);
			sqlite3_bind_int(cnt0, 2, m->partition);
			sqlite3_bind_text(cnt0, 3, topic, -1, SQLITE_STATIC);
			sqlite3_bind_int(cnt0, 4, m->partition);
			sqlite3_step(cnt0);
			sqlite3_reset(cnt0);
		}
		sqlite3_bind_text(off, 1, sink_group, -1, SQLITE_STATIC);
		sqlite3_bind_text(off, 2, topic, -1, SQLITE_STATIC);
		sqlite3_bind_int(off, 3, m->partition);
		sqlite3_bind_int64(off, 4, m->offset + 1);
		sqlite3_step(off);
		sqlite3_reset(off);
	}
	sink_exec(rc ? "ROLLBACK" : "COMMIT");
	sqlite3_finalize(ins);
	sqlite3_finalize(eff);
	sqlite3_finalize(cnt);
	sqlite3_finalize(cnt0);
	sqlite3_finalize(off);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&sink_cmd, argc, argv);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *sub;
	rd_kafka_t *rk;
	int64_t batch, idle_ms, last_msg;
	char err[512];

	opt_require(o, "bootstrap-server");
	opt_require(o, "topic");
	opt_require(o, "group");
	opt_require(o, "db");
	sink_group = opt_str(o, "group", NULL);
	batch = opt_int(o, "batch", 100, 1, 100000);
	idle_ms = opt_int(o, "idle-exit-ms", 0, 0, INT32_MAX);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	sink_open(opt_str(o, "db", NULL));
	{
		const char *kv[] = { "bootstrap.servers",
				     opt_str(o, "bootstrap-server", NULL),
				     "group.id",
				     sink_group,
				     "enable.auto.commit",
				     "false",
				     "enable.auto.offset.store",
				     "false",
				     "auto.offset.reset",
				     "earliest",
				     "session.timeout.ms",
				     "6000",
				     "heartbeat.interval.ms",
				     "1000",
				     NULL };

		for (int i = 0; kv[i]; i += 2)
			if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], err, sizeof(err)) != RD_KAFKA_CONF_OK)
				die(kv[i], err);
	}
	rd_kafka_conf_set_rebalance_cb(conf, sink_rebalance);
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk)
		die("consumer", err);
	rd_kafka_poll_set_consumer(rk);
	sub = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(sub, opt_str(o, "topic", NULL), RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(rk, sub))
		die("subscribe", opt_str(o, "topic", NULL));
	rd_kafka_topic_partition_list_destroy(sub);
	sink_msgs = calloc((size_t)batch, sizeof(*sink_msgs));
	last_msg = kafka_now_ms();
	while (!sink_stop) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);

		if (m && !m->err) {
			sink_msgs[sink_n++] = m;
			last_msg = kafka_now_ms();
		} else if (m) {
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				fprintf(stderr, "db-sink: consume: %s\n", rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
		}
		if (sink_n == batch || (sink_n > 0 && !m))
			sink_flush(true);
		if (idle_ms > 0 && sink_n == 0 && kafka_now_ms() - last_msg > idle_ms)
			break;
	}
	sink_flush(true);
	rd_kafka_consumer_close(rk);
	free(sink_msgs);
	rd_kafka_destroy(rk);
	sqlite3_close(sink_db);
	opts_free(o);
	return 0;
}
