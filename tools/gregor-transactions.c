/* gregor-transactions - kafka-transactions.sh for Gregor: list and describe
 * transactional ids, describe the producers of a partition, find hanging
 * transactions and abort them.
 *
 * A hanging transaction is open in a partition (its producer state has a
 * transaction start offset, so the last stable offset cannot pass it and
 * read_committed consumers stop there) while no coordinator will ever end
 * it: its transactional id is unknown, or the coordinator's transaction
 * does not include that partition. find-hanging reports those open longer
 * than --max-transaction-timeout minutes; abort writes an ABORT marker for
 * the transaction's producer into the partition, which ends it.
 *
 * Commands, flags and output follow Kafka's TransactionsCommand: tables are
 * Kafka's ToolsUtils.prettyPrintTable (each cell padded to its column's
 * width and followed by a tab), with Kafka's headers. librdkafka 2.0.2 has
 * no Admin call for these APIs, so the requests go through tools/lib/wire.h
 * to the broker that owns the answer: the partition's leader
 * (DescribeProducers, WriteTxnMarkers), the id's coordinator
 * (DescribeTransactions), every broker (ListTransactions).
 *
 * Exit status: 0 ok, 1 failure (broker unreachable, an error from the
 * broker, no open transaction at the given offset), 2 usage error.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/kafka.h"
#include "lib/opt.h"
#include "lib/wire.h"
#include "proto/kerr.h"

#define TX_BATCH_MAX 500 /* partitions per DescribeProducers request, as Kafka */

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<host:port>",
	  "REQUIRED: hostname and port for the broker to connect to, in the form `host:port` (multiple "
	  "comma-separated entries can be given)." },
	{ "command-config", true, false, "<FILE>", "Property file containing configs to be passed to the client." },
	{ "transactional-id", true, false, "<String>", "describe: the transactional id." },
	{ "topic", true, false, "<String>", "describe-producers, abort, find-hanging: the topic name." },
	{ "partition", true, false, "<Integer>", "describe-producers, abort, find-hanging: the partition number." },
	{ "broker-id", true, false, "<Integer>",
	  "describe-producers: the broker to ask instead of the leader; find-hanging: the broker to search." },
	{ "max-transaction-timeout", true, false, "<Integer>",
	  "find-hanging: maximum transaction timeout in minutes to limit the scope of the search (15 by default)." },
	{ "start-offset", true, false, "<Long>", "abort: start offset of the transaction to abort." },
	{ "producer-id", true, false, "<Long>", "abort: producer id (with --producer-epoch, --coordinator-epoch)." },
	{ "producer-epoch", true, false, "<Short>", "abort: producer epoch." },
	{ "coordinator-epoch", true, false, "<Integer>", "abort: coordinator epoch." },
	{ "duration-filter", true, false, "<Long>",
	  "list: only transactions running longer than this many milliseconds (< 0: all)." },
	{ NULL },
};

static const struct opt_subcmd subcmds[] = {
	{ "list", "list transactions" },
	{ "describe", "describe the state of an active transactional-id" },
	{ "describe-producers", "describe the states of active producers for a topic partition" },
	{ "abort", "abort a hanging transaction (requires administrative privileges)" },
	{ "find-hanging", "find hanging transactions" },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-transactions",
				    "This tool is used to analyze the transactional state of producers in the cluster. "
				    "It can be used to detect and recover from hanging transactions.",
				    defs };

static struct arena tx_arena; /* every request and response of the run */

/* ---- small helpers ---- */

static void *tx_alloc(size_t count, size_t size)
{
	void *p = arena_calloc(&tx_arena, count ? count : 1, size);

	if (!p)
		kafka_die("out of memory");
	return p;
}

static char *tx_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *tx_printf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return arena_strndup(&tx_arena, buf, strlen(buf));
}

static char *tx_kstr(struct kstr s)
{
	return arena_strndup(&tx_arena, s.p ? s.p : "", s.len > 0 ? (size_t)s.len : 0);
}

static int64_t tx_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Kafka's printErrorAndExit: the message on stderr, exit 1. */
static void __attribute__((noreturn, format(printf, 1, 2))) tx_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- Kafka's prettyPrintTable ---- */

struct tx_table {
	int ncols, nrows, cap;
	const char **cells; /* row-major; row 0 is the header */
};

