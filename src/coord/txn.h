/*
 * txn.h - the transaction coordinator: transactional.id -> producer id and
 * epoch, the state of each id's current transaction, its partitions, the
 * COMMIT/ABORT markers, timeouts, and persistence in __transaction_state
 * (txn_store.h).
 *
 * The coordinator knows nothing of sockets, requests or the topic
 * registry: it reaches partitions, producer ids and the group
 * coordinator through txn_coord_ops.  Calls answer with a Kafka error
 * code (KERR_*); KERR_PRODUCER_FENCED is returned for every stale epoch
 * and the caller rewrites it to INVALID_PRODUCER_EPOCH for request
 * versions that predate it (PROTOCOL-NOTES §5.25a).
 *
 * Every state change is appended to __transaction_state before it is
 * acted on.  Completing a transaction is ordered for power loss: the
 * markers are written only once PrepareCommit/PrepareAbort is durable,
 * and CompleteCommit/CompleteAbort only once every marker is durable
 * (in cluster mode: on the in-sync replicas of its partition, the high
 * watermark past it, ops.replicated; each step waits for the fsync round
 * covering the previous one:
 * ops.written gives its ticket, ops.synced says when it is done, and the
 * broker calls txn_coord_on_synced after every round).  A marker that
 * cannot be written (partition offline, disk error) or synced is retried
 * every TXN_RETRY_MS until it is (logged as an error at most every
 * TXN_RETRY_LOG_MS); meanwhile the id stays in Prepare* and answers
 * CONCURRENT_TRANSACTIONS.  txn_coord_attach() completes every
 * Prepare* found at start-up the same way.  The state machine is drawn in
 * txn.c.
 *
 * The coordinator epoch written into markers is the leader epoch of the
 * id's __transaction_state partition, bumped once per run before the
 * first marker from it (as a new Kafka coordinator's), so a partition can
 * refuse markers from an older coordinator (log/marker.h).
 *
 * One event-loop thread calls everything; the timeout timer runs on it.
 */
#ifndef GREGOR_COORD_TXN_H
#define GREGOR_COORD_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "coord/txn_store.h"
#include "net/loop.h"
#include "util/buf.h"

/* Kafka's TransactionState ids (also the transaction_status byte in the log). */
enum txn_state {
	TXN_EMPTY = 0,
	TXN_ONGOING = 1,
	TXN_PREPARE_COMMIT = 2,
	TXN_PREPARE_ABORT = 3,
	TXN_COMPLETE_COMMIT = 4,
	TXN_COMPLETE_ABORT = 5,
	TXN_DEAD = 6,
	TXN_PREPARE_EPOCH_FENCE = 7,
};
#define TXN_STATE_COUNT 8

struct marker;
struct part;
struct txn;
struct txn_coord;

struct txn_coord_ops {
	/*
	 * The partition to write a marker to (OUT *out): 0, -ENOENT if it no
	 * longer exists (the marker is skipped), other -errno while it is
	 * offline (the marker is retried).
	 */
	int (*part)(void *arg, const char *topic, int32_t partition, struct part **out);
	/* A new, never used producer id (OUT *id).  0 or -errno. */
	int (*new_producer_id)(void *arg, int64_t *id);
	/* A marker of producer_id on __consumer_offsets-partition: its staged offsets there made visible (commit) or dropped. */
	void (*offsets_complete)(void *arg, int32_t partition, int64_t producer_id, bool commit);
	/* part was appended to: returns the fsync ticket covering it (0 = none needed). */
	uint64_t (*written)(void *arg, struct part *part);
	/*
	 * True once fsync rounds first..last are done; OUT *failed: a sync in
	 * one of them failed (a step's writes may be synced in several rounds:
	 * the last round succeeding says nothing of the earlier ones).
	 */
	bool (*synced)(void *arg, uint64_t first, uint64_t last, bool *failed);
	/*
	 * 1 once the high watermark of topic-partition, led here, reaches end
	 * (a marker appended there is on the in-sync replicas), 0 before,
	 * -errno if it cannot any more (no longer led here, ISR below
	 * min.insync.replicas: the marker is written again).  A single node
	 * answers 1.
	 */
	int (*replicated)(void *arg, const char *topic, int32_t partition, int64_t end);
	/*
	 * Cluster mode: part() answered -EREMOTE (another broker leads the
	 * partition): sends marker m of id there; the outcome comes back
	 * through txn_coord_on_marker_sent().  0, or -errno (retried).
	 */
	int (*send_marker)(void *arg, struct kstr id, const struct marker *m, const char *topic, int32_t partition);
};

