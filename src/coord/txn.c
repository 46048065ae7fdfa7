/*
 * txn.c - the transaction coordinator (see txn.h).
 *
 * State machine of one transactional id (Kafka's TransactionState; the
 * number is the status byte written to __transaction_state):
 *
 *                 InitProducerId (new id, or epoch bump)
 *                          |
 *                          v
 *     +-----------> Empty(0) ----AddPartitions/AddOffsets----+
 *     |                                                      v
 *     |  InitProducerId                                 Ongoing(1) <--------+
 *     |                                                 |   |    \          |
 *     |                             EndTxn(commit) -----+   |     \ timeout or InitProducerId
 *     |                                   |       EndTxn(abort)    \ (txn_fence)
 *     |                                   v             |           v
 *     |                        PrepareCommit(2)         |   PrepareEpochFence(7)  (memory only:
 *     |                                   |             v           |              epoch + 1)
 *     |                                   |      PrepareAbort(3) <--+
 *     |                      markers (txn_advance)      |
 *     |                                   v             v
 *     +---------------------- CompleteCommit(4)   CompleteAbort(5) --AddPartitions--> Ongoing
 *                                                                     (also from CompleteCommit)
 *   Dead(6): an id removed by transactional.id.expiration.ms (a tombstone in the log;
 *            never kept in memory).
 *
 * Transitions and the function doing them:
 *   Empty/Complete* -> Empty           txn_init_producer   (epoch + 1, or a new id)
 *   Empty/Complete* -> Ongoing         txn_add_partitions / txn_add_offsets
 *   Ongoing -> PrepareCommit/Abort     txn_end
 *   Ongoing -> PrepareEpochFence       txn_fence (InitProducerId of a newer producer, timeout)
 *   PrepareEpochFence -> PrepareAbort  txn_fence
 *   Prepare* -> Complete*              txn_advance (markers durable), also at attach
 *   Empty/Complete* -> Dead            txn_coord_expire_ids (tombstone, removed)
 * txn_set_state() checks each against this table and logs it (debug "txn").
 *
 * Durability: txn_persist() appends the record of the new state before the
 * coordinator acts on it.  Completion (txn_advance) runs in steps, each
 * waiting for the fsync round of the one before:
 *
 *   Prepare* appended --synced--> markers appended (TXN_MARK_TODO ->
 *   WRITTEN) --synced--> (DONE) Complete* appended
 *
 * In cluster mode each step also waits for the high watermark: the
 * markers for the Prepare* record's (txn_replicated), a marker written
 * here for its partition's (txn_mark_replicated), a marker sent to
 * another broker for that broker's answer, which waits for it too.
 *
 * A marker that cannot be appended stays TODO, a failed fsync leaves its
 * step to be synced again: txn_coord_retry retries both.  A Prepare*
 * found at start-up is completed the same way: writing a marker twice is
 * harmless (the second finds no open transaction of that producer).
 * Completing transactions are on tc->completing; one in Prepare* is
 * always there, and is never freed before it is complete.
 */
#include "coord/txn.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/marker.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/log.h"

#define TXN_BUCKETS 1024
#define TXN_EPOCH_MAX (INT16_MAX - 1) /* past this a new producer id is handed out */
#define TXN_OFFSETS_TOPIC "__consumer_offsets"

/* Where the marker of one partition is, while a transaction completes. */
enum txn_mark {
	TXN_MARK_TODO,    /* not appended yet (or its append failed) */
	TXN_MARK_WRITTEN, /* appended, its fsync round (cluster mode: its partition's high watermark) awaited */
	TXN_MARK_SENT,    /* sent to the partition's leader on another broker, its answer awaited */
	TXN_MARK_DONE,    /* durable, or the partition is gone */
};

struct txn {
	char *id; /* owned, NUL-terminated copy of every byte: may hold NUL, use id_len */
	int32_t id_len;
	int64_t producer_id;
	int16_t epoch;
	int32_t timeout_ms;
	enum txn_state state;
	struct txn_tp *tps; /* partitions of the open transaction; topics owned */
	int32_t ntps, tps_cap;
	int64_t start_ms; /* wall clock, -1 when no transaction is open */
	int64_t update_ms;
	uint64_t ticket;      /* fsync ticket of the last record persisted */
	int16_t fenced_epoch; /* the epoch before the last fence (InitProducerId v3+ retries it), -1 */
	struct txn *hnext;
	/* while completing (Prepare*), see txn_advance */
	uint8_t *marks;       /* enum txn_mark per tps[i]; NULL when not completing */
	int64_t *mark_ends;   /* per tps[i]: the log end after its WRITTEN marker (txn_marks_alloc) */
	bool replicating;     /* a WRITTEN marker waits for its partition's high watermark */
	uint64_t wait_first;  /* the first fsync round awaited (of the step's writes), 0 = none */
	uint64_t wait_ticket; /* the last one */
	bool prepared;        /* the Prepare* record is durable */
	int64_t state_end;    /* cluster mode: log end of its __transaction_state partition after its last record */
	bool retry;           /* a step failed: txn_coord_retry does it again */
	int64_t retry_log_ms; /* monotonic time of the last retry logged as an error, 0 = none */
	txn_done_fn *done;    /* the EndTxn waiting for the outcome */
	void *done_arg;
	struct txn *cnext; /* tc->completing */
};

struct txn_coord {
	struct loop *loop;
	struct txn_coord_cfg cfg;
	struct txn_coord_ops ops;
	void *arg;
	struct coord_topic topic; /* __transaction_state; nparts 0 until attached */
	struct txn *buckets[TXN_BUCKETS];
	uint64_t ticket;        /* fsync ticket of writes since txn_coord_take_ticket */
	struct txn *completing; /* transactions in Prepare*, see txn_advance */
	bool *epoch_bumped;     /* per partition of parts: txn_coordinator_epoch bumped it */
	struct loop_timer timer;
	struct loop_timer retry_timer;
	struct loop_timer expire_timer;
	int32_t need_part;        /* cluster mode: partition of the last record written, -1 none (take_need) */
	int64_t need_end;         /* its log end after that record */
	uint8_t *owned;           /* cluster mode: TXN_PART_* per partition; NULL: all (single node) */
	struct loop_timer loader; /* loads the partitions in TXN_PART_LOADING */
};