static void tx_row(struct tx_table *t, const char **cells)
{
	if (t->nrows == t->cap) {
		const char **v = tx_alloc((size_t)(t->cap ? t->cap * 2 : 16) * (size_t)t->ncols, sizeof(*v));

		if (t->nrows)
			memcpy(v, t->cells, (size_t)t->nrows * (size_t)t->ncols * sizeof(*v));
		t->cells = v;
		t->cap = t->cap ? t->cap * 2 : 16;
	}
	memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, cells, (size_t)t->ncols * sizeof(*cells));
	t->nrows++;
}

static void tx_table_print(const struct tx_table *t)
{
	int *width = tx_alloc((size_t)t->ncols, sizeof(int));

	for (int r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++) {
			int w = (int)strlen(t->cells[r * t->ncols + c]);

			width[c] = w > width[c] ? w : width[c];
		}
	for (int r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++)
			printf("%-*s\t", width[c], t->cells[r * t->ncols + c]);
		putchar('\n');
	}
}

/* ---- the requests ---- */

/* The coordinator of a transactional id (FindCoordinator, key type 1); error in *err (OUT). */
static int32_t tx_coordinator(struct wire *any, const char *id, int16_t *err)
{
	struct FindCoordinatorRequest req;
	struct FindCoordinatorResponse resp;
	int16_t v = wire_version(any, API_FindCoordinator, 3);

	if (v < 1)
		kafka_die("broker %d cannot find transaction coordinators (FindCoordinator v%d)", wire_node_id(any), v);
	FindCoordinatorRequest_init(&req);
	req.Key = kstr_c(id);
	req.KeyType = 1;
	wire_call(any, API_FindCoordinator, v, &req, &resp, &tx_arena);
	*err = resp.ErrorCode;
	return resp.ErrorCode ? -1 : resp.NodeId;
}

/* The first broker of the metadata: where cluster-wide questions start. */
static struct wire *tx_any_broker(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int32_t id = md->broker_cnt > 0 ? md->brokers[0].id : -1;

	rd_kafka_metadata_destroy(md);
	if (id < 0)
		kafka_die("the cluster metadata lists no broker");
	return wire_open(rk, id);
}

/* DescribeTransactions of one id at its coordinator. OUT *coordinator. */
static struct DescribeTransactionsResponseTransactionState *tx_describe_one(rd_kafka_t *rk, const char *id,
									    int32_t *coordinator)
{
	struct wire *any = tx_any_broker(rk), *wc;
	struct DescribeTransactionsRequest req;
	struct DescribeTransactionsResponse resp;
	int16_t err;

	*coordinator = tx_coordinator(any, id, &err);
	if (err)
		tx_fail("Failed to describe transaction state of transactional-id `%s`: %s", id, kafka_err_name(err));
	wc = *coordinator == wire_node_id(any) ? any : wire_open(rk, *coordinator);
	DescribeTransactionsRequest_init(&req);
	req.TransactionalIds.v = tx_alloc(1, sizeof(struct kstr));
	req.TransactionalIds.v[0] = kstr_c(id);
	req.TransactionalIds.n = 1;
	wire_call(wc, API_DescribeTransactions, wire_version(wc, API_DescribeTransactions, 0), &req, &resp, &tx_arena);
	if (wc != any)
		wire_close(wc);
	wire_close(any);
	if (resp.TransactionStates.n != 1)
		kafka_die("DescribeTransactions answered %d ids for one", resp.TransactionStates.n);
	return &resp.TransactionStates.v[0];
}

/* One partition's DescribeProducers answer. */
struct tx_tp {
	const char *topic;
	int32_t partition;
	int16_t err;
	struct DescribeProducersResponseProducer_array producers;
};

