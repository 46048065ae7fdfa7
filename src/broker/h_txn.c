/*
 * h_txn.c - the transaction APIs: InitProducerId with a transactional id,
 * AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
 * DescribeTransactions, ListTransactions.
 *
 * The handlers translate between the wire structs and the coordinator
 * (coord/txn.h).  On a single node this broker is the coordinator of every
 * transactional id: the internal topic __transaction_state is created on
 * the first transactional request (transaction.state.log.num.partitions
 * partitions, compacted in spirit, no time retention) and replayed at
 * start-up, which also finishes any transaction that was between
 * PrepareCommit/Abort and CompleteCommit/Abort when the broker stopped.
 *
 * In cluster mode the topic is written to ZooKeeper by the first
 * FindCoordinator of a transactional id (h_coord.c) and an id's
 * coordinator is the leader of its partition: the broker loads a
 * partition's ids when it becomes its leader and forgets them when it
 * stops (txns_on_role); the others answer NOT_COORDINATOR.  TxnOffsetCommit
 * trusts the producer (its transaction coordinator may be elsewhere).
 *
 * Every reply that follows a write to __transaction_state, a marker or a
 * transactional offset commit is sent, under the durable flush policy
 * (broker/park.h), only once the fsync round covering those writes is done,
 * and in cluster mode only once the high watermark of the partition
 * written covers them (replica.h), as Kafka's acks=-1 appends.
 *
 * AddPartitionsToTxn v4 (KIP-890, broker to coordinator) batches
 * transactions and can only verify (VerifyOnly): partition leaders ask it
 * before appending a transactional batch (broker/txn_verify.h, which asks
 * this broker's coordinator directly, with the same verdicts).
 *
 * Version gating (PROTOCOL-NOTES §5.25a): PRODUCER_FENCED exists from
 * InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2 and
 * TxnOffsetCommit v3; older versions get INVALID_PRODUCER_EPOCH.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/creator.h"
#include "broker/fetch_park.h"
#include "broker/handlers.h"
#include "broker/park.h"
#include "broker/producer_ids.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/syncer.h"
#include "broker/txn_send.h"
#include "cluster/mcache.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "coord/txn.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

/* ---- coordinator ops and start-up ---- */

/* Cluster mode: the leader of topic-partition as the metadata cache names it; -ENOENT if it names none. */
static int h_txn_leader(struct broker *b, const char *topic, int32_t partition, int32_t *leader)
{
	const struct mcache_part *mp = mcache_part(b->mcache, topic, (int32_t)strlen(topic), partition);

	if (!mp)
		return -ENOENT; /* deleted (the marker is skipped) */
	*leader = mp->leader;
	return mp->leader < 0 ? -EAGAIN : 0;
}

static int h_txn_part(void *arg, const char *topic, int32_t partition, struct part **out)
{
	struct broker *b = arg;
	struct topic *t = registry_find(b->reg, kstr_c(topic));
	int32_t leader;
	int err;

	if (b->cluster && b->mcache && (err = h_txn_leader(b, topic, partition, &leader)))
		return err;
	if (b->cluster && b->mcache && leader != b->node_id)
		return -EREMOTE; /* ops.send_marker */
	if (!t || partition < 0 || partition >= t->nparts)
		return -ENOENT;
	*out = registry_part(t, partition);
	return *out ? 0 : -EIO; /* offline (KAFKA_STORAGE_ERROR) until its files are back */
}

/*
 * ops.part: as h_txn_part, and in cluster mode -EAGAIN (retried, nothing
 * appended) while the partition's ISR is below its min.insync.replicas,
 * where Kafka refuses the acks=-1 append of a marker (NOT_ENOUGH_REPLICAS)
 * rather than append one whose wait can only fail.
 */
static int h_txn_marker_part(void *arg, const char *topic, int32_t partition, struct part **out)
{
	struct broker *b = arg;
	int err = h_txn_part(arg, topic, partition, out);

	if (!err && b->repl &&
	    replica_isr_size(b, topic, partition) < registry_find(b->reg, kstr_c(topic))->cfg.min_insync_replicas)
		return -EAGAIN;
	return err;
}

/* coord_topic.part of __transaction_state: looked up on every write, never cached */
static struct part *h_txn_state_part(void *arg, int32_t partition)
{
	struct part *part = NULL;

	return h_txn_part(arg, TXN_STORE_TOPIC, partition, &part) ? NULL : part;
}

static int h_txn_send_marker(void *arg, struct kstr id, const struct marker *m, const char *topic, int32_t partition)
{
	struct broker *b = arg;
	int32_t leader = -1;
	int err = b->mcache ? h_txn_leader(b, topic, partition, &leader) : -ENOTCONN;

	if (!err && !b->txn_send)
		err = txn_send_new(b, &b->txn_send); /* the first marker for another broker */

	return err ? err : txn_send_marker(b->txn_send, leader, id, m, topic, partition);
}

static int h_txn_new_pid(void *arg, int64_t *id)
{
	return producer_ids_next(arg, id);
}

static void h_txn_offsets_complete(void *arg, int32_t partition, int64_t producer_id, bool commit)
{
	struct broker *b = arg;

	if (b->groups && group_coord_attached(b->groups))
		group_txn_complete(b->groups, partition, producer_id, commit);
}

