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
 *     |                      markers (txn_complete)     |
 *     |                                   v             v
 *     +---------------------- CompleteCommit(4)   CompleteAbort(5) --AddPartitions--> Ongoing
 *                                                                     (also from CompleteCommit)
 *   Dead(6): a removed id (not produced yet: transactional.id.expiration.ms is not enforced).
 *
 * Transitions and the function doing them:
 *   Empty/Complete* -> Empty           txn_init_producer   (epoch + 1, or a new id)
 *   Empty/Complete* -> Ongoing         txn_add_partitions / txn_add_offsets
 *   Ongoing -> PrepareCommit/Abort     txn_end
 *   Ongoing -> PrepareEpochFence       txn_fence (InitProducerId of a newer producer, timeout)
 *   PrepareEpochFence -> PrepareAbort  txn_fence
 *   Prepare* -> Complete*              txn_complete (markers written), also at attach
 * txn_set_state() checks each against this table and logs it (debug "txn").
 *
 * Durability: txn_persist() appends the record of the new state before the
 * coordinator acts on it (markers after Prepare*).  A Prepare* found at
 * start-up is completed then: writing a marker twice is harmless (the
 * second finds no open transaction of that producer).
 */
#include "coord/txn.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log/partition.h"
#include "proto/kerr.h"
#include "proto/records.h"
#include "util/clock.h"
#include "util/log.h"

#define TXN_BUCKETS 1024
#define TXN_EPOCH_MAX (INT16_MAX - 1) /* past this a new producer id is handed out */
#define TXN_OFFSETS_TOPIC "__consumer_offsets"

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
	struct txn *hnext;
};

struct txn_coord {
	struct loop *loop;
	struct txn_coord_cfg cfg;
	struct txn_coord_ops ops;
	void *arg;
	struct coord_topic topic; /* __transaction_state; nparts 0 until attached */
	struct txn *buckets[TXN_BUCKETS];
	uint64_t ticket; /* fsync ticket of writes since txn_coord_take_ticket */
	struct loop_timer timer;
};

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
	txn->start_ms = -1;
	txn->state = TXN_EMPTY;
	txn->hnext = tc->buckets[h];
	tc->buckets[h] = txn;
	return txn;
}