/* DescribeProducers of tps[0..n) at broker node (one request per TX_BATCH_MAX); fills err and producers. */
static void tx_describe_producers(rd_kafka_t *rk, int32_t node, struct tx_tp *tps, int n)
{
	struct wire *wc = wire_open(rk, node);
	int16_t v = wire_version(wc, API_DescribeProducers, 0);

	for (int at = 0; at < n; at += TX_BATCH_MAX) {
		int k = n - at < TX_BATCH_MAX ? n - at : TX_BATCH_MAX;
		struct DescribeProducersRequest req;
		struct DescribeProducersResponse resp;

		DescribeProducersRequest_init(&req);
		req.Topics.v = tx_alloc((size_t)k, sizeof(*req.Topics.v));
		req.Topics.n = k;
		for (int i = 0; i < k; i++) { /* one topic entry per partition: simple, and legal */
			req.Topics.v[i].Name = kstr_c(tps[at + i].topic);
			req.Topics.v[i].PartitionIndexes.v = &tps[at + i].partition;
			req.Topics.v[i].PartitionIndexes.n = 1;
		}
		wire_call(wc, API_DescribeProducers, v, &req, &resp, &tx_arena);
		for (int i = 0; i < k; i++) {
			struct tx_tp *tp = &tps[at + i];

			tp->err = KERR_UNKNOWN_SERVER_ERROR;
			if (i < resp.Topics.n && resp.Topics.v[i].Partitions.n == 1) {
				tp->err = resp.Topics.v[i].Partitions.v[0].ErrorCode;
				tp->producers = resp.Topics.v[i].Partitions.v[0].ActiveProducers;
			}
		}
	}
	wire_close(wc);
}

/* Every broker's ListTransactions (optionally only producer ids pids[0..npids)), as table rows
 * {id, coordinator, producer id, state}; OUT *n. */
static const char **tx_list_all(rd_kafka_t *rk, int64_t duration, const int64_t *pids, int npids, int *n)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	struct tx_table t = { .ncols = 4 };

	for (int b = 0; b < md->broker_cnt; b++) {
		struct wire *wc = wire_open(rk, md->brokers[b].id);
		struct ListTransactionsRequest req;
		struct ListTransactionsResponse resp;
		int16_t v = wire_version(wc, API_ListTransactions, 1);

		if (duration >= 0 && v < 1)
			kafka_die("broker %d cannot filter transactions by duration", md->brokers[b].id);
		ListTransactionsRequest_init(&req);
		req.DurationFilter = duration;
		req.ProducerIdFilters.v = (int64_t *)pids;
		req.ProducerIdFilters.n = npids;
		wire_call(wc, API_ListTransactions, v, &req, &resp, &tx_arena);
		wire_close(wc);
		if (resp.ErrorCode)
			tx_fail("Failed to list transactions: %s", kafka_err_name(resp.ErrorCode));
		for (int32_t i = 0; i < resp.TransactionStates.n; i++) {
			const struct ListTransactionsResponseTransactionState *s = &resp.TransactionStates.v[i];
			const char *row[4] = { tx_kstr(s->TransactionalId), tx_printf("%d", md->brokers[b].id),
					       tx_printf("%" PRId64, s->ProducerId), tx_kstr(s->TransactionState) };

			tx_row(&t, row);
		}
	}
	rd_kafka_metadata_destroy(md);
	*n = t.nrows;
	return t.cells;
}

/* ---- list, describe, describe-producers ---- */