static uint64_t h_txn_written(void *arg, struct part *part)
{
	struct broker *b = arg;

	fetch_park_notify(part); /* wakes fetches parked on it: the LSO may have moved */
	return park_sync_on_ack(&b->cfg) ? syncer_want(b->syncer, part) : 0;
}

static bool h_txn_synced(void *arg, uint64_t first, uint64_t last, bool *failed)
{
	struct broker *b = arg;

	if (syncer_done(b->syncer) < last)
		return false;
	*failed = syncer_failed(b->syncer, first); /* a failed round at or after first */
	return true;
}

static int h_txn_replicated(void *arg, const char *topic, int32_t partition, int64_t end)
{
	struct broker *b = arg;
	bool met;

	if (!b->repl)
		return 1;
	return replica_hw_covers(b, kstr_c(topic), partition, end, &met) ? -ENOTCONN : met;
}

void txns_on_synced(struct broker *b)
{
	if (b->txns)
		txn_coord_on_synced(b->txns);
}

/*
 * Opens __transaction_state and loads it.  -EAGAIN while the topic is being
 * made (begun here when create, off the event loop: creator.h): the
 * coordinator answers COORDINATOR_NOT_AVAILABLE meanwhile (retriable).
 */
static int h_txn_attach_cluster(struct broker *b);

static int h_txn_attach(struct broker *b, bool create)
{
	struct topic *t = registry_find(b->reg, KSTR(TXN_STORE_TOPIC));
	struct reg_build *build;
	struct topic_cfg tc;
	char segment[24], msg[256];
	int err = 0;

	if (b->cluster)
		return h_txn_attach_cluster(b);
	if (!t && !create)
		return 0;
	if (!t) {
		snprintf(segment, sizeof(segment), "%d", b->cfg.transaction_state_log_segment_bytes);
		err = topic_cfg_init(&tc, &b->cfg);
		if (!err)
			err = topic_cfg_set(&tc, "cleanup.policy", "compact", msg, sizeof(msg));
		if (!err)
			err = topic_cfg_set(&tc, "segment.bytes", segment, msg, sizeof(msg));
		if (!err)
			err = topic_cfg_set(&tc, "retention.ms", "-1", msg, sizeof(msg));
		if (!err)
			err = creator_create(b->creator, KSTR(TXN_STORE_TOPIC),
					     b->cfg.transaction_state_log_num_partitions, &tc, &build);
		topic_cfg_release(&tc);
		if (err) {
			log_error("cannot create %s: %s", TXN_STORE_TOPIC, strerror(-err));
			return err;
		}
		log_info("creating %s with %d partitions", TXN_STORE_TOPIC,
			 b->cfg.transaction_state_log_num_partitions);
		return -EAGAIN;
	}
	if (t->creating)
		return -EAGAIN;
	return txn_coord_attach(b->txns, &(struct coord_topic){ h_txn_state_part, b, t->nparts });
}

/*
 * Cluster mode: attaches once the topic is here (written to ZooKeeper by
 * the first FindCoordinator of a transactional id) and its partition count
 * known; then takes the roles held.
 */
static int h_txn_attach_cluster(struct broker *b)
{
	struct topic *t = registry_find(b->reg, KSTR(TXN_STORE_TOPIC));
	const struct mcache_topic *mt =
		b->mcache ? mcache_topic(b->mcache, TXN_STORE_TOPIC, sizeof(TXN_STORE_TOPIC) - 1) : NULL;
	int err;

	if (!t || t->creating || !mt || mt->nparts < 1)
		return -EAGAIN; /* the controller's LeaderAndIsr and UpdateMetadata make and name it */
	err = txn_coord_attach_unowned(b->txns, &(struct coord_topic){ h_txn_state_part, b, mt->nparts });
	for (int32_t p = 0; !err && p < mt->nparts; p++) {
		struct replica *r = replica_find(b, TXN_STORE_TOPIC, p);

		if (r && r->leader == b->node_id && r->applied_epoch == r->leader_epoch)
			txn_coord_set_leader(b->txns, p, true);
	}
	return err;
}

void txns_on_role(struct broker *b, const char *topic, int32_t partition, bool leader)
{
	if (!b->txns || strcmp(topic, TXN_STORE_TOPIC) != 0)
		return;
	if (!txn_coord_attached(b->txns)) {
		h_txn_attach_cluster(b); /* takes every role held, this one too */
		return;
	}
	txn_coord_set_leader(b->txns, partition, leader);
}

int txns_start(struct broker *b)
{
	static const struct txn_coord_ops ops = { h_txn_marker_part, h_txn_new_pid, h_txn_offsets_complete,
						  h_txn_written,     h_txn_synced,  h_txn_replicated,
						  h_txn_send_marker };
	struct txn_coord_cfg cfg = {
		.max_timeout_ms = b->cfg.transaction_max_timeout_ms,
		.abort_interval_ms = b->cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms,
		.id_expiration_ms = b->cfg.transactional_id_expiration_ms,
		.expire_interval_ms = b->cfg.transaction_remove_expired_transaction_cleanup_interval_ms,
	};
	int err = txn_coord_new(b->loop, &cfg, &ops, b, &b->txns);

	if (!err)
		err = replica_on_role(txns_on_role);
	/* b->cluster is made later (server_cluster_start): a restarted cluster broker must not load
	 * every partition of its local replica and coordinate them all, so tell the mode by the config */
	if (!err && !b->cfg.zookeeper_connect)
		err = h_txn_attach(b, false);
	return err; /* cluster mode: attached once the controller named the topic's leaders */
}