/* Called once when an EndTxn that could not finish at once has: err is its answer. */
typedef void txn_done_fn(void *arg, int16_t err);

struct txn_coord_cfg {
	int32_t max_timeout_ms;     /* transaction.max.timeout.ms */
	int32_t abort_interval_ms;  /* transaction.abort.timed.out.transaction.cleanup.interval.ms */
	int64_t id_expiration_ms;   /* transactional.id.expiration.ms */
	int32_t expire_interval_ms; /* transaction.remove.expired.transaction.cleanup.interval.ms */
};

#define TXN_RETRY_MS 500       /* a marker or state write that failed is retried this often */
#define TXN_RETRY_LOG_MS 10000 /* a transaction's failing retries are logged as errors at most this often */

/* What DescribeTransactions / ListTransactions report; views valid until the next change. */
struct txn_info {
	struct kstr id; /* may hold NUL bytes */
	enum txn_state state;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t timeout_ms;
	int64_t start_ms; /* -1 when no transaction */
	const struct txn_tp *tps;
	int32_t ntps;
};

int txn_coord_new(struct loop *loop, const struct txn_coord_cfg *cfg, const struct txn_coord_ops *ops, void *arg,
		  struct txn_coord **out);
void txn_coord_free(struct txn_coord *tc);
/*
 * Reaches __transaction_state through ct (copied; see coord_topic.h),
 * replays it and finishes every transaction left in
 * PrepareCommit/PrepareAbort.  0 or -errno.
 */
int txn_coord_attach(struct txn_coord *tc, const struct coord_topic *ct);
bool txn_coord_attached(const struct txn_coord *tc);
/*
 * Cluster mode: reaches __transaction_state through ct (ct->nparts: the
 * topic's partition count in the cluster) but loads nothing; this broker
 * coordinates the ids of the partitions it leads, loaded when
 * txn_coord_set_leader() says so.  0 or -ENOMEM.
 */
int txn_coord_attach_unowned(struct txn_coord *tc, const struct coord_topic *ct);
/*
 * Cluster mode: this broker became leader of partition (loads its ids soon
 * after, on a timer: COORDINATOR_LOAD_IN_PROGRESS meanwhile, then finishes
 * the transactions found in PrepareCommit/PrepareAbort and aborts the
 * timed-out ones), or stopped leading it (forgets its ids; an EndTxn
 * waiting on one is answered NOT_COORDINATOR).  A no-op on a single node.
 * The coordinator epoch in markers is then the partition's leader epoch,
 * which the controller raised for the new leader.
 */
void txn_coord_set_leader(struct txn_coord *tc, int32_t partition, bool leader);
/* KERR_NONE if id is coordinated here, else NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. */
int16_t txn_coord_owner_kerr(const struct txn_coord *tc, struct kstr id);

/*
 * The fsync ticket covering everything written since the last call (0 if
 * nothing needs a sync); resets it.  Callers park their reply on it.
 */
uint64_t txn_coord_take_ticket(struct txn_coord *tc);

/*
 * Cluster mode: if the last record written to __transaction_state was of
 * id's partition, OUT that partition and its log end after it: the reply
 * waits for the partition's high watermark to reach it.  Resets it.
 */