static int tx_cmp_row(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int tx_list(rd_kafka_t *rk, const struct opts *o)
{
	static const char *hdr[] = { "TransactionalId", "Coordinator", "ProducerId", "TransactionState" };
	int64_t duration = opt_int(o, "duration-filter", -1, INT64_MIN, INT64_MAX);
	struct tx_table t = { .ncols = 4 };
	const char **rows;
	int n;

	rows = tx_list_all(rk, duration < 0 ? -1 : duration, NULL, 0, &n);
	qsort(rows, (size_t)n, 4 * sizeof(*rows), tx_cmp_row);
	tx_row(&t, hdr);
	for (int i = 0; i < n; i++)
		tx_row(&t, rows + i * 4);
	tx_table_print(&t);
	return 0;
}

static const char *tx_topic_partitions(const struct DescribeTransactionsResponseTopic_array *topics)
{
	char *s = tx_printf("%s", "");

	for (int32_t i = 0; i < topics->n; i++)
		for (int32_t j = 0; j < topics->v[i].Partitions.n; j++)
			s = tx_printf("%s%s%.*s-%d", s, *s ? "," : "", topics->v[i].Topic.len, topics->v[i].Topic.p,
				      topics->v[i].Partitions.v[j]);
	return s;
}

static int tx_describe(rd_kafka_t *rk, const struct opts *o)
{
	static const char *hdr[] = { "CoordinatorId",
				     "TransactionalId",
				     "ProducerId",
				     "ProducerEpoch",
				     "TransactionState",
				     "TransactionTimeoutMs",
				     "CurrentTransactionStartTimeMs",
				     "TransactionDurationMs",
				     "TopicPartitions" };
	const char *id = opt_str(o, "transactional-id", NULL);
	int32_t coordinator;
	struct DescribeTransactionsResponseTransactionState *d = tx_describe_one(rk, id, &coordinator);
	int64_t start = d->TransactionStartTimeMs;
	struct tx_table t = { .ncols = 9 };
	const char *row[9];

	if (d->ErrorCode)
		tx_fail("Failed to describe transaction state of transactional-id `%s`: %s", id,
			kafka_err_name(d->ErrorCode));
	row[0] = tx_printf("%d", coordinator);
	row[1] = id;
	row[2] = tx_printf("%" PRId64, d->ProducerId);
	row[3] = tx_printf("%d", d->ProducerEpoch);
	row[4] = tx_kstr(d->TransactionState);
	row[5] = tx_printf("%d", d->TransactionTimeoutMs);
	row[6] = start >= 0 ? tx_printf("%" PRId64, start) : "None";
	row[7] = start >= 0 ? tx_printf("%" PRId64, tx_wall_ms() - start) : "None";
	row[8] = tx_topic_partitions(&d->Topics);
	tx_row(&t, hdr);
	tx_row(&t, row);
	tx_table_print(&t);
	return 0;
}

/* The producers of --topic/--partition at --broker-id or the leader; exits 1 on an error. */
static struct tx_tp *tx_partition_producers(rd_kafka_t *rk, const struct opts *o, const char *what)
{
	struct tx_tp *tp = tx_alloc(1, sizeof(*tp));
	int32_t node = (int32_t)opt_int(o, "broker-id", -1, 0, INT32_MAX);
	const char *where = node >= 0 ? tx_printf("broker %d", node) : "leader";

	tp->topic = opt_str(o, "topic", NULL);
	tp->partition = (int32_t)opt_int(o, "partition", 0, 0, INT32_MAX);
	if (node < 0)
		node = wire_leader(rk, tp->topic, tp->partition);
	tp->err = node < 0 ? KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_NONE;
	if (!tp->err)
		tx_describe_producers(rk, node, tp, 1);
	if (tp->err)
		tx_fail("%s for partition %s-%d on %s: %s", what, tp->topic, tp->partition, where,
			kafka_err_name(tp->err));
	return tp;
}

static int tx_describe_producers_cmd(rd_kafka_t *rk, const struct opts *o)
{
	static const char *hdr[] = { "ProducerId",   "ProducerEpoch", "LatestCoordinatorEpoch",
				     "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset" };
	struct tx_tp *tp = tx_partition_producers(rk, o, "Failed to describe producers");
	struct tx_table t = { .ncols = 6 };

	tx_row(&t, hdr);
	for (int32_t i = 0; i < tp->producers.n; i++) {
		const struct DescribeProducersResponseProducer *p = &tp->producers.v[i];
		const char *row[6] = { tx_printf("%" PRId64, p->ProducerId),
				       tx_printf("%d", p->ProducerEpoch),
				       tx_printf("%d", p->CoordinatorEpoch),
				       tx_printf("%d", p->LastSequence),
				       tx_printf("%" PRId64, p->LastTimestamp),
				       p->CurrentTxnStartOffset >= 0 ? tx_printf("%" PRId64, p->CurrentTxnStartOffset)
								     : "None" };

		tx_row(&t, row);
	}
	tx_table_print(&t);
	return 0;
}

/* ---- abort ---- */

static void tx_write_abort(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t pid, int16_t epoch,
			   int32_t coordinator_epoch)
{
	const char *spec = tx_printf("AbortTransactionSpec(topicPartition=%s-%d, producerId=%" PRId64
				     ", producerEpoch=%d, coordinatorEpoch=%d)",
				     topic, partition, pid, epoch, coordinator_epoch);
	int32_t leader = wire_leader(rk, topic, partition);
	struct WriteTxnMarkersRequestTopic rt = { .Name = kstr_c(topic), .PartitionIndexes = { &partition, 1 } };
	struct WriteTxnMarkersRequestMarker m = { pid, epoch, false, { &rt, 1 }, coordinator_epoch };
	struct WriteTxnMarkersRequest req = { { &m, 1 } };
	struct WriteTxnMarkersResponse resp;
	int16_t err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
	struct wire *wc;

	if (leader >= 0) {
		wc = wire_open(rk, leader);
		wire_call(wc, API_WriteTxnMarkers, wire_version(wc, API_WriteTxnMarkers, 1), &req, &resp, &tx_arena);
		wire_close(wc);
		err = KERR_UNKNOWN_SERVER_ERROR;
		if (resp.Markers.n == 1 && resp.Markers.v[0].Topics.n == 1 &&
		    resp.Markers.v[0].Topics.v[0].Partitions.n == 1)
			err = resp.Markers.v[0].Topics.v[0].Partitions.v[0].ErrorCode;
	}
	if (err)
		tx_fail("Failed to abort transaction %s: %s", spec, kafka_err_name(err));
}

static int tx_abort(rd_kafka_t *rk, const struct opts *o)
{
	const char *topic = opt_str(o, "topic", NULL);
	int32_t partition = (int32_t)opt_int(o, "partition", 0, 0, INT32_MAX);
	int64_t start = opt_int(o, "start-offset", -1, 0, INT64_MAX);
	struct tx_tp *tp;

	if (start < 0) {
		int32_t cepoch = (int32_t)opt_int(o, "coordinator-epoch", 0, INT32_MIN, INT32_MAX);

		/* -1 (no marker seen yet): 0 is at or below any epoch a coordinator uses */
		tx_write_abort(rk, topic, partition, opt_int(o, "producer-id", 0, 0, INT64_MAX),
			       (int16_t)opt_int(o, "producer-epoch", 0, 0, INT16_MAX), cepoch < 0 ? 0 : cepoch);
		return 0;
	}
	tp = tx_partition_producers(rk, o, "Failed to validate producer state");
	for (int32_t i = 0; i < tp->producers.n; i++) {
		const struct DescribeProducersResponseProducer *p = &tp->producers.v[i];

		if (p->CurrentTxnStartOffset == start) {
			tx_write_abort(rk, topic, partition, p->ProducerId, (int16_t)p->ProducerEpoch,
				       p->CoordinatorEpoch < 0 ? 0 : p->CoordinatorEpoch);
			return 0;
		}
	}
	tx_fail("Could not find any open transactions starting at offset %" PRId64 " on partition %s-%d", start, topic,
		partition);
}

/* ---- find-hanging ---- */

struct tx_search {
	struct tx_tp *tps; /* partitions searched */
	int32_t *nodes;    /* the broker asked about tps[i] */
	int n;
};

static void tx_search_add(struct tx_search *s, const char *topic, int32_t partition, int32_t node)
{
	s->tps[s->n] = (struct tx_tp){ .topic = topic, .partition = partition };
	s->nodes[s->n++] = node;
}

/* --topic [--partition], or every topic; with --broker-id only partitions with a replica there. */
static void tx_search_partitions(rd_kafka_t *rk, const struct opts *o, struct tx_search *s)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	const char *topic = opt_str(o, "topic", NULL);
	int32_t broker = (int32_t)opt_int(o, "broker-id", -1, 0, INT32_MAX), want = -1;
	int total = 1, found = 0;

	if (opt_has(o, "partition"))
		want = (int32_t)opt_int(o, "partition", 0, 0, INT32_MAX);
	for (int i = 0; i < md->topic_cnt; i++)
		total += md->topics[i].partition_cnt;
	s->tps = tx_alloc((size_t)total, sizeof(*s->tps));
	s->nodes = tx_alloc((size_t)total, sizeof(*s->nodes));
	for (int i = 0; i < md->topic_cnt; i++) {
		const struct rd_kafka_metadata_topic *t = &md->topics[i];

		if (topic && strcmp(t->topic, topic))
			continue;
		found += !t->err;
		for (int j = 0; j < t->partition_cnt; j++) {
			const struct rd_kafka_metadata_partition *p = &t->partitions[j];
			bool replica = broker < 0;

			for (int k = 0; k < p->replica_cnt && !replica; k++)
				replica = p->replicas[k] == broker;
			if (replica && (want < 0 || p->id == want))
				tx_search_add(s, tx_printf("%s", t->topic), p->id, broker >= 0 ? broker : p->leader);
		}
	}
	rd_kafka_metadata_destroy(md);
	if (topic && !found)
		tx_fail("Failed to describe 1 topics: %s", "UNKNOWN_TOPIC_OR_PARTITION");
	if (want >= 0 && s->n == 0 && broker < 0) /* Kafka asks about a named partition even if unknown */
		tx_search_add(s, topic, want, -1);
}

