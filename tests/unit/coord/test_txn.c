/*
 * test_txn.c - the transaction coordinator's completion order: markers
 * only once the Prepare* record's fsync round is done, Complete* only once
 * the markers' round is done, a failed round or an offline partition
 * retried, EndTxn answered when complete; start-up completing a Prepare*;
 * transactional.id.expiration.ms; KIP-890 verification answers.  Real
 * partitions in a temp dir; the fsync rounds are the test's: a round that
 * succeeds part_syncs the partitions written since the last one, as the
 * syncer does, so their high watermarks (which follow the sync) move; a
 * restart closes and reopens the partitions, as the broker does.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tmpdir.h"

#include "coord/txn.h"
#include "coord/txn_store.h"
#include "log/partition.h"
#include "log/pstate.h"
#include "proto/kerr.h"
#include "util/clock.h"

#define ID KSTR("t1")

struct fx {
	char root[64];
	struct loop *loop;
	struct part *store; /* __transaction_state-0 */
	struct part *data;  /* the transaction's partition "data-0" */
	struct part *data1; /* "data-1" */
	bool data_offline;
	int replicated;         /* what op_replicated answers: 1 (a single node), 0 waiting, -errno failed */
	int64_t replicated_end; /* the end it was last asked about */
	struct part *dirty[3];  /* written since the last successful round */
	int ndirty;
	uint64_t next_ticket; /* last ticket handed out */
	uint64_t done;        /* rounds done up to this */
	uint64_t failed;      /* a round up to this failed */
	int done_calls;
	int16_t done_err;
	struct txn_coord *tc;
};

static struct part *fx_open(struct fx *fx, const char *name)
{
	char dir[160];
	struct part_cfg cfg;
	struct part *part;

	snprintf(dir, sizeof(dir), "%s/%s", fx->root, name);
	part_cfg_default(&cfg);
	cfg.retention_ms = -1;
	assert_int_equal(part_open(dir, &cfg, -1, 0, &part), 0);
	return part;
}

static int op_part(void *arg, const char *topic, int32_t partition, struct part **out)
{
	struct fx *fx = arg;

	if (strcmp(topic, "data") || partition < 0 || partition > 1)
		return -ENOENT;
	*out = partition ? fx->data1 : fx->data;
	return fx->data_offline && !partition ? -EIO : 0;
}

static int op_new_pid(void *arg, int64_t *id)
{
	(void)arg;
	*id = 1000;
	return 0;
}

static void op_offsets(void *arg, int32_t partition, int64_t producer_id, bool commit)
{
	(void)arg;
	(void)partition;
	(void)producer_id;
	(void)commit;
}

static int op_replicated(void *arg, const char *topic, int32_t partition, int64_t end)
{
	struct fx *fx = arg;

	(void)topic;
	(void)partition;
	fx->replicated_end = end;
	return fx->replicated;
}

static uint64_t op_written(void *arg, struct part *part)
{
	struct fx *fx = arg;
	int i = 0;

	while (i < fx->ndirty && fx->dirty[i] != part)
		i++;
	if (i == fx->ndirty) {
		assert_true(fx->ndirty < (int)(sizeof(fx->dirty) / sizeof(fx->dirty[0])));
		fx->dirty[fx->ndirty++] = part;
	}
	return ++fx->next_ticket;
}

static bool op_synced(void *arg, uint64_t first, uint64_t last, bool *failed)
{
	struct fx *fx = arg;

	if (fx->done < last)
		return false;
	*failed = fx->failed >= first;
	return true;
}

static void on_done(void *arg, int16_t err)
{
	struct fx *fx = arg;

	fx->done_calls++;
	fx->done_err = err;
}

/* coord_topic.part of the fixture's one-partition __transaction_state */
static struct part *fx_store_part(void *arg, int32_t partition)
{
	struct fx *fx = arg;

	return partition == 0 ? fx->store : NULL;
}

static void fx_coord(struct fx *fx)
{
	static const struct txn_coord_ops ops = { op_part,   op_new_pid,    op_offsets, op_written,
						  op_synced, op_replicated, NULL };
	struct txn_coord_cfg cfg = { 900000, 10000, 604800000, 3600000 };

	assert_int_equal(txn_coord_new(fx->loop, &cfg, &ops, fx, &fx->tc), 0);
	assert_int_equal(txn_coord_attach(fx->tc, &(struct coord_topic){ fx_store_part, fx, 1 }), 0);
}