void txns_stop(struct broker *b)
{
	txn_send_free(b->txn_send);
	b->txn_send = NULL;
	txn_coord_free(b->txns);
	b->txns = NULL;
}

bool txns_coord_ready(struct broker *b)
{
	return txn_coord_attached(b->txns) || h_txn_attach(b, true) == 0;
}

/* The coordinator with __transaction_state open, for reading its state; NULL if it cannot be. */
static struct txn_coord *h_txn_coord_read(struct req *rq)
{
	struct broker *b = rq->b;

	return txns_coord_ready(b) && txn_coord_attached(b->txns) ? b->txns : NULL;
}

/*
 * The shared preamble of the requests that change transactions: NULL
 * (COORDINATOR_NOT_AVAILABLE) also once the log dir failed, as nothing
 * written can become durable any more.  Describe and List still answer
 * what the coordinator holds.
 */
static struct txn_coord *h_txn_coord(struct req *rq)
{
	return registry_dir_failed(rq->b->reg) ? NULL : h_txn_coord_read(rq);
}

/* PRODUCER_FENCED only from version fenced_from on (PROTOCOL-NOTES §5.25a). */
static int16_t h_txn_kerr(const struct req *rq, int16_t err, int16_t fenced_from)
{
	if (err == KERR_PRODUCER_FENCED && rq->hdr.api_version < fenced_from)
		return KERR_INVALID_PRODUCER_EPOCH;
	return err;
}

/*
 * Parks the reply until the coordinator's writes are synced, and in
 * cluster mode until the high watermark of id's __transaction_state
 * partition covers them (err: the answer's error code, set on a failed
 * wait: NOT_COORDINATOR once leadership moved, else
 * COORDINATOR_NOT_AVAILABLE).
 */
static int h_txn_reply(struct req *rq, struct kstr id, int16_t *err, park_fail_fn *fail)
{
	uint64_t ticket = txn_coord_take_ticket(rq->b->txns);
	int32_t partition;
	int64_t end;

	if (!txn_coord_take_need(rq->b->txns, id, &partition, &end) || !rq->b->repl || *err)
		return park_until_synced(rq, ticket, fail);
	replica_wait_add(rq, KSTR(TXN_STORE_TOPIC), partition, end, err, true);
	return replica_park(rq, ticket, TXN_REPLICATION_TIMEOUT_MS, fail);
}

/* ---- InitProducerId (transactional) ---- */

static void h_txn_init_fail(struct req *rq)
{
	((struct InitProducerIdResponse *)rq->out)->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
}