/* Cluster mode: where this broker stands with one __transaction_state partition. */
enum { TXN_PART_NOT_OWNED = 0, TXN_PART_LOADING, TXN_PART_LOADED };

static const char *const txn_state_names[TXN_STATE_COUNT] = {
	[TXN_EMPTY] = "Empty",
	[TXN_ONGOING] = "Ongoing",
	[TXN_PREPARE_COMMIT] = "PrepareCommit",
	[TXN_PREPARE_ABORT] = "PrepareAbort",
	[TXN_COMPLETE_COMMIT] = "CompleteCommit",
	[TXN_COMPLETE_ABORT] = "CompleteAbort",
	[TXN_DEAD] = "Dead",
	[TXN_PREPARE_EPOCH_FENCE] = "PrepareEpochFence",
};

const char *txn_state_name(enum txn_state st)
{
	return (unsigned)st < TXN_STATE_COUNT ? txn_state_names[st] : "Unknown";
}

/* ---- the state machine ---- */

static bool txn_transition_ok(enum txn_state from, enum txn_state to)
{
	switch (to) {
	case TXN_EMPTY:
		return from == TXN_EMPTY || from == TXN_COMPLETE_COMMIT || from == TXN_COMPLETE_ABORT;
	case TXN_ONGOING:
		return from == TXN_EMPTY || from == TXN_ONGOING || from == TXN_COMPLETE_COMMIT ||
		       from == TXN_COMPLETE_ABORT;
	case TXN_PREPARE_COMMIT:
		return from == TXN_ONGOING;
	case TXN_PREPARE_ABORT:
		return from == TXN_ONGOING || from == TXN_PREPARE_EPOCH_FENCE;
	case TXN_PREPARE_EPOCH_FENCE:
		return from == TXN_ONGOING;
	case TXN_COMPLETE_COMMIT:
		return from == TXN_PREPARE_COMMIT;
	case TXN_COMPLETE_ABORT:
		return from == TXN_PREPARE_ABORT;
	case TXN_DEAD:
		return from == TXN_EMPTY || from == TXN_COMPLETE_COMMIT || from == TXN_COMPLETE_ABORT;
	}
	return false;
}

static void txn_set_state(struct txn *txn, enum txn_state to)
{
	bool ok = txn_transition_ok(txn->state, to);

	assert(ok);
	log_debug(LOGC_TXN, "txn", "'%s' (producer %lld epoch %d): %s -> %s%s", txn->id, (long long)txn->producer_id,
		  txn->epoch, txn_state_name(txn->state), txn_state_name(to), ok ? "" : " (invalid transition)");
	txn->state = to;
}

/* ---- table ---- */

static struct kstr txn_id(const struct txn *txn)
{
	return (struct kstr){ txn->id, txn->id_len };
}

static uint32_t txn_hash(struct kstr id)
{
	uint32_t h = 2166136261u;

	for (int32_t i = 0; i < id.len; i++)
		h = (h ^ (uint8_t)id.p[i]) * 16777619u;
	return h % TXN_BUCKETS;
}

static struct txn *txn_find(struct txn_coord *tc, struct kstr id)
{
	for (struct txn *txn = tc->buckets[txn_hash(id)]; txn; txn = txn->hnext)
		if (kstr_eq(id, txn_id(txn)))
			return txn;
	return NULL;
}

static void txn_clear_tps(struct txn *txn)
{
	for (int32_t i = 0; i < txn->ntps; i++) {
		free(txn->tps[i].topic);
		txn->tps[i].topic = NULL;
	}
	txn->ntps = 0;
}

static struct txn *txn_create(struct txn_coord *tc, struct kstr id)
{
	struct txn *txn = calloc(1, sizeof(*txn));
	uint32_t h = txn_hash(id);

	if (!txn || !(txn->id = malloc((size_t)id.len + 1))) {
		free(txn);
		return NULL;
	}
	memcpy(txn->id, id.p, (size_t)id.len);
	txn->id[id.len] = '\0';
	txn->id_len = id.len;
	txn->producer_id = -1;
	txn->epoch = -1;
	txn->fenced_epoch = -1;
	txn->start_ms = -1;
	txn->state = TXN_EMPTY;
	txn->hnext = tc->buckets[h];
	tc->buckets[h] = txn;
	return txn;
}

/* The marks of a completing transaction, all TODO.  False when out of memory. */
static bool txn_marks_alloc(struct txn *txn)
{
	size_t n = (size_t)(txn->ntps > 0 ? txn->ntps : 1);

	txn->marks = calloc(n, 1);
	txn->mark_ends = calloc(n, sizeof(*txn->mark_ends));
	if (txn->marks && txn->mark_ends)
		return true;
	free(txn->mark_ends);
	txn->mark_ends = NULL;
	free(txn->marks);
	txn->marks = NULL;
	return false;
}

static void txn_marks_free(struct txn *txn)
{
	free(txn->mark_ends);
	txn->mark_ends = NULL;
	free(txn->marks);
	txn->marks = NULL;
}

static void txn_free(struct txn *txn)
{
	txn_marks_free(txn);
	txn_clear_tps(txn);
	free(txn->tps);
	free(txn->id);
	free(txn);
}

static bool txn_has_tp(const struct txn *txn, const char *topic, int32_t partition)
{
	for (int32_t i = 0; i < txn->ntps; i++)
		if (txn->tps[i].partition == partition && !strcmp(txn->tps[i].topic, topic))
			return true;
	return false;
}