static void fx_open_all(struct fx *fx)
{
	fx->store = fx_open(fx, "__transaction_state-0");
	fx->data = fx_open(fx, "data-0");
	fx->data1 = fx_open(fx, "data-1");
	fx->ndirty = 0;
}

static void fx_close_all(struct fx *fx)
{
	part_close(fx->data);
	part_close(fx->data1);
	part_close(fx->store);
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	tmpdir_make(fx->root, sizeof(fx->root), "txn");
	fx->replicated = 1;
	assert_int_equal(loop_new(&fx->loop), 0);
	fx_open_all(fx);
	fx_coord(fx);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	txn_coord_free(fx->tc);
	fx_close_all(fx);
	loop_free(fx->loop);
	tmpdir_remove(fx->root);
	free(fx);
	return 0;
}

/* Everything handed out so far is synced (ok: part_sync moves the high watermarks) or failed. */
static void fx_sync(struct fx *fx, bool ok)
{
	for (int i = 0; ok && i < fx->ndirty; i++)
		assert_int_equal(part_sync(fx->dirty[i]), 0);
	if (ok)
		fx->ndirty = 0;
	fx->done = fx->next_ticket;
	if (!ok)
		fx->failed = fx->next_ticket;
	txn_coord_on_synced(fx->tc);
}

/* The rest of a restart once the coordinator is freed: the partitions are closed and reopened, it reloads. */
static void fx_restart(struct fx *fx)
{
	fx_close_all(fx);
	fx_open_all(fx);
	fx_coord(fx);
}

static enum txn_state fx_state(struct fx *fx)
{
	struct txn_info ti;

	assert_true(txn_describe(fx->tc, ID, &ti));
	return ti.state;
}

/* InitProducerId, AddPartitionsToTxn data-0, EndTxn(commit): returns whether EndTxn is pending. */
static bool fx_commit(struct fx *fx, int64_t *pid, int16_t *epoch)
{
	struct txn_tp tp = { "data", 0 };
	bool pending;

	assert_int_equal(txn_init_producer(fx->tc, ID, 60000, -1, -1, pid, epoch), KERR_NONE);
	assert_int_equal(txn_add_partitions(fx->tc, ID, *pid, *epoch, &tp, 1), KERR_NONE);
	assert_int_equal(txn_verify_partition(fx->tc, ID, *pid, *epoch, KSTR("data"), 0), KERR_NONE);
	assert_int_equal(txn_end(fx->tc, ID, *pid, *epoch, true, on_done, fx, &pending), KERR_NONE);
	return pending;
}

static void test_order(void **state)
{
	struct fx *fx = *state;
	int64_t pid;
	int16_t epoch;

	fx_sync(fx, true);
	assert_true(fx_commit(fx, &pid, &epoch));
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	assert_int_equal(part_log_end_offset(fx->data), 0); /* no marker before Prepare* is durable */
	fx_sync(fx, true);
	assert_int_equal(part_log_end_offset(fx->data), 1); /* the marker */
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT); /* not complete before it is durable */
	assert_int_equal(fx->done_calls, 0);
	assert_int_equal(txn_verify_partition(fx->tc, ID, pid, epoch, KSTR("data"), 0), KERR_CONCURRENT_TRANSACTIONS);
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
	assert_int_equal(fx->done_calls, 1);
	assert_int_equal(fx->done_err, KERR_NONE);
	assert_int_equal(pstate_find(part_pstate(fx->data), pid)->coordinator_epoch, part_leader_epoch(fx->store));
	assert_int_equal(txn_verify_partition(fx->tc, ID, pid, epoch, KSTR("data"), 0), KERR_INVALID_TXN_STATE);
	assert_int_equal(txn_verify_partition(fx->tc, ID, pid + 1, epoch, KSTR("data"), 0),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
	assert_int_equal(txn_verify_partition(fx->tc, KSTR("nobody"), pid, epoch, KSTR("data"), 0),
			 KERR_INVALID_PRODUCER_ID_MAPPING);
}

/*
 * Cluster mode: a marker written here counts only once its partition's
 * high watermark passes it; a wait that cannot succeed (leadership moved)
 * writes it again.
 */