bool txn_coord_take_need(struct txn_coord *tc, struct kstr id, int32_t *partition, int64_t *end);

const char *txn_state_name(enum txn_state st); /* Kafka's names: "Ongoing" ... */

/*
 * InitProducerId with a transactional id.  producer_id/epoch: the
 * caller's current ones (v3+) or -1/-1.  An open transaction of the id is
 * aborted (epoch fenced) first.  OUT *pid, *epoch.
 */
int16_t txn_init_producer(struct txn_coord *tc, struct kstr id, int32_t timeout_ms, int64_t producer_id,
			  int16_t producer_epoch, int64_t *pid, int16_t *epoch);
/* AddPartitionsToTxn (each partition already known to exist); starts the transaction. */
int16_t txn_add_partitions(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			   const struct txn_tp *tps, int32_t n);
/* Checks id/producer/epoch without changing anything (AddPartitionsToTxn preamble, TxnOffsetCommit). */
int16_t txn_verify(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
		   bool need_ongoing);
/*
 * EndTxn: PrepareCommit/PrepareAbort, markers, CompleteCommit/CompleteAbort.
 * Returns the answer, or with *pending set, KERR_NONE and done(arg, err)
 * is called later, once: when the transaction is complete, or when a
 * marker had to be left for a retry (the outcome is durable then), or
 * with COORDINATOR_NOT_AVAILABLE when an fsync round of its writes failed
 * (the log dir is offline: nothing completes before a restart; the client
 * retries) or at txn_coord_free.
 */
int16_t txn_end(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch, bool commit,
		txn_done_fn *done, void *arg, bool *pending);

/*
 * KIP-890 verification of a transactional Produce: KERR_NONE if topic /
 * partition is in the ongoing transaction of producer_id/producer_epoch
 * for id; else INVALID_PRODUCER_ID_MAPPING (unknown id or producer id),
 * PRODUCER_FENCED, CONCURRENT_TRANSACTIONS (completing), INVALID_TXN_STATE
 * (not added, or no transaction).  The answer of AddPartitionsToTxn v4
 * VerifyOnly for one partition.
 */
int16_t txn_verify_partition(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			     struct kstr topic, int32_t partition);

/*
 * Cluster mode: the answer of the broker a marker of id was sent to
 * (ops.send_marker): KERR_NONE (written there), or an error (the marker is
 * sent again after TXN_RETRY_MS, to the leader then known; a stale
 * producer or coordinator epoch drops it, as a local refusal does).
 */
void txn_coord_on_marker_sent(struct txn_coord *tc, struct kstr id, int64_t producer_id, const char *topic,
			      int32_t partition, int16_t err);
/* An fsync round finished: moves on the transactions waiting for it. */
void txn_coord_on_synced(struct txn_coord *tc);
/* Retries the completion steps that failed (also the coordinator's timer, every TXN_RETRY_MS). */
void txn_coord_retry(struct txn_coord *tc);

/* DescribeTransactions: false if the id is unknown. */
bool txn_describe(struct txn_coord *tc, struct kstr id, struct txn_info *out);
/* Every transactional id, in no particular order: calls fn for each. */
void txn_coord_each(struct txn_coord *tc, void (*fn)(void *arg, const struct txn_info *ti), void *arg);

/* Aborts transactions past their timeout (also the coordinator's own timer). */
void txn_coord_abort_timed_out(struct txn_coord *tc, int64_t now_wall_ms);
/*
 * Removes ids with no transaction (Empty, CompleteCommit, CompleteAbort)
 * last updated more than transactional.id.expiration.ms before
 * now_wall_ms, writing a tombstone for each (also a timer, every
 * transaction.remove.expired.transaction.cleanup.interval.ms).  Returns
 * how many were removed.
 */
int txn_coord_expire_ids(struct txn_coord *tc, int64_t now_wall_ms);

#endif