int txn_init_producer_id(struct req *rq, const struct InitProducerIdRequest *in, struct InitProducerIdResponse *out)
{
	struct txn_coord *tc = h_txn_coord(rq);
	int64_t pid = -1;
	int16_t epoch = -1, err;

	out->ProducerId = -1;
	out->ProducerEpoch = -1;
	if (!tc) {
		out->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	if ((in->ProducerId == -1) != (in->ProducerEpoch == -1)) {
		out->ErrorCode = KERR_INVALID_REQUEST;
		return H_REPLY;
	}
	err = txn_init_producer(tc, in->TransactionalId, in->TransactionTimeoutMs, in->ProducerId, in->ProducerEpoch,
				&pid, &epoch);
	out->ErrorCode = h_txn_kerr(rq, err, 4);
	if (!err) {
		out->ProducerId = pid;
		out->ProducerEpoch = epoch;
	}
	log_debug(LOGC_TXN, "txn", "%s: InitProducerId v%d '%.*s' -> id %lld epoch %d error %d", conn_peer(rq->c),
		  rq->hdr.api_version, in->TransactionalId.len, in->TransactionalId.p, (long long)pid, epoch,
		  out->ErrorCode);
	return h_txn_reply(rq, in->TransactionalId, &out->ErrorCode, h_txn_init_fail);
}

/* ---- AddPartitionsToTxn ---- */

/*
 * Handled in the v4 shape (a list of transactions); a v0-3 request is one
 * transaction, converted in and out.  VerifyOnly (v4, KIP-890) answers
 * per partition what txn_verify_partition says and changes nothing.
 */

/* Sets every partition's error of r to err, except those already carrying one when keep. */
static void h_txn_add_parts_set(struct AddPartitionsToTxnResult *r, int16_t err, bool keep)
{
	for (int32_t i = 0; i < r->TopicResults.n; i++)
		for (int32_t j = 0; j < r->TopicResults.v[i].ResultsByPartition.n; j++) {
			struct AddPartitionsToTxnPartitionResult *p = &r->TopicResults.v[i].ResultsByPartition.v[j];

			if (!keep || !p->PartitionErrorCode)
				p->PartitionErrorCode = err;
		}
}

/*
 * AddPartitionsToTxn v0-3 comes from a producer, which needs Write on the
 * transactional id and the topics; v4 from a partition leader verifying a
 * produce (KIP-890), which needs ClusterAction instead, as in Kafka.
 */
static bool h_txn_from_client(const struct req *rq)
{
	return rq->hdr.api_version < 4;
}

/* Results of in's partitions, all 0; OUT *tps: the known ones, *unknown: some are not. */
static int32_t h_txn_add_parts_init(struct req *rq, const struct AddPartitionsToTxnTransaction *in,
				    struct AddPartitionsToTxnResult *out, struct txn_tp **tps, bool *unknown)
{
	int32_t n = 0, total = 0;

	out->TransactionalId = in->TransactionalId;
	out->TopicResults.n = in->Topics.n > 0 ? in->Topics.n : 0;
	out->TopicResults.v = req_alloc(rq, (size_t)out->TopicResults.n, sizeof(*out->TopicResults.v));
	for (int32_t i = 0; i < out->TopicResults.n; i++)
		total += in->Topics.v[i].Partitions.n > 0 ? in->Topics.v[i].Partitions.n : 0;
	*tps = req_alloc(rq, (size_t)total, sizeof(**tps));
	*unknown = false;
	for (int32_t i = 0; i < out->TopicResults.n; i++) {
		const struct AddPartitionsToTxnTransactionTopic *it = &in->Topics.v[i];
		struct AddPartitionsToTxnTopicResult *ot = &out->TopicResults.v[i];
		const char *name = req_cstr(rq, it->Name);

		ot->Name = it->Name;
		ot->ResultsByPartition.n = it->Partitions.n > 0 ? it->Partitions.n : 0;
		ot->ResultsByPartition.v =
			req_alloc(rq, (size_t)ot->ResultsByPartition.n, sizeof(*ot->ResultsByPartition.v));
		for (int32_t j = 0; j < ot->ResultsByPartition.n; j++) {
			int32_t p = it->Partitions.v[j];

			ot->ResultsByPartition.v[j].PartitionIndex = p;
			if (h_txn_from_client(rq) && (ot->ResultsByPartition.v[j].PartitionErrorCode =
							      authz_topic_kerr(rq, it->Name, ACL_OP_WRITE))) {
				*unknown = true; /* the others are not attempted */
				continue;
			}
			if (!registry_part_known(rq->b->reg, it->Name, p)) { /* cluster mode: led anywhere */
				ot->ResultsByPartition.v[j].PartitionErrorCode = KERR_UNKNOWN_TOPIC_OR_PARTITION;
				*unknown = true;
				continue;
			}
			(*tps)[n++] = (struct txn_tp){ (char *)name, p };
		}
	}
	return n;
}

/* VerifyOnly: each partition's verdict. */
static void h_txn_verify_parts(struct txn_coord *tc, const struct AddPartitionsToTxnTransaction *in,
			       struct AddPartitionsToTxnResult *out)
{
	for (int32_t i = 0; i < out->TopicResults.n; i++)
		for (int32_t j = 0; j < out->TopicResults.v[i].ResultsByPartition.n; j++) {
			struct AddPartitionsToTxnPartitionResult *p = &out->TopicResults.v[i].ResultsByPartition.v[j];

			p->PartitionErrorCode =
				txn_verify_partition(tc, in->TransactionalId, in->ProducerId, in->ProducerEpoch,
						     out->TopicResults.v[i].Name, p->PartitionIndex);
		}
}

static void h_txn_add_one(struct req *rq, struct txn_coord *tc, const struct AddPartitionsToTxnTransaction *in,
			  struct AddPartitionsToTxnResult *out)
{
	struct txn_tp *tps;
	bool unknown;
	int32_t n = h_txn_add_parts_init(rq, in, out, &tps, &unknown);

	if (!tc)
		h_txn_add_parts_set(out, KERR_COORDINATOR_NOT_AVAILABLE, false);
	else if (txn_coord_owner_kerr(tc, in->TransactionalId))
		h_txn_add_parts_set(out, txn_coord_owner_kerr(tc, in->TransactionalId), false);
	else if (h_txn_from_client(rq) && authz_txn_id_kerr(rq, in->TransactionalId, ACL_OP_WRITE))
		h_txn_add_parts_set(out, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, false);
	else if (in->VerifyOnly)
		h_txn_verify_parts(tc, in, out);
	else if (unknown) /* Kafka: nothing is added, the others are not attempted */
		h_txn_add_parts_set(out, KERR_OPERATION_NOT_ATTEMPTED, true);
	else
		h_txn_add_parts_set(out,
				    h_txn_kerr(rq,
					       txn_add_partitions(tc, in->TransactionalId, in->ProducerId,
								  in->ProducerEpoch, tps, n),
					       2),
				    false);
}

/* v0-3: the request's one transaction in the v4 shape. */
static void h_txn_add_parts_v3_in(struct req *rq, const struct AddPartitionsToTxnRequest *a,
				  struct AddPartitionsToTxnTransaction *txn)
{
	AddPartitionsToTxnTransaction_init(txn);
	txn->TransactionalId = a->V3AndBelowTransactionalId;
	txn->ProducerId = a->V3AndBelowProducerId;
	txn->ProducerEpoch = a->V3AndBelowProducerEpoch;
	txn->Topics.n = a->V3AndBelowTopics.n > 0 ? a->V3AndBelowTopics.n : 0;
	txn->Topics.v = req_alloc(rq, (size_t)txn->Topics.n, sizeof(*txn->Topics.v));
	for (int32_t i = 0; i < txn->Topics.n; i++) {
		txn->Topics.v[i].Name = a->V3AndBelowTopics.v[i].Name;
		txn->Topics.v[i].Partitions.v = a->V3AndBelowTopics.v[i].Partitions.v;
		txn->Topics.v[i].Partitions.n = a->V3AndBelowTopics.v[i].Partitions.n;
	}
}

/* v0-3: the one transaction's results in the v0-3 shape. */
static void h_txn_add_parts_v3_out(struct req *rq, const struct AddPartitionsToTxnResult *r,
				   struct AddPartitionsToTxnResponse *resp)
{
	resp->ResultsByTopicV3AndBelow.n = r->TopicResults.n;
	resp->ResultsByTopicV3AndBelow.v =
		req_alloc(rq, (size_t)r->TopicResults.n, sizeof(*resp->ResultsByTopicV3AndBelow.v));
	for (int32_t i = 0; i < r->TopicResults.n; i++) {
		struct AddPartitionsToTxnResponseTopic *ot = &resp->ResultsByTopicV3AndBelow.v[i];

		ot->Name = r->TopicResults.v[i].Name;
		ot->ResultsByPartition.n = r->TopicResults.v[i].ResultsByPartition.n;
		ot->ResultsByPartition.v =
			req_alloc(rq, (size_t)ot->ResultsByPartition.n, sizeof(*ot->ResultsByPartition.v));
		for (int32_t j = 0; j < ot->ResultsByPartition.n; j++) {
			ot->ResultsByPartition.v[j].PartitionIndex =
				r->TopicResults.v[i].ResultsByPartition.v[j].PartitionIndex;
			ot->ResultsByPartition.v[j].PartitionErrorCode =
				r->TopicResults.v[i].ResultsByPartition.v[j].PartitionErrorCode;
		}
	}
}

static void h_txn_add_parts_fail(struct req *rq)
{
	struct AddPartitionsToTxnResponse *resp = rq->out;

	for (int32_t i = 0; i < resp->ResultsByTopicV3AndBelow.n; i++)
		for (int32_t j = 0; j < resp->ResultsByTopicV3AndBelow.v[i].ResultsByPartition.n; j++)
			resp->ResultsByTopicV3AndBelow.v[i].ResultsByPartition.v[j].PartitionErrorCode =
				KERR_COORDINATOR_NOT_AVAILABLE;
	for (int32_t i = 0; i < resp->ResultsByTransaction.n; i++)
		h_txn_add_parts_set(&resp->ResultsByTransaction.v[i], KERR_COORDINATOR_NOT_AVAILABLE, false);
}

/* The transactional id a v0-3 request changes (v4 only verifies: nothing written). */
static struct kstr h_txn_add_parts_id(const struct AddPartitionsToTxnRequest *a)
{
	return a->Transactions.n == 1 ? a->Transactions.v[0].TransactionalId : a->V3AndBelowTransactionalId;
}

/* Where a failed replication wait answers: the first partition's error (clients fail the request on any). */
static int16_t *h_txn_add_parts_err(struct req *rq, struct AddPartitionsToTxnResponse *resp)
{
	if (resp->ResultsByTopicV3AndBelow.n > 0 && resp->ResultsByTopicV3AndBelow.v[0].ResultsByPartition.n > 0)
		return &resp->ResultsByTopicV3AndBelow.v[0].ResultsByPartition.v[0].PartitionErrorCode;
	return req_alloc(rq, 1, sizeof(int16_t)); /* nothing was added, so nothing was written */
}

int h_add_partitions_to_txn(struct req *rq, const void *in, void *out)
{
	const struct AddPartitionsToTxnRequest *a = in;
	struct AddPartitionsToTxnResponse *resp = out;
	struct txn_coord *tc = h_txn_coord(rq);

	if (rq->hdr.api_version < 4) {
		struct AddPartitionsToTxnTransaction txn;
		struct AddPartitionsToTxnResult r;

		AddPartitionsToTxnResult_init(&r);
		h_txn_add_parts_v3_in(rq, a, &txn);
		h_txn_add_one(rq, tc, &txn, &r);
		h_txn_add_parts_v3_out(rq, &r, resp);
	} else if ((resp->ErrorCode = authz_cluster_kerr(rq, ACL_OP_CLUSTER_ACTION))) {
		return H_REPLY;
	} else {
		resp->ResultsByTransaction.n = a->Transactions.n > 0 ? a->Transactions.n : 0;
		resp->ResultsByTransaction.v =
			req_alloc(rq, (size_t)resp->ResultsByTransaction.n, sizeof(*resp->ResultsByTransaction.v));
		for (int32_t i = 0; i < resp->ResultsByTransaction.n; i++)
			h_txn_add_one(rq, tc, &a->Transactions.v[i], &resp->ResultsByTransaction.v[i]);
	}
	return tc ? h_txn_reply(rq, h_txn_add_parts_id(a), h_txn_add_parts_err(rq, resp), h_txn_add_parts_fail)
		  : H_REPLY;
}

/* ---- AddOffsetsToTxn ---- */

static void h_txn_add_offsets_fail(struct req *rq)
{
	((struct AddOffsetsToTxnResponse *)rq->out)->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
}

int h_add_offsets_to_txn(struct req *rq, const void *in, void *out)
{
	const struct AddOffsetsToTxnRequest *a = in;
	struct AddOffsetsToTxnResponse *resp = out;
	struct txn_coord *tc = h_txn_coord(rq);
	struct txn_tp tp;
	int16_t err;

	tp.partition = tc && a->GroupId.p ? groups_partition_for(rq->b, a->GroupId) : -1;
	if (!tc || (a->GroupId.p && tp.partition < 0)) {
		resp->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	if (!a->GroupId.p) {
		resp->ErrorCode = KERR_INVALID_GROUP_ID;
		return H_REPLY;
	}
	if ((resp->ErrorCode = authz_txn_id_kerr(rq, a->TransactionalId, ACL_OP_WRITE)
				       ?: authz_group_kerr(rq, a->GroupId, ACL_OP_READ)))
		return H_REPLY;
	tp.topic = GROUP_STORE_TOPIC;
	err = txn_add_partitions(tc, a->TransactionalId, a->ProducerId, a->ProducerEpoch, &tp, 1);
	resp->ErrorCode = h_txn_kerr(rq, err, 2);
	return h_txn_reply(rq, a->TransactionalId, &resp->ErrorCode, h_txn_add_offsets_fail);
}

/* ---- EndTxn ---- */

static void h_txn_end_fail(struct req *rq)
{
	((struct EndTxnResponse *)rq->out)->ErrorCode = KERR_KAFKA_STORAGE_ERROR;
}

/* The coordinator finished (or durably decided) a transaction an EndTxn waited for. */
static void h_txn_end_done(void *arg, int16_t err)
{
	struct req *rq = arg;
	struct EndTxnResponse *resp = rq->out;

	resp->ErrorCode = h_txn_kerr(rq, err, 2);
	log_debug(LOGC_TXN, "txn", "%s: EndTxn v%d -> error %d (after the markers)", conn_peer(rq->c),
		  rq->hdr.api_version, resp->ErrorCode);
	req_reply(rq); /* Complete* need not be durable: Prepare* is, and the markers */
}

int h_end_txn(struct req *rq, const void *in, void *out)
{
	const struct EndTxnRequest *e = in;
	struct EndTxnResponse *resp = out;
	struct txn_coord *tc = h_txn_coord(rq);
	bool pending;
	int16_t err;

	if (!tc) {
		resp->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	if ((resp->ErrorCode = authz_txn_id_kerr(rq, e->TransactionalId, ACL_OP_WRITE)))
		return H_REPLY;
	err = txn_end(tc, e->TransactionalId, e->ProducerId, e->ProducerEpoch, e->Committed, h_txn_end_done, rq,
		      &pending);
	if (pending)
		return H_PARKED; /* h_txn_end_done replies */
	resp->ErrorCode = h_txn_kerr(rq, err, 2);
	log_debug(LOGC_TXN, "txn", "%s: EndTxn v%d '%.*s' %s -> error %d", conn_peer(rq->c), rq->hdr.api_version,
		  e->TransactionalId.len, e->TransactionalId.p, e->Committed ? "commit" : "abort", resp->ErrorCode);
	return h_txn_reply(rq, e->TransactionalId, &resp->ErrorCode, h_txn_end_fail);
}

/* ---- TxnOffsetCommit ---- */

static void h_txn_commit_set(struct TxnOffsetCommitResponse *resp, int16_t err)
{
	for (int32_t i = 0; i < resp->Topics.n; i++)
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++)
			resp->Topics.v[i].Partitions.v[j].ErrorCode = err;
}

static void h_txn_commit_fail(struct req *rq)
{
	h_txn_commit_set(rq->out, KERR_KAFKA_STORAGE_ERROR);
}

/*
 * Answers once the fsync round covering the batch is done and, in cluster
 * mode, once the high watermark of the group's __consumer_offsets
 * partition passes it, as OffsetCommit (Kafka appends it with acks=-1):
 * a failed wait answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE.
 */
static int h_txn_commit_wait(struct req *rq, int32_t partition, struct part *part)
{
	struct TxnOffsetCommitResponse *resp = rq->out;
	uint64_t ticket = h_txn_written(rq->b, part);

	if (!rq->b->repl)
		return park_until_synced(rq, ticket, h_txn_commit_fail);
	for (int32_t i = 0; i < resp->Topics.n; i++)
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++)
			replica_wait_add(rq, KSTR(GROUP_STORE_TOPIC), partition, part_log_end_offset(part),
					 &resp->Topics.v[i].Partitions.v[j].ErrorCode, true);
	return replica_park(rq, ticket, rq->b->cfg.offsets_commit_timeout_ms, h_txn_commit_fail);
}

/* The group to stage into: members are checked when the committer says it is one (v3+). */
static int16_t h_txn_commit_group(struct group_coord *gc, const struct TxnOffsetCommitRequest *c, struct group **grp)
{
	int16_t err = group_commit_check(gc, c->GroupId, c->MemberId, c->GroupInstanceId, c->GenerationId, grp);

	if (err && c->GenerationId < 0 && (*grp = group_find(gc, c->GroupId)))
		err = KERR_NONE; /* v0-2 / generation -1: Kafka does not check membership */
	return err;
}

int h_txn_offset_commit(struct req *rq, const void *in, void *out)
{
	const struct TxnOffsetCommitRequest *c = in;
	struct TxnOffsetCommitResponse *resp = out;
	struct txn_coord *tc = h_txn_coord(rq);
	struct group_coord *gc = groups_coord(rq->b);
	struct group_offset *offs;
	struct group *grp = NULL;
	struct part *part = NULL;
	int32_t n = 0, total = 0;
	int16_t err;

	resp->Topics.n = c->Topics.n > 0 ? c->Topics.n : 0;
	resp->Topics.v = req_alloc(rq, (size_t)resp->Topics.n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < resp->Topics.n; i++) {
		resp->Topics.v[i].Name = c->Topics.v[i].Name;
		resp->Topics.v[i].Partitions.n = c->Topics.v[i].Partitions.n > 0 ? c->Topics.v[i].Partitions.n : 0;
		resp->Topics.v[i].Partitions.v =
			req_alloc(rq, (size_t)resp->Topics.v[i].Partitions.n, sizeof(*resp->Topics.v[i].Partitions.v));
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++)
			resp->Topics.v[i].Partitions.v[j].PartitionIndex =
				c->Topics.v[i].Partitions.v[j].PartitionIndex;
		total += resp->Topics.v[i].Partitions.n;
	}
	if ((!tc && !rq->b->cluster) || !gc) {
		h_txn_commit_set(resp, KERR_COORDINATOR_NOT_AVAILABLE);
		return H_REPLY;
	}
	err = authz_txn_id_kerr(rq, c->TransactionalId, ACL_OP_WRITE) ?: authz_group_kerr(rq, c->GroupId, ACL_OP_READ);
	if (err) {
		h_txn_commit_set(resp, err);
		return H_REPLY;
	}
	/* cluster mode: the transaction coordinator may be elsewhere; the group's trusts the producer, as Kafka's */
	if (!rq->b->cluster)
		err = txn_verify(tc, c->TransactionalId, c->ProducerId, c->ProducerEpoch, true);
	if (!err)
		err = h_txn_commit_group(gc, c, &grp);
	if (err) {
		h_txn_commit_set(resp, h_txn_kerr(rq, err, 3));
		return H_REPLY;
	}
	offs = req_alloc(rq, (size_t)total, sizeof(*offs));
	for (int32_t i = 0; i < resp->Topics.n; i++)
		for (int32_t j = 0; j < resp->Topics.v[i].Partitions.n; j++) {
			const struct TxnOffsetCommitRequestPartition *p = &c->Topics.v[i].Partitions.v[j];

			offs[n++] = (struct group_offset){
				.topic = (char *)req_cstr(rq, c->Topics.v[i].Name),
				.partition = p->PartitionIndex,
				.offset = p->CommittedOffset,
				.leader_epoch = p->CommittedLeaderEpoch,
				.metadata = (char *)req_cstr(rq, p->CommittedMetadata),
				.commit_ts_ms = clock_wall_ms(),
			};
		}
	if (n == 0)
		return H_REPLY;
	err = (int16_t)group_txn_commit(gc, grp, c->ProducerId, c->ProducerEpoch, offs, n, &part);
	if (err < 0) {
		h_txn_commit_set(resp, err == -ESTALE ? KERR_INVALID_PRODUCER_EPOCH : KERR_COORDINATOR_NOT_AVAILABLE);
		return H_REPLY;
	}
	return h_txn_commit_wait(rq, group_coord_partition(gc, c->GroupId), part);
}