/* DescribeProducers for every searched partition, one run of requests per broker. */
static void tx_search_describe(rd_kafka_t *rk, struct tx_search *s, int32_t broker)
{
	for (int i = 0; i < s->n; i++) {
		int j = i;

		if (s->nodes[i] < 0) {
			s->tps[i].err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			continue;
		}
		while (j + 1 < s->n && s->nodes[j + 1] == s->nodes[i])
			j++;
		tx_describe_producers(rk, s->nodes[i], s->tps + i, j - i + 1);
		i = j;
	}
	for (int i = 0; i < s->n; i++)
		if (s->tps[i].err)
			tx_fail("Failed to describe producers for %d partitions on %s: %s", s->n,
				broker >= 0 ? tx_printf("broker %d", broker) : "their leaders",
				kafka_err_name(s->tps[i].err));
}

/* Is tp part of the transaction its coordinator describes (then the coordinator will end it)? */
static bool tx_in_transaction(const struct DescribeTransactionsResponseTransactionState *d, const struct tx_tp *tp)
{
	for (int32_t i = 0; d && !d->ErrorCode && i < d->Topics.n; i++)
		for (int32_t j = 0; kstr_eq_c(d->Topics.v[i].Topic, tp->topic) && j < d->Topics.v[i].Partitions.n; j++)
			if (d->Topics.v[i].Partitions.v[j] == tp->partition)
				return true;
	return false;
}