static void test_marker_replicated(void **state)
{
	struct fx *fx = *state;
	int64_t pid;
	int16_t epoch;

	fx_sync(fx, true);
	fx->replicated = 0;
	assert_true(fx_commit(fx, &pid, &epoch));
	fx_sync(fx, true);
	assert_int_equal(part_log_end_offset(fx->data), 1); /* the marker */
	fx_sync(fx, true);
	assert_int_equal(fx->replicated_end, 1);
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT); /* durable here, not on the in-sync replicas */
	assert_int_equal(fx->done_calls, 0);
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	fx->replicated = -ENOTCONN; /* no longer the leader: written again */
	txn_coord_on_synced(fx->tc);
	txn_coord_retry(fx->tc);
	assert_int_equal(part_log_end_offset(fx->data), 2);
	fx->replicated = 1;
	fx_sync(fx, true);
	assert_int_equal(fx->replicated_end, 2);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
	assert_int_equal(fx->done_calls, 1);
	assert_int_equal(fx->done_err, KERR_NONE);
}

static void test_failed_sync_retried(void **state)
{
	struct fx *fx = *state;
	int64_t pid;
	int16_t epoch;

	fx_sync(fx, true);
	assert_true(fx_commit(fx, &pid, &epoch));
	fx_sync(fx, true);
	assert_int_equal(part_log_end_offset(fx->data), 1);
	fx_sync(fx, false); /* the marker's round fails */
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	assert_int_equal(fx->done_calls, 1); /* not durable: EndTxn answered with a retriable error */
	assert_int_equal(fx->done_err, KERR_COORDINATOR_NOT_AVAILABLE);
	txn_coord_retry(fx->tc); /* the retry timer: asks for a new round */
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	assert_int_equal(part_log_end_offset(fx->data), 1); /* synced again, not written again */
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
	assert_int_equal(fx->done_calls, 1);
}

/* The markers of one step synced in two rounds, the first failing: not durable. */
static void test_earlier_round_failed(void **state)
{
	struct fx *fx = *state;
	struct txn_tp tps[2] = { { "data", 0 }, { "data", 1 } };
	uint64_t first;
	int64_t pid;
	int16_t epoch;
	bool pending;

	fx_sync(fx, true);
	assert_int_equal(txn_init_producer(fx->tc, ID, 60000, -1, -1, &pid, &epoch), KERR_NONE);
	assert_int_equal(txn_add_partitions(fx->tc, ID, pid, epoch, tps, 2), KERR_NONE);
	assert_int_equal(txn_end(fx->tc, ID, pid, epoch, true, on_done, fx, &pending), KERR_NONE);
	assert_true(pending);
	first = fx->next_ticket + 1;
	fx_sync(fx, true); /* Prepare* durable: both markers written, one ticket each */
	assert_int_equal(fx->next_ticket, first + 1);
	fx->failed = first; /* the first marker's round failed, the second's did not */
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	txn_coord_retry(fx->tc);
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
	assert_int_equal(part_log_end_offset(fx->data), 1);
	assert_int_equal(part_log_end_offset(fx->data1), 1);
}

static void test_offline_retried(void **state)
{
	struct fx *fx = *state;
	int64_t pid;
	int16_t epoch;

	fx_sync(fx, true);
	fx->data_offline = true;
	assert_true(fx_commit(fx, &pid, &epoch));
	fx_sync(fx, true);
	assert_int_equal(fx->done_calls, 1); /* decided and durable: EndTxn answered */
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	txn_coord_retry(fx->tc);
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	assert_int_equal(part_log_end_offset(fx->data), 0);
	fx->data_offline = false;
	txn_coord_retry(fx->tc);
	assert_int_equal(part_log_end_offset(fx->data), 1);
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
}