/* ---- DescribeTransactions, ListTransactions ---- */

static void h_txn_describe_one(struct req *rq, const struct txn_info *ti,
			       struct DescribeTransactionsResponseTransactionState *o)
{
	int32_t ntopics = 0;

	o->TransactionState = kstr_c(txn_state_name(ti->state));
	o->TransactionTimeoutMs = ti->timeout_ms;
	o->TransactionStartTimeMs = ti->start_ms;
	o->ProducerId = ti->producer_id;
	o->ProducerEpoch = ti->producer_epoch;
	o->Topics.v = req_alloc(rq, (size_t)ti->ntps, sizeof(*o->Topics.v));
	for (int32_t i = 0; i < ti->ntps; i++) { /* one entry per topic, partitions grouped */
		struct DescribeTransactionsResponseTopic *t = NULL;

		for (int32_t k = 0; k < ntopics && !t; k++)
			if (kstr_eq_c(o->Topics.v[k].Topic, ti->tps[i].topic))
				t = &o->Topics.v[k];
		if (!t) {
			t = &o->Topics.v[ntopics++];
			t->Topic = kstr_c(req_cstr(rq, kstr_c(ti->tps[i].topic)));
			t->Partitions.v = req_alloc(rq, (size_t)ti->ntps, sizeof(int32_t));
		}
		t->Partitions.v[t->Partitions.n++] = ti->tps[i].partition;
	}
	o->Topics.n = ntopics;
}