static void txn_free(struct txn *txn)
{
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
	return 0;
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

/* ---- markers ---- */

static void txn_write_markers(struct txn_coord *tc, struct txn *txn, bool commit)
{
	int64_t now = clock_wall_ms();
	bool offsets = false;

	for (int32_t i = 0; i < txn->ntps; i++) {
		struct part *part = tc->ops.part(tc->arg, txn->tps[i].topic, txn->tps[i].partition);
		struct part_append_info info;
		struct wr w;
		int err;

		offsets |= !strcmp(txn->tps[i].topic, TXN_OFFSETS_TOPIC);
		if (!part)
			continue; /* the topic was deleted meanwhile */
		wr_init(&w);
		err = records_build_control(&w, txn->producer_id, txn->epoch, commit, 0, now);
		if (!err)
			err = w.err ? w.err : part_append(part, w.buf, w.len, now, &info);
		wr_release(&w);
		if (err) {
			/* the transaction stays open in that partition until a retry of the marker */
			log_error("'%s': cannot write the %s marker to '%s-%d': %s", txn->id,
				  commit ? "COMMIT" : "ABORT", txn->tps[i].topic, txn->tps[i].partition,
				  strerror(-err));
			continue;
		}
		uint64_t tk = tc->ops.written(tc->arg, part);

		tc->ticket = tk > tc->ticket ? tk : tc->ticket;
	}
	if (offsets)
		tc->ops.offsets_complete(tc->arg, txn->producer_id, commit);
}

/* Prepare* -> markers -> Complete*. */
static int16_t txn_complete(struct txn_coord *tc, struct txn *txn)
{
	bool commit = txn->state == TXN_PREPARE_COMMIT;
	int16_t err;

	assert(txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT);
	txn_write_markers(tc, txn, commit);
	err = txn_move(tc, txn, commit ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT);
	if (err)
		return err;
	log_debug(LOGC_TXN, "txn", "'%s': %s %d partition(s)", txn->id, commit ? "committed" : "aborted", txn->ntps);
	txn_clear_tps(txn);
	txn->start_ms = -1;
	return KERR_NONE;
}

/* Ongoing -> PrepareEpochFence (epoch + 1) -> PrepareAbort -> CompleteAbort: the old producer is fenced. */
static int16_t txn_fence(struct txn_coord *tc, struct txn *txn, const char *why)
{
	int16_t err;

	log_info("'%s': aborting the open transaction of producer %lld epoch %d (%s)", txn->id,
		 (long long)txn->producer_id, txn->epoch, why);
	txn_set_state(txn, TXN_PREPARE_EPOCH_FENCE);
	txn->epoch++;
	err = txn_move(tc, txn, TXN_PREPARE_ABORT);
	if (err) {
		txn->epoch--;
		txn->state = TXN_ONGOING;
		return err;
	}
	return txn_complete(tc, txn);
}

/* ---- API ---- */

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
	if (timeout_ms <= 0 || timeout_ms > tc->cfg.max_timeout_ms)
		return KERR_INVALID_TRANSACTION_TIMEOUT;
	txn = txn_find(tc, id);
	if (txn && producer_id >= 0 && (producer_id != txn->producer_id || producer_epoch != txn->epoch))
		return KERR_PRODUCER_FENCED; /* KIP-360: only the current producer may bump itself */
	if (!txn && !(txn = txn_create(tc, id)))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT) {
		err = txn_complete(tc, txn); /* left by a failed write: finish it now */
		if (err)
			return err;
	}
	if (txn->state == TXN_ONGOING && (err = txn_fence(tc, txn, "a new producer initialised")))
		return err;
	if (txn->producer_id < 0 || txn->epoch >= TXN_EPOCH_MAX) {
		if (tc->ops.new_producer_id(tc->arg, &txn->producer_id))
			return KERR_COORDINATOR_NOT_AVAILABLE;
		txn->epoch = 0;
	} else {
		txn->epoch++;
	}
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

int16_t txn_end(struct txn_coord *tc, struct kstr id, int64_t producer_id, int16_t producer_epoch, bool commit)
{
	struct txn *txn;
	int16_t err = txn_lookup(tc, id, producer_id, producer_epoch, &txn);

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
	return err ? err : txn_complete(tc, txn);
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

/* ---- life cycle ---- */

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
	loop_timer_init(&tc->timer, txn_coord_on_timer);
	loop_timer_set(loop, &tc->timer, clock_mono_ms() + cfg->abort_interval_ms);
	*out = tc;
	return 0;
}

void txn_coord_free(struct txn_coord *tc)
{
	if (!tc)
		return;
	loop_timer_cancel(tc->loop, &tc->timer);
	for (int b = 0; b < TXN_BUCKETS; b++)
		while (tc->buckets[b]) {
			struct txn *txn = tc->buckets[b];

			tc->buckets[b] = txn->hnext;
			txn_free(txn);
		}
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
		if (txn) {
			struct txn **pp = &tc->buckets[txn_hash(id)];

			while (*pp != txn)
				pp = &(*pp)->hnext;
			*pp = txn->hnext;
			txn_free(txn);
		}
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

int txn_coord_attach(struct txn_coord *tc, const struct coord_topic *ct)
{
	int err = txn_store_load(ct, txn_on_record, tc);
	int n = 0, finished = 0;

	if (err)
		return err;
	tc->topic = *ct;
	for (int b = 0; b < TXN_BUCKETS; b++)
		for (struct txn *txn = tc->buckets[b]; txn; txn = txn->hnext) {
			n++;
			if (txn->state == TXN_PREPARE_COMMIT || txn->state == TXN_PREPARE_ABORT) {
				log_info("'%s': finishing the %s left at the last stop", txn->id,
					 txn_state_name(txn->state));
				txn_complete(tc, txn);
				finished++;
			}
		}
	log_info("%s: loaded %d transactional id(s), finished %d transaction(s)", TXN_STORE_TOPIC, n, finished);
	return 0;
}