/* The coordinator's view of producer pid: NULL if no transactional id has it, else its description. */
static const struct DescribeTransactionsResponseTransactionState *tx_coordinator_view(rd_kafka_t *rk, int64_t pid)
{
	const struct DescribeTransactionsResponseTransactionState *d;
	const char **rows;
	int32_t coordinator;
	int n;

	rows = tx_list_all(rk, -1, &pid, 1, &n);
	for (int i = 0; i < n; i++) {
		if (strcmp(rows[i * 4 + 2], tx_printf("%" PRId64, pid)))
			continue; /* Kafka ignores listings of producer ids it did not ask for */
		d = tx_describe_one(rk, rows[i * 4], &coordinator);
		if (d->ErrorCode && d->ErrorCode != KERR_TRANSACTIONAL_ID_NOT_FOUND)
			tx_fail("Failed to describe 1 transactions: %s", kafka_err_name(d->ErrorCode));
		return d;
	}
	return NULL;
}

static int tx_find_hanging(rd_kafka_t *rk, const struct opts *o)
{
	static const char *hdr[] = { "Topic",         "Partition",        "ProducerId",
				     "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
				     "LastTimestamp", "Duration(min)" };
	int64_t max_ms = opt_int(o, "max-transaction-timeout", 15, INT32_MIN, INT32_MAX) * 60000;
	struct tx_search s = { 0 };
	struct tx_table t = { .ncols = 8 };
	int64_t now;

	tx_search_partitions(rk, o, &s);
	tx_search_describe(rk, &s, (int32_t)opt_int(o, "broker-id", -1, 0, INT32_MAX));
	now = tx_wall_ms();
	tx_row(&t, hdr);
	for (int i = 0; i < s.n; i++)
		for (int32_t j = 0; j < s.tps[i].producers.n; j++) {
			const struct DescribeProducersResponseProducer *p = &s.tps[i].producers.v[j];
			const char *row[8];

			if (p->CurrentTxnStartOffset < 0 || now - p->LastTimestamp <= max_ms ||
			    tx_in_transaction(tx_coordinator_view(rk, p->ProducerId), &s.tps[i]))
				continue;
			row[0] = s.tps[i].topic;
			row[1] = tx_printf("%d", s.tps[i].partition);
			row[2] = tx_printf("%" PRId64, p->ProducerId);
			row[3] = tx_printf("%d", p->ProducerEpoch);
			row[4] = tx_printf("%d", p->CoordinatorEpoch);
			row[5] = tx_printf("%" PRId64, p->CurrentTxnStartOffset);
			row[6] = tx_printf("%" PRId64, p->LastTimestamp);
			row[7] = tx_printf("%" PRId64, (now - p->LastTimestamp) / 60000);
			tx_row(&t, row);
		}
	tx_table_print(&t);
	return 0;
}