int h_describe_transactions(struct req *rq, const void *in, void *out)
{
	const struct DescribeTransactionsRequest *d = in;
	struct DescribeTransactionsResponse *resp = out;
	struct txn_coord *tc = h_txn_coord_read(rq);

	resp->TransactionStates.n = d->TransactionalIds.n > 0 ? d->TransactionalIds.n : 0;
	resp->TransactionStates.v =
		req_alloc(rq, (size_t)resp->TransactionStates.n, sizeof(*resp->TransactionStates.v));
	for (int32_t i = 0; i < resp->TransactionStates.n; i++) {
		struct DescribeTransactionsResponseTransactionState *o = &resp->TransactionStates.v[i];
		struct txn_info ti;

		o->TransactionalId = d->TransactionalIds.v[i];
		o->TransactionState = KSTR("");
		o->ProducerId = -1;
		o->ProducerEpoch = -1;
		o->TransactionStartTimeMs = -1;
		if (!tc)
			o->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		else if (d->TransactionalIds.v[i].len <= 0)
			o->ErrorCode = KERR_INVALID_REQUEST;
		else if (!authz_txn_id(rq, d->TransactionalIds.v[i], ACL_OP_DESCRIBE))
			o->ErrorCode = KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		else if (!txn_describe(tc, d->TransactionalIds.v[i], &ti) || ti.state == TXN_DEAD)
			o->ErrorCode = KERR_TRANSACTIONAL_ID_NOT_FOUND;
		else
			h_txn_describe_one(rq, &ti, o);
	}
	return H_REPLY;
}