static int txn_add_tp(struct txn *txn, const char *topic, int32_t partition)
{
	if (txn_has_tp(txn, topic, partition))
		return 0;
	if (txn->ntps == txn->tps_cap) {
		int32_t cap = txn->tps_cap ? txn->tps_cap * 2 : 8;
		struct txn_tp *v = realloc(txn->tps, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		txn->tps = v;
		txn->tps_cap = cap;
	}
	txn->tps[txn->ntps].topic = strdup(topic);
	if (!txn->tps[txn->ntps].topic)
		return -ENOMEM;
	txn->tps[txn->ntps++].partition = partition;
	return 0;
}

/* ---- persistence ---- */

/* Appends txn's current state to __transaction_state.  0 or -errno. */
static int txn_persist(struct txn_coord *tc, struct txn *txn)
{
	struct txn_store_value v = {
		.producer_id = txn->producer_id,
		.producer_epoch = txn->epoch,
		.timeout_ms = txn->timeout_ms,
		.status = (int8_t)txn->state,
		.tps = txn->tps,
		.ntps = txn->ntps,
		.update_ms = txn->update_ms,
		.start_ms = txn->start_ms,
	};
	struct part *part;
	int err = txn_store_write(&tc->topic, txn_id(txn), &v, txn->update_ms, &part);
	uint64_t tk;

	if (err) {
		log_error("%s: cannot persist '%s' (%s): %s", TXN_STORE_TOPIC, txn->id, txn_state_name(txn->state),
			  strerror(-err));
		return err;
	}
	tk = tc->ops.written(tc->arg, part);
	tc->ticket = tk > tc->ticket ? tk : tc->ticket;
	txn->ticket = tk;
	txn->state_end = part_log_end_offset(part);
	tc->need_part = txn_store_partition_of(tc->topic.nparts, txn_id(txn));
	tc->need_end = txn->state_end;
	return 0;
}

/*
 * Cluster mode: false while the high watermark of txn's __transaction_state
 * partition is below its last record (Kafka's coordinator acts on a state
 * once the in-sync replicas have it); txn_coord_on_synced is called again
 * when high watermarks move.
 */
static bool txn_replicated(struct txn_coord *tc, const struct txn *txn)
{
	struct part *part;

	if (!tc->owned)
		return true;
	part = tc->topic.part(tc->topic.arg, txn_store_partition_of(tc->topic.nparts, txn_id(txn)));
	return part && part_high_watermark(part) >= txn->state_end;
}

/* Moves txn to state `to`, stamps it and persists it; on failure the state is restored. */
static int16_t txn_move(struct txn_coord *tc, struct txn *txn, enum txn_state to)
{
	enum txn_state from = txn->state;

	txn_set_state(txn, to);
	txn->update_ms = clock_wall_ms();
	if (txn_persist(tc, txn)) {
		txn->state = from;
		return KERR_COORDINATOR_NOT_AVAILABLE;
	}
	return KERR_NONE;
}

/* ---- completion: markers ---- */

/* The current step also waits for fsync round tk (0: none). */
static void txn_wait_on(struct txn *txn, uint64_t tk)
{
	if (!tk)
		return;
	txn->wait_first = txn->wait_first && txn->wait_first < tk ? txn->wait_first : tk;
	txn->wait_ticket = txn->wait_ticket > tk ? txn->wait_ticket : tk;
}

/*
 * The coordinator epoch of txn: the leader epoch of its __transaction_state
 * partition, bumped before this coordinator's first marker from that
 * partition (as a Kafka broker taking the partition over), so it is above
 * every epoch an earlier run wrote into a marker.  Lazily: a start-up
 * writes no checkpoint for partitions whose ids send no marker.
 */
static int32_t txn_coordinator_epoch(struct txn_coord *tc, const struct txn *txn)
{
	int32_t i = txn_store_partition_of(tc->topic.nparts, txn_id(txn));
	struct part *part = tc->topic.part(tc->topic.arg, i);

	if (!part)
		return -1;                        /* offline: no epoch to give until it is back */
	if (!tc->epoch_bumped[i] && !tc->owned) { /* cluster mode: the controller's leader epoch already moved */
		int err = part_set_leader_epoch(part, part_leader_epoch(part) + 1);

		if (err)
			log_warn("%s-%d: cannot record the coordinator epoch: %s", TXN_STORE_TOPIC, i, strerror(-err));
		tc->epoch_bumped[i] = true;
	}
	return part_leader_epoch(part);
}

/*
 * Logs a failed completion step of txn ("'id': <what>; retrying"): as an
 * error at most once per TXN_RETRY_LOG_MS, at debug ("txn") in between, so
 * an offline log dir does not fill the log every TXN_RETRY_MS.
 */
static void txn_log_retry(struct txn *txn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void txn_log_retry(struct txn *txn, const char *fmt, ...)
{
	int64_t now = clock_mono_ms();
	bool loud = !txn->retry_log_ms || now - txn->retry_log_ms >= TXN_RETRY_LOG_MS;
	char what[512];
	va_list ap;

	if (!loud && !(log_debug_mask & LOGC_TXN))
		return;
	if (loud)
		txn->retry_log_ms = now;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_emit(loud ? LOG_ERROR : LOG_DEBUG, loud ? NULL : "txn", "'%s': %s; retrying every %d ms", txn->id, what,
		 TXN_RETRY_MS);
}

/* Appends the marker of tps[i]; true if it is appended or needs none (TODO -> WRITTEN/DONE). */
static bool txn_write_marker(struct txn_coord *tc, struct txn *txn, int32_t i, bool commit)
{
	const struct txn_tp *tp = &txn->tps[i];
	struct marker m = { txn->producer_id, txn->epoch, txn_coordinator_epoch(tc, txn), commit };
	struct part_append_info info;
	struct part *part;
	int err = m.coordinator_epoch < 0 ? -EIO : tc->ops.part(tc->arg, tp->topic, tp->partition, &part);

	if (err == -ENOENT) {
		txn->marks[i] = TXN_MARK_DONE; /* the topic was deleted meanwhile */
		return true;
	}
	if (err == -EREMOTE && !(err = tc->ops.send_marker(tc->arg, txn_id(txn), &m, tp->topic, tp->partition))) {
		txn->marks[i] = TXN_MARK_SENT; /* txn_coord_on_marker_sent moves it on */
		return true;
	}
	if (!err)
		err = marker_append(part, &m, clock_wall_ms(), &info);
	if (err == -ESTALE || err == -EPERM) {
		log_error("'%s': the %s marker for '%s-%d' was refused (%s epoch is stale); not retried", txn->id,
			  commit ? "COMMIT" : "ABORT", tp->topic, tp->partition,
			  err == -ESTALE ? "coordinator" : "producer");
		txn->marks[i] = TXN_MARK_DONE;
		return true;
	}
	if (err) {
		txn_log_retry(txn, "cannot write the %s marker to '%s-%d': %s", commit ? "COMMIT" : "ABORT", tp->topic,
			      tp->partition, strerror(-err));
		return false;
	}
	txn_wait_on(txn, tc->ops.written(tc->arg, part));
	txn->marks[i] = TXN_MARK_WRITTEN;
	txn->mark_ends[i] = info.last_offset + 1;
	return true;
}

/*
 * A WRITTEN marker whose fsync round is done: DONE once the high
 * watermark of its partition passes it (ops.replicated: Kafka appends
 * markers with acks=-1), and only then do the staged offsets of a marker
 * on __consumer_offsets become visible (COMMIT) or go (ABORT).  Meanwhile
 * it stays WRITTEN (txn->replicating); if the wait cannot succeed here
 * (leadership moved, too few in-sync replicas) it is written again (TODO,
 * *todo set).
 */
static void txn_mark_replicated(struct txn_coord *tc, struct txn *txn, int32_t i, bool commit, bool *todo)
{
	const struct txn_tp *tp = &txn->tps[i];
	int rc = tc->ops.replicated(tc->arg, tp->topic, tp->partition, txn->mark_ends[i]);

	if (rc == 0) {
		txn->replicating = true;
		return;
	}
	if (rc < 0) {
		txn_log_retry(txn, "the %s marker for '%s-%d' did not reach the in-sync replicas: %s",
			      commit ? "COMMIT" : "ABORT", tp->topic, tp->partition, strerror(-rc));
		txn->marks[i] = TXN_MARK_TODO;
		*todo = true;
		return;
	}
	if (!strcmp(tp->topic, TXN_OFFSETS_TOPIC))
		tc->ops.offsets_complete(tc->arg, tp->partition, txn->producer_id, commit);
	txn->marks[i] = TXN_MARK_DONE;
}

/*
 * Asks again for the fsync of every step not known durable (after a failed
 * round): the Prepare* record, and each WRITTEN marker's partition.
 */
static void txn_resync(struct txn_coord *tc, struct txn *txn)
{
	struct part *part = tc->topic.part(tc->topic.arg, txn_store_partition_of(tc->topic.nparts, txn_id(txn)));

	if (!txn->prepared && part)
		txn_wait_on(txn, tc->ops.written(tc->arg, part));
	for (int32_t i = 0; i < txn->ntps; i++) {
		if (txn->marks[i] != TXN_MARK_WRITTEN)
			continue;
		if (tc->ops.part(tc->arg, txn->tps[i].topic, txn->tps[i].partition, &part)) {
			txn->marks[i] = TXN_MARK_TODO; /* offline now: append it again once it is back */
			continue;
		}
		txn_wait_on(txn, tc->ops.written(tc->arg, part));
	}
}

/* ---- completion: steps ---- */

static void txn_notify(struct txn *txn, int16_t err)
{
	txn_done_fn *done = txn->done;

	txn->done = NULL;
	if (done)
		done(txn->done_arg, err);
}

static void txn_retry_later(struct txn_coord *tc, struct txn *txn)
{
	txn->retry = true;
	if (!loop_timer_armed(&tc->retry_timer))
		loop_timer_set(tc->loop, &tc->retry_timer, clock_mono_ms() + TXN_RETRY_MS);
}

/* Complete* is persisted: off the completing list, partitions cleared, EndTxn answered. */
static void txn_finish(struct txn_coord *tc, struct txn *txn)
{
	struct txn **pp = &tc->completing;

	while (*pp != txn)
		pp = &(*pp)->cnext;
	*pp = txn->cnext;
	txn->cnext = NULL;
	txn_marks_free(txn);
	log_debug(LOGC_TXN, "txn", "'%s': %s %d partition(s)", txn->id,
		  txn->state == TXN_COMPLETE_COMMIT ? "committed" : "aborted", txn->ntps);
	txn_clear_tps(txn);
	txn->start_ms = -1;
	txn_notify(txn, KERR_NONE);
}

/*
 * Moves a completing transaction as far as it can go now: wait for the
 * round awaited, append the markers not yet appended, wait for their
 * round, persist Complete*.  Called when it enters Prepare*, after every
 * fsync round (txn_coord_on_synced) and on the retry timer.
 */
static void txn_advance(struct txn_coord *tc, struct txn *txn)
{
	bool commit = txn->state == TXN_PREPARE_COMMIT, failed = false, todo = false;

	assert(txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT);
	if (txn->retry || (txn->wait_ticket && !tc->ops.synced(tc->arg, txn->wait_first, txn->wait_ticket, &failed)))
		return;
	if (!txn->prepared && !txn_replicated(tc, txn))
		return; /* the markers wait for the Prepare* record on the in-sync replicas */
	txn->wait_first = txn->wait_ticket = 0;
	if (failed) {
		txn_log_retry(txn, "an fsync of the transaction's writes failed");
		txn_retry_later(tc, txn);
		/* not durable, and after a failed sync nothing is until a restart: the client retries EndTxn */
		txn_notify(txn, KERR_COORDINATOR_NOT_AVAILABLE);
		return;
	}
	txn->prepared = true;
	txn->replicating = false;
	for (int pass = 0; pass < 2; pass++) {
		for (int32_t i = 0; i < txn->ntps; i++) {
			if (txn->marks[i] == TXN_MARK_WRITTEN) /* its round is done */
				txn_mark_replicated(tc, txn, i, commit, &todo);
			else if (txn->marks[i] == TXN_MARK_TODO && pass == 0)
				todo |= !txn_write_marker(tc, txn, i, commit);
		}
		if (txn->wait_ticket)
			return; /* the second pass runs after the markers' round */
	}
	for (int32_t i = 0; i < txn->ntps; i++)
		if (txn->marks[i] == TXN_MARK_SENT)
			return; /* txn_coord_on_marker_sent moves it on */
	if (txn->replicating)
		return; /* txn_coord_on_synced again once high watermarks move */
	if (todo) {
		txn_retry_later(tc, txn);
		txn_notify(txn, KERR_NONE); /* decided and durable: the retries finish it */
		return;
	}
	if (txn_move(tc, txn, commit ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT)) {
		txn_retry_later(tc, txn);
		return;
	}
	txn_finish(tc, txn);
}

/* txn was just persisted in Prepare*: starts its completion (markers once that record is durable). */
static void txn_start_completion(struct txn_coord *tc, struct txn *txn)
{
	assert(!txn->marks);
	txn_marks_alloc(txn);
	txn->wait_first = txn->wait_ticket = 0;
	txn_wait_on(txn, txn->ticket);
	txn->prepared = false;
	txn->retry = false;
	txn->retry_log_ms = 0;
	txn->cnext = tc->completing;
	tc->completing = txn;
	if (!txn->marks) {
		log_error("'%s': out of memory starting the completion; retrying", txn->id);
		txn_retry_later(tc, txn);
		return;
	}
	txn_advance(tc, txn);
}

void txn_coord_on_marker_sent(struct txn_coord *tc, struct kstr id, int64_t producer_id, const char *topic,
			      int32_t partition, int16_t err)
{
	struct txn *txn = txn_find(tc, id);
	int32_t i = 0;

	if (!txn || !txn->marks || txn->producer_id != producer_id)
		return; /* unloaded, or finished meanwhile */
	while (i < txn->ntps && !(txn->marks[i] == TXN_MARK_SENT && txn->tps[i].partition == partition &&
				  !strcmp(txn->tps[i].topic, topic)))
		i++;
	if (i == txn->ntps)
		return;
	if (err == KERR_INVALID_PRODUCER_EPOCH || err == KERR_TRANSACTION_COORDINATOR_FENCED) {
		log_error("'%s': the marker for '%s-%d' was refused by its leader (%s); not retried", txn->id, topic,
			  partition, kerr_name(err));
		err = KERR_NONE;
	}
	if (err) {
		txn->marks[i] = TXN_MARK_TODO;
		txn_log_retry(txn, "the marker for '%s-%d' was not written by its leader: %s", topic, partition,
			      kerr_name(err));
		txn_retry_later(tc, txn);
		return;
	}
	txn->marks[i] = TXN_MARK_DONE; /* its leader answered once it was written */
	txn_advance(tc, txn);
}

void txn_coord_on_synced(struct txn_coord *tc)
{
	struct txn *txn = tc->completing, *next;

	for (; txn; txn = next) {
		next = txn->cnext; /* txn_advance may take txn off the list */
		if (txn->marks && (txn->wait_ticket || txn->replicating || (!txn->prepared && !txn->retry)))
			txn_advance(tc, txn);
	}
}

static void txn_coord_on_retry(struct loop_timer *t)
{
	txn_coord_retry((struct txn_coord *)((char *)t - offsetof(struct txn_coord, retry_timer)));
}

void txn_coord_retry(struct txn_coord *tc)
{
	struct txn *txn = tc->completing, *next;

	for (; txn; txn = next) {
		next = txn->cnext;
		if (!txn->retry)
			continue;
		txn->retry = false;
		if (!txn->marks && !txn_marks_alloc(txn)) {
			txn_retry_later(tc, txn);
			continue;
		}
		txn_resync(tc, txn);
		txn_advance(tc, txn);
	}
}

/* Ongoing -> PrepareEpochFence (epoch + 1) -> PrepareAbort, then completion: the old producer is fenced. */
static int16_t txn_fence(struct txn_coord *tc, struct txn *txn, const char *why)
{
	int16_t err;

	log_info("'%s': aborting the open transaction of producer %lld epoch %d (%s)", txn->id,
		 (long long)txn->producer_id, txn->epoch, why);
	txn_set_state(txn, TXN_PREPARE_EPOCH_FENCE);
	txn->fenced_epoch = txn->epoch++;
	err = txn_move(tc, txn, TXN_PREPARE_ABORT);
	if (err) {
		txn->epoch--;
		txn->state = TXN_ONGOING;
		return err;
	}
	txn_start_completion(tc, txn);
	return KERR_NONE;
}

static bool txn_completing(const struct txn *txn)
{
	return txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT;
}

/* ---- API ---- */

bool txn_coord_take_need(struct txn_coord *tc, struct kstr id, int32_t *partition, int64_t *end)
{
	bool mine = tc->owned && tc->need_part >= 0 && id.p &&
		    tc->need_part == txn_store_partition_of(tc->topic.nparts, id);

	if (mine) {
		*partition = tc->need_part;
		*end = tc->need_end;
	}
	tc->need_part = -1;
	return mine;
}

uint64_t txn_coord_take_ticket(struct txn_coord *tc)
{
	uint64_t tk = tc->ticket;

	tc->ticket = 0;
	return tk;
}

static int16_t txn_check_epoch(const struct txn *txn, int64_t producer_id, int16_t producer_epoch)
{
	if (txn->producer_id != producer_id)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (txn->epoch != producer_epoch)
		return KERR_PRODUCER_FENCED;
	return KERR_NONE;
}

int16_t txn_init_producer(struct txn_coord *tc, struct kstr id, int32_t timeout_ms, int64_t producer_id,
			  int16_t producer_epoch, int64_t *pid, int16_t *epoch)
{
	struct txn *txn;
	int16_t err;

	if (!txn_coord_attached(tc))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if ((err = txn_coord_owner_kerr(tc, id)))
		return err;
	if (timeout_ms <= 0 || timeout_ms > tc->cfg.max_timeout_ms)
		return KERR_INVALID_TRANSACTION_TIMEOUT;
	txn = txn_find(tc, id);
	if (txn && producer_id >= 0 &&
	    (producer_id != txn->producer_id || (producer_epoch != txn->epoch && producer_epoch != txn->fenced_epoch)))
		return KERR_PRODUCER_FENCED; /* KIP-360: only the current producer may bump itself */
	if (!txn && !(txn = txn_create(tc, id)))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (txn->state == TXN_ONGOING && (err = txn_fence(tc, txn, "a new producer initialised")))
		return err;
	if (txn_completing(txn))
		return KERR_CONCURRENT_TRANSACTIONS; /* the client retries once the markers are durable */
	if (txn->producer_id < 0 || txn->epoch >= TXN_EPOCH_MAX) {
		if (tc->ops.new_producer_id(tc->arg, &txn->producer_id))
			return KERR_COORDINATOR_NOT_AVAILABLE;
		txn->epoch = 0;
	} else {
		txn->epoch++;
	}
	txn->fenced_epoch = -1;
	txn->timeout_ms = timeout_ms;
	txn->start_ms = -1;
	err = txn_move(tc, txn, TXN_EMPTY);
	*pid = txn->producer_id;
	*epoch = txn->epoch;
	return err;
}

/* The preamble of every call from a transactional producer: coordinator loaded, id known, epoch current.
 * OUT: *txn_out, set only when KERR_NONE is returned. */
static int16_t txn_lookup(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			  struct txn **txn_out)
{
	struct txn *txn;
	int16_t err;

	if (!txn_coord_attached(tc))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if ((err = txn_coord_owner_kerr(tc, id)))
		return err;
	txn = txn_find(tc, id);
	if (!txn)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	err = txn_check_epoch(txn, producer_id, producer_epoch);
	if (!err)
		*txn_out = txn;
	return err;
}

int16_t txn_verify(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch, bool need_ongoing)
{
	struct txn *txn;
	int16_t err = txn_lookup(tc, id, producer_id, producer_epoch, &txn);

	if (err)
		return err;
	if (txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT)
		return KERR_CONCURRENT_TRANSACTIONS;
	if (need_ongoing && txn->state != TXN_ONGOING)
		return KERR_INVALID_TXN_STATE;
	return KERR_NONE;
}

int16_t txn_add_partitions(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			   const struct txn_tp *tps, int32_t n)
{
	struct txn *txn;
	int16_t err = txn_verify(tc, id, producer_id, producer_epoch, false);
	int32_t before;
	bool added = false;

	if (err)
		return err;
	txn = txn_find(tc, id);
	before = txn->ntps;
	for (int32_t i = 0; i < n; i++) {
		if (txn_has_tp(txn, tps[i].topic, tps[i].partition))
			continue;
		if (txn_add_tp(txn, tps[i].topic, tps[i].partition))
			goto out_undo;
		added = true;
	}
	if (!added && txn->state == TXN_ONGOING)
		return KERR_NONE;
	if (txn->state != TXN_ONGOING)
		txn->start_ms = clock_wall_ms();
	err = txn_move(tc, txn, TXN_ONGOING);
	if (!err)
		return KERR_NONE;
out_undo:
	while (txn->ntps > before) {
		txn->ntps--;
		free(txn->tps[txn->ntps].topic);
		txn->tps[txn->ntps].topic = NULL;
	}
	return err ? err : KERR_COORDINATOR_NOT_AVAILABLE;
}

int16_t txn_end(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch, bool commit,
		txn_done_fn *done, void *arg, bool *pending)
{
	struct txn *txn;
	int16_t err = txn_lookup(tc, id, producer_id, producer_epoch, &txn);

	*pending = false;
	if (err)
		return err;
	switch (txn->state) {
	case TXN_ONGOING:
		break;
	case TXN_COMPLETE_COMMIT: /* a retry of the EndTxn that did it */
		return commit ? KERR_NONE : KERR_INVALID_TXN_STATE;
	case TXN_COMPLETE_ABORT:
		return commit ? KERR_INVALID_TXN_STATE : KERR_NONE;
	case TXN_PREPARE_COMMIT:
	case TXN_PREPARE_ABORT:
		return KERR_CONCURRENT_TRANSACTIONS;
	default:
		return KERR_INVALID_TXN_STATE;
	}
	err = txn_move(tc, txn, commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT);
	if (err)
		return err;
	txn->done = NULL;
	txn_start_completion(tc, txn);
	if (txn_completing(txn) && !(txn->prepared && txn->retry)) {
		txn->done = done; /* never called from within this call */
		txn->done_arg = arg;
		*pending = true;
	}
	return KERR_NONE; /* complete, or decided with a marker left for the retries */
}

int16_t txn_verify_partition(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch,
			     struct kstr topic, int32_t partition)
{
	struct txn *txn;
	int16_t err;

	if (!txn_coord_attached(tc))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if ((err = txn_coord_owner_kerr(tc, id)))
		return err;
	if (!(txn = txn_find(tc, id)) || txn->producer_id != producer_id)
		return KERR_INVALID_PRODUCER_ID_MAPPING;
	if (txn->epoch != producer_epoch)
		return KERR_PRODUCER_FENCED;
	if (txn_completing(txn))
		return KERR_CONCURRENT_TRANSACTIONS;
	for (int32_t i = 0; i < txn->ntps && txn->state == TXN_ONGOING; i++)
		if (txn->tps[i].partition == partition && kstr_eq_c(topic, txn->tps[i].topic))
			return KERR_NONE;
	return KERR_INVALID_TXN_STATE;
}

static void txn_info_of(const struct txn *txn, struct txn_info *out)
{
	*out = (struct txn_info){ txn_id(txn),     txn->state,    txn->producer_id, txn->epoch,
				  txn->timeout_ms, txn->start_ms, txn->tps,         txn->ntps };
}

bool txn_describe(struct txn_coord *tc, struct kstr id, struct txn_info *out)
{
	struct txn *txn = txn_find(tc, id);

	if (txn)
		txn_info_of(txn, out);
	return txn != NULL;
}

void txn_coord_each(struct txn_coord *tc, void (*fn)(void *arg, const struct txn_info *ti), void *arg)
{
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b]; txn; txn = txn->hnext) {
			struct txn_info ti;

			txn_info_of(txn, &ti);
			fn(arg, &ti);
		}
}