/* ---- commands and their flags ---- */

typedef int tx_action_fn(rd_kafka_t *rk, const struct opts *o);

static const struct tx_action {
	const char *name;
	tx_action_fn *fn;
	const char *flags[7]; /* the command's own flags; NULL ends */
} tx_actions[] = {
	{ "list", tx_list, { "duration-filter" } },
	{ "describe", tx_describe, { "transactional-id" } },
	{ "describe-producers", tx_describe_producers_cmd, { "topic", "partition", "broker-id" } },
	{ "abort",
	  tx_abort,
	  { "topic", "partition", "start-offset", "producer-id", "producer-epoch", "coordinator-epoch" } },
	{ "find-hanging", tx_find_hanging, { "broker-id", "max-transaction-timeout", "topic", "partition" } },
};

/* Kafka's checks of each command's flags, before anything is sent (exit 2 on a bad one). */
static void tx_check_flags(const struct opts *o, const char *name)
{
	if (!strcmp(name, "describe"))
		opt_require(o, "transactional-id");
	if (!strcmp(name, "describe-producers") || !strcmp(name, "abort")) {
		opt_require(o, "topic");
		opt_require(o, "partition");
	}
	if (!strcmp(name, "abort")) {
		if (opt_has(o, "start-offset") == opt_has(o, "producer-id"))
			opt_usage_error(o, "The transaction to abort must be identified either with --start-offset "
					   "or with --producer-id, --producer-epoch, and --coordinator-epoch");
		if (opt_has(o, "producer-id")) {
			opt_require(o, "producer-epoch");
			opt_require(o, "coordinator-epoch");
		}
	}
	if (!strcmp(name, "find-hanging") && !opt_has(o, "topic") && !opt_has(o, "broker-id"))
		opt_usage_error(o, "The `find-hanging` command requires either --topic or --broker-id to limit the "
				   "scope of the search");
	if (!strcmp(name, "find-hanging") && opt_has(o, "partition") && !opt_has(o, "topic"))
		opt_usage_error(o, "The --partition argument requires --topic to be provided");
	/* numbers: a bad one is a usage error now, not after connecting */
	opt_int(o, "partition", 0, 0, INT32_MAX);
	opt_int(o, "broker-id", 0, 0, INT32_MAX);
	opt_int(o, "max-transaction-timeout", 0, INT32_MIN, INT32_MAX);
	opt_int(o, "start-offset", 0, 0, INT64_MAX);
	opt_int(o, "producer-id", 0, 0, INT64_MAX);
	opt_int(o, "producer-epoch", 0, 0, INT16_MAX);
	opt_int(o, "coordinator-epoch", 0, INT32_MIN, INT32_MAX);
	opt_int(o, "duration-filter", 0, INT64_MIN, INT64_MAX);
}

static tx_action_fn *tx_check_args(const struct opts *o)
{
	const char *name = opt_subcmd(o);
	const struct tx_action *a = NULL;

	if (!name)
		opt_usage_error(o, "Command must be one of: list, describe, describe-producers, abort, find-hanging");
	for (size_t i = 0; i < sizeof(tx_actions) / sizeof(tx_actions[0]); i++)
		if (!strcmp(tx_actions[i].name, name))
			a = &tx_actions[i];
	opt_require(o, "bootstrap-server");
	for (int i = 0; defs[i].name; i++) {
		bool own = !strcmp(defs[i].name, "bootstrap-server") || !strcmp(defs[i].name, "command-config");

		for (int j = 0; !own && a->flags[j]; j++)
			own = !strcmp(defs[i].name, a->flags[j]);
		if (!own && opt_has(o, defs[i].name))
			opt_usage_error(o, "Option \"--%s\" is not valid with command %s", defs[i].name, name);
	}
	tx_check_flags(o, name);
	return a->fn;
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse_subcmd(&cmd, subcmds, argc, argv);
	tx_action_fn *fn = tx_check_args(o);
	rd_kafka_t *rk = kafka_admin_connect(o);
	int rc;

	arena_init(&tx_arena, 0);
	rc = fn(rk, o);
	arena_release(&tx_arena);
	rd_kafka_destroy(rk);
	opts_free(o);
	return rc;
}