struct h_txn_list {
	struct req *rq;
	const struct ListTransactionsRequest *in;
	struct ListTransactionsResponse *out;
	int32_t cap;
	int64_t now_ms;
};

/*
 * Kafka's filters: never Dead; a state and a producer id among those asked
 * for (any when none is); with DurationFilter >= 0 (v1), a transaction
 * that began more than that many ms ago (ids with none open are left out).
 */
static bool h_txn_list_match(const struct h_txn_list *l, const struct txn_info *ti)
{
	const struct ListTransactionsRequest *f = l->in;
	bool ok = f->StateFilters.n <= 0;

	if (ti->state == TXN_DEAD)
		return false;
	for (int32_t i = 0; !ok && i < f->StateFilters.n; i++)
		ok = kstr_eq_c(f->StateFilters.v[i], txn_state_name(ti->state));
	if (!ok)
		return false;
	ok = f->ProducerIdFilters.n <= 0;
	for (int32_t i = 0; !ok && i < f->ProducerIdFilters.n; i++)
		ok = f->ProducerIdFilters.v[i] == ti->producer_id;
	if (!ok)
		return false;
	return f->DurationFilter < 0 || (ti->start_ms >= 0 && l->now_ms - ti->start_ms > f->DurationFilter);
}

static void h_txn_list_one(void *arg, const struct txn_info *ti)
{
	struct h_txn_list *l = arg;
	struct ListTransactionsResponseTransactionState *o;

	if (!h_txn_list_match(l, ti) || !authz_txn_id(l->rq, ti->id, ACL_OP_DESCRIBE))
		return;
	if (l->out->TransactionStates.n == l->cap) {
		int32_t cap = l->cap ? l->cap * 2 : 16;
		void *v = req_alloc(l->rq, (size_t)cap, sizeof(*o));

		if (l->cap)
			memcpy(v, l->out->TransactionStates.v, (size_t)l->cap * sizeof(*o));
		l->out->TransactionStates.v = v;
		l->cap = cap;
	}
	o = &l->out->TransactionStates.v[l->out->TransactionStates.n++];
	o->TransactionalId = (struct kstr){ req_cstr(l->rq, ti->id), ti->id.len };
	o->ProducerId = ti->producer_id;
	o->TransactionState = kstr_c(txn_state_name(ti->state));
}

int h_list_transactions(struct req *rq, const void *in, void *out)
{
	const struct ListTransactionsRequest *f = in;
	struct ListTransactionsResponse *resp = out;
	struct h_txn_list l = { rq, f, resp, 0, clock_wall_ms() };
	struct txn_coord *tc = h_txn_coord_read(rq);
	int32_t unknown = 0;

	resp->UnknownStateFilters.v = req_alloc(rq, (size_t)(f->StateFilters.n > 0 ? f->StateFilters.n : 0),
						sizeof(*resp->UnknownStateFilters.v));
	for (int32_t i = 0; i < f->StateFilters.n; i++) {
		bool known = false;

		for (int s = 0; s < TXN_STATE_COUNT && !known; s++)
			known = kstr_eq_c(f->StateFilters.v[i], txn_state_name((enum txn_state)s));
		if (!known)
			resp->UnknownStateFilters.v[unknown++] = f->StateFilters.v[i];
	}
	resp->UnknownStateFilters.n = unknown;
	resp->TransactionStates.n = 0;
	if (!tc) {
		resp->ErrorCode = KERR_COORDINATOR_NOT_AVAILABLE;
		return H_REPLY;
	}
	txn_coord_each(tc, h_txn_list_one, &l);
	return H_REPLY;
}