void txn_coord_abort_timed_out(struct txn_coord *tc, int64_t now_wall_ms)
{
	if (!txn_coord_attached(tc))
		return;
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b]; txn; txn = txn->hnext)
			if (txn->state == TXN_ONGOING && txn->start_ms >= 0 &&
			    now_wall_ms - txn->start_ms > txn->timeout_ms)
				txn_fence(tc, txn, "transaction.timeout.ms passed");
}

static void txn_coord_on_timer(struct loop_timer *t)
{
	struct txn_coord *tc = (struct txn_coord *)((char *)t - offsetof(struct txn_coord, timer));

	txn_coord_abort_timed_out(tc, clock_wall_ms());
	loop_timer_set(tc->loop, &tc->timer, clock_mono_ms() + tc->cfg.abort_interval_ms);
}

/* Unlinks txn from its hash chain and frees it. */
static void txn_remove(struct txn_coord *tc, struct txn *txn)
{
	struct txn **pp = &tc->buckets[txn_hash(txn_id(txn))];

	assert(!txn->marks && !txn->cnext && tc->completing != txn);
	while (*pp != txn)
		pp = &(*pp)->hnext;
	*pp = txn->hnext;
	txn_free(txn);
}

/* Empty/Complete* -> Dead: a tombstone for the id, then it is forgotten.  0 or -errno. */
static int txn_expire(struct txn_coord *tc, struct txn *txn)
{
	struct part *part;
	uint64_t tk;
	int err = txn_store_write(&tc->topic, txn_id(txn), NULL, clock_wall_ms(), &part);

	if (err) {
		log_error("%s: cannot write the tombstone of '%s': %s", TXN_STORE_TOPIC, txn->id, strerror(-err));
		return err;
	}
	tk = tc->ops.written(tc->arg, part);
	tc->ticket = tk > tc->ticket ? tk : tc->ticket;
	txn_set_state(txn, TXN_DEAD);
	log_info("'%s': transactional id expired (idle since %lld, transactional.id.expiration.ms %lld)", txn->id,
		 (long long)txn->update_ms, (long long)tc->cfg.id_expiration_ms);
	txn_remove(tc, txn);
	return 0;
}