static void test_attach_completes(void **state)
{
	struct fx *fx = *state;
	int32_t epoch_before = part_leader_epoch(fx->store);
	int64_t pid;
	int16_t epoch;

	fx_sync(fx, true);
	assert_true(fx_commit(fx, &pid, &epoch)); /* stopped in PrepareCommit, no marker */
	txn_coord_free(fx->tc);
	assert_int_equal(fx->done_calls, 1);
	assert_int_equal(fx->done_err, KERR_COORDINATOR_NOT_AVAILABLE);
	assert_int_equal(part_log_end_offset(fx->data), 0);
	fx_restart(fx); /* reloads, a new coordinator epoch at its first marker */
	assert_int_equal(fx_state(fx), TXN_PREPARE_COMMIT);
	fx_sync(fx, true);
	assert_int_equal(part_log_end_offset(fx->data), 1);
	assert_int_equal(part_leader_epoch(fx->store), epoch_before + 1);
	fx_sync(fx, true);
	assert_int_equal(fx_state(fx), TXN_COMPLETE_COMMIT);
	assert_int_equal(pstate_find(part_pstate(fx->data), pid)->coordinator_epoch, epoch_before + 1);
}

static void test_expire(void **state)
{
	struct fx *fx = *state;
	int64_t pid, pid2;
	int16_t epoch, epoch2;
	struct txn_tp tp = { "data", 0 };
	struct txn_info ti;

	assert_int_equal(txn_init_producer(fx->tc, ID, 60000, -1, -1, &pid, &epoch), KERR_NONE);
	assert_int_equal(txn_init_producer(fx->tc, KSTR("open"), 60000, -1, -1, &pid2, &epoch2), KERR_NONE);
	assert_int_equal(txn_add_partitions(fx->tc, KSTR("open"), pid2, epoch2, &tp, 1), KERR_NONE);
	assert_int_equal(txn_coord_expire_ids(fx->tc, clock_wall_ms()), 0);
	assert_int_equal(txn_coord_expire_ids(fx->tc, clock_wall_ms() + 604800000 + 1), 1); /* not "open" */
	assert_false(txn_describe(fx->tc, ID, &ti));
	assert_true(txn_describe(fx->tc, KSTR("open"), &ti));
	txn_coord_free(fx->tc);
	fx_restart(fx); /* the tombstone is replayed */
	assert_false(txn_describe(fx->tc, ID, &ti));
	assert_true(txn_describe(fx->tc, KSTR("open"), &ti));
}

/* Three __transaction_state partitions; with legacy set, partition 0 is reached as 2 (where masking put "my-group"). */
struct fx3 {
	struct fx *fx;
	struct part *parts[3];
	bool legacy;
	int64_t last_pid; /* what the load left for "my-group" (-1 none) */
};

static struct part *fx3_part(void *arg, int32_t partition)
{
	struct fx3 *f = arg;

	if (partition < 0 || partition > 2)
		return NULL;
	return f->parts[f->legacy && partition == 0 ? 2 : partition];
}

static void fx3_on_record(void *arg, struct kstr id, const struct txn_store_value *v)
{
	struct fx3 *f = arg;

	if (kstr_eq(id, KSTR("my-group")))
		f->last_pid = v ? v->producer_id : -1;
}

/* Opens the partitions (high watermarks at their log ends), loads, writes pid (>= 0) for "my-group", closes. */
static int64_t fx3_write_reload(struct fx3 *f, int64_t pid)
{
	struct coord_topic ct = { fx3_part, f, 3 };
	struct txn_store_value v = { .producer_id = pid, .timeout_ms = 60000, .status = TXN_EMPTY };
	struct part *part;
	char name[16];

	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "ts-%d", i);
		f->parts[i] = fx_open(f->fx, name);
	}
	f->last_pid = -1;
	assert_int_equal(txn_store_load(&ct, fx3_on_record, f), 0);
	if (pid >= 0)
		assert_int_equal(txn_store_write(&ct, KSTR("my-group"), &v, 1, &part), 0);
	for (int i = 0; i < 3; i++)
		part_close(f->parts[i]);
	return f->last_pid;
}

/* A transactional id's newer record in its own partition wins over one an older partition function put elsewhere. */
static void test_legacy_placement(void **state)
{
	struct fx3 f = { .fx = *state, .legacy = true };

	assert_int_equal(fx3_write_reload(&f, 5), -1); /* written to partition 2 */
	f.legacy = false;
	assert_int_equal(fx3_write_reload(&f, 9), 5); /* read back from 2, written to 0 */
	assert_int_equal(fx3_write_reload(&f, -1), 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_marker_replicated, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_failed_sync_retried, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_earlier_round_failed, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_offline_retried, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_attach_completes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_expire, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_legacy_placement, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