int txn_coord_expire_ids(struct txn_coord *tc, int64_t now_wall_ms)
{
	int n = 0;

	if (!txn_coord_attached(tc))
		return 0;
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b], *next; txn; txn = next) {
			next = txn->hnext;
			if ((txn->state == TXN_EMPTY || txn->state == TXN_COMPLETE_COMMIT ||
			     txn->state == TXN_COMPLETE_ABORT) &&
			    now_wall_ms - txn->update_ms > tc->cfg.id_expiration_ms && !txn_expire(tc, txn))
				n++;
		}
	return n;
}

static void txn_coord_on_expire_timer(struct loop_timer *t)
{
	struct txn_coord *tc = (struct txn_coord *)((char *)t - offsetof(struct txn_coord, expire_timer));

	txn_coord_expire_ids(tc, clock_wall_ms());
	loop_timer_set(tc->loop, &tc->expire_timer, clock_mono_ms() + tc->cfg.expire_interval_ms);
}

/* ---- life cycle ---- */

static void txn_coord_on_loader(struct loop_timer *t);

int txn_coord_new(struct loop *loop, const struct txn_coord_cfg *cfg, const struct txn_coord_ops *ops, void *arg,
		  struct txn_coord **out)
{
	struct txn_coord *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return -ENOMEM;
	tc->loop = loop;
	tc->cfg = *cfg;
	tc->ops = *ops;
	tc->arg = arg;
	tc->need_part = -1;
	loop_timer_init(&tc->timer, txn_coord_on_timer);
	loop_timer_set(loop, &tc->timer, clock_mono_ms() + cfg->abort_interval_ms);
	loop_timer_init(&tc->retry_timer, txn_coord_on_retry);
	loop_timer_init(&tc->expire_timer, txn_coord_on_expire_timer);
	loop_timer_init(&tc->loader, txn_coord_on_loader);
	loop_timer_set(loop, &tc->expire_timer, clock_mono_ms() + cfg->expire_interval_ms);
	*out = tc;
	return 0;
}

void txn_coord_free(struct txn_coord *tc)
{
	if (!tc)
		return;
	loop_timer_cancel(tc->loop, &tc->timer);
	loop_timer_cancel(tc->loop, &tc->retry_timer);
	loop_timer_cancel(tc->loop, &tc->expire_timer);
	loop_timer_cancel(tc->loop, &tc->loader);
	for (struct txn *txn = tc->completing; txn; txn = txn->cnext)
		txn_notify(txn, KERR_COORDINATOR_NOT_AVAILABLE); /* finished at the next start */
	for (int b = 0; b < TXN_BUCKETS; b++)
		while (tc->buckets[b]) {
			struct txn *txn = tc->buckets[b];

			tc->buckets[b] = txn->hnext;
			txn_free(txn);
		}
	free(tc->epoch_bumped);
	free(tc->owned);
	free(tc);
}

bool txn_coord_attached(const struct txn_coord *tc)
{
	return tc->topic.nparts > 0;
}

/* Replay: the latest record of each id wins. */
static void txn_on_record(void *arg, struct kstr id, const struct txn_store_value *v)
{
	struct txn_coord *tc = arg;
	struct txn *txn = txn_find(tc, id);

	if (!v || v->status == TXN_DEAD) {
		if (txn)
			txn_remove(tc, txn);
		return;
	}
	if (!txn && !(txn = txn_create(tc, id)))
		return;
	txn_clear_tps(txn);
	txn->producer_id = v->producer_id;
	txn->epoch = v->producer_epoch;
	txn->timeout_ms = v->timeout_ms;
	txn->state = v->status < TXN_STATE_COUNT && v->status >= 0 ? (enum txn_state)v->status : TXN_EMPTY;
	if (txn->state == TXN_PREPARE_EPOCH_FENCE)
		txn->state = TXN_ONGOING; /* never written by us; treat as still open */
	txn->update_ms = v->update_ms;
	txn->start_ms = v->start_ms;
	for (int32_t i = 0; i < v->ntps; i++)
		if (txn_add_tp(txn, v->tps[i].topic, v->tps[i].partition))
			log_error("%s: out of memory loading '%s'", TXN_STORE_TOPIC, txn->id);
}

/* Starts the completion of every transaction of partition (-1: all) left in Prepare*; returns how many. */
static int txn_finish_prepared(struct txn_coord *tc, int32_t partition)
{
	const struct coord_topic *ct = &tc->topic;
	int finished = 0;
	struct part *part;

	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b]; txn; txn = txn->hnext) {
			int32_t p = txn_store_partition_of(ct->nparts, txn_id(txn));

			if (!txn_completing(txn) || txn->marks || (partition >= 0 && p != partition))
				continue;
			log_info("'%s': finishing the %s found in %s-%d", txn->id, txn_state_name(txn->state),
				 TXN_STORE_TOPIC, p);
			/* the record may be in the page cache only (a crash): markers once it is durable */
			part = ct->part(ct->arg, p);
			txn->ticket = part ? tc->ops.written(tc->arg, part) : 0;
			txn->state_end = part ? part_log_end_offset(part) : 0;
			txn_start_completion(tc, txn);
			finished++;
		}
	return finished;
}

int txn_coord_attach(struct txn_coord *tc, const struct coord_topic *ct)
{
	int err = txn_store_load(ct, txn_on_record, tc);
	int n = 0, finished;

	if (err)
		return err;
	tc->epoch_bumped = calloc((size_t)ct->nparts, sizeof(*tc->epoch_bumped));
	if (!tc->epoch_bumped)
		return -ENOMEM;
	tc->topic = *ct;
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b]; txn; txn = txn->hnext)
			n++;
	finished = txn_finish_prepared(tc, -1);
	log_info("%s: loaded %d transactional id(s), completing %d transaction(s)", TXN_STORE_TOPIC, n, finished);
	return 0;
}

/* ---- cluster mode: the partitions led here ---- */

/* Forgets the ids of partition; an EndTxn waiting on one is answered NOT_COORDINATOR.  Returns how many. */
static size_t txn_unload(struct txn_coord *tc, int32_t partition)
{
	size_t n = 0;

	for (struct txn **pp = &tc->completing; *pp;) {
		struct txn *txn = *pp;

		if (txn_store_partition_of(tc->topic.nparts, txn_id(txn)) != partition) {
			pp = &txn->cnext;
			continue;
		}
		*pp = txn->cnext;
		txn->cnext = NULL;
		txn_marks_free(txn);
		txn_notify(txn, KERR_NOT_COORDINATOR);
	}
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b], *next; txn; txn = next) {
			next = txn->hnext;
			if (txn_store_partition_of(tc->topic.nparts, txn_id(txn)) != partition)
				continue;
			txn_remove(tc, txn);
			n++;
		}
	tc->epoch_bumped[partition] = false;
	return n;
}

/* tc->loader: loads the partitions this broker came to lead, then finishes what they left in Prepare*. */
static void txn_coord_on_loader(struct loop_timer *t)
{
	struct txn_coord *tc = (struct txn_coord *)((char *)t - offsetof(struct txn_coord, loader));

	for (int32_t p = 0; tc->owned && p < tc->topic.nparts; p++) {
		int64_t t0 = clock_mono_ms();
		int err, finished;

		if (tc->owned[p] != TXN_PART_LOADING)
			continue;
		err = txn_store_load_partition(&tc->topic, p, txn_on_record, tc);
		if (err) {
			txn_unload(tc, p); /* what was read so far; the next LeaderAndIsr tries again */
			tc->owned[p] = TXN_PART_NOT_OWNED;
			continue;
		}
		tc->owned[p] = TXN_PART_LOADED;
		finished = txn_finish_prepared(tc, p);
		log_info("transaction coordinator: %s-%d loaded in %lld ms, completing %d transaction(s)",
			 TXN_STORE_TOPIC, p, (long long)(clock_mono_ms() - t0), finished);
	}
	txn_coord_abort_timed_out(tc, clock_wall_ms());
}

int txn_coord_attach_unowned(struct txn_coord *tc, const struct coord_topic *ct)
{
	uint8_t *owned = calloc((size_t)ct->nparts, 1);
	bool *bumped = calloc((size_t)ct->nparts, sizeof(*bumped));

	if (!owned || !bumped) {
		free(owned);
		free(bumped);
		return -ENOMEM;
	}
	free(tc->owned);
	free(tc->epoch_bumped);
	tc->owned = owned;
	tc->epoch_bumped = bumped;
	tc->topic = *ct;
	return 0;
}

void txn_coord_set_leader(struct txn_coord *tc, int32_t partition, bool leader)
{
	size_t n;

	if (!tc->owned || partition < 0 || partition >= tc->topic.nparts)
		return;
	if (leader && tc->owned[partition] == TXN_PART_NOT_OWNED) {
		tc->owned[partition] = TXN_PART_LOADING;
		loop_timer_set(tc->loop, &tc->loader, clock_mono_ms());
	} else if (!leader && tc->owned[partition] != TXN_PART_NOT_OWNED) {
		tc->owned[partition] = TXN_PART_NOT_OWNED;
		n = txn_unload(tc, partition);
		log_info("transaction coordinator: %s-%d no longer led here, %zu transactional id(s) unloaded",
			 TXN_STORE_TOPIC, partition, n);
	}
}

int16_t txn_coord_owner_kerr(const struct txn_coord *tc, struct kstr id)
{
	if (!tc->owned || !id.p)
		return KERR_NONE;
	switch (tc->owned[txn_store_partition_of(tc->topic.nparts, id)]) {
	case TXN_PART_LOADED:
		return KERR_NONE;
	case TXN_PART_LOADING:
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default:
		return KERR_NOT_COORDINATOR;
	}
}
