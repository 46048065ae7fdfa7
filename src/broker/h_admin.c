/*
 * h_admin.c - topic administration: CreateTopics (v0-4), DeleteTopics
 * (v0-3), CreatePartitions (v0-1) and DeleteRecords (v0-1).
 *
 * Every API here answers per topic (or partition) with Kafka's error codes
 * and never fails the whole request because of one bad entry.  Each topic
 * entry is checked completely before anything is changed, so ValidateOnly
 * only has to skip the last step.  Kafka's rules kept here:
 *   - a name given twice in one request is refused for every occurrence
 *     (INVALID_REQUEST), the others are served;
 *   - one node: a replication factor other than 1 and an assignment naming
 *     any broker but this one are refused; in cluster mode (docs/cluster.md)
 *     a factor above the live brokers and an assignment naming anything but
 *     the same number of distinct live brokers per partition are, and
 *     the topic is written to ZooKeeper (broker/topic_zk.h) before its
 *     files are made here;
 *   - -1 partitions / replication factor means the broker default
 *     (num.partitions, default.replication.factor).
 * CreateTopics and CreatePartitions are answered once the round of the
 * worker thread that made their files durable is done (broker/creator.h),
 * or at the request's timeout (REQUEST_TIMED_OUT for the entries still
 * being made, which are made all the same); a timeout of 0 or less waits
 * for the round however long it takes (Kafka answers at once then, but a
 * client would find the topic not there yet).  While a topic is made,
 * CreateTopics of it answers TOPIC_ALREADY_EXISTS, and DeleteTopics and
 * CreatePartitions of it LEADER_NOT_AVAILABLE (retriable).
 * One deliberate difference: Kafka lets DeleteTopics remove __consumer_offsets
 * and __transaction_state and CreatePartitions grow them; here the
 * coordinators use those partitions and map each group or transactional id
 * to hash % partition count, so both are refused on internal topics with
 * INVALID_TOPIC_EXCEPTION (the code Kafka gives a produce to them).
 */
#include "broker/authz.h"
#include "broker/handlers.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "broker/cleaner.h"
#include "broker/creator.h"
#include "broker/syncer.h"
#include "broker/topic_zk.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "cluster/znode.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

static int admin_kstr_cmp(const void *a, const void *b)
{
	const struct kstr *x = *(const struct kstr *const *)a, *y = *(const struct kstr *const *)b;
	int32_t lx = x->len > 0 ? x->len : 0, ly = y->len > 0 ? y->len : 0;
	int c = memcmp(x->p ? x->p : "", y->p ? y->p : "", (size_t)(lx < ly ? lx : ly));

	return c ? c : (lx > ly) - (lx < ly);
}

/*
 * Marks the names that occur more than once among n elements of stride
 * bytes whose first member is a struct kstr.  Returns a bool[n] in the
 * request arena (sorting pointers keeps this O(n log n) for big requests).
 */
static bool *admin_dups(struct req *rq, const void *base, int32_t n, size_t stride)
{
	bool *dup = req_alloc(rq, (size_t)(n > 0 ? n : 0), sizeof(*dup));
	const struct kstr **v = req_alloc(rq, (size_t)(n > 0 ? n : 0), sizeof(*v));

	for (int32_t i = 0; i < n; i++)
		v[i] = (const struct kstr *)((const char *)base + (size_t)i * stride);
	qsort(v, (size_t)(n > 0 ? n : 0), sizeof(*v), admin_kstr_cmp);
	for (int32_t i = 1; i < n; i++) {
		if (admin_kstr_cmp(&v[i - 1], &v[i]) == 0) {
			dup[((const char *)v[i - 1] - (const char *)base) / stride] = true;
			dup[((const char *)v[i] - (const char *)base) / stride] = true;
		}
	}
	return dup;
}

/* Kafka: topics whose names differ only in '.' vs '_' collide in metric names. */
static struct topic *admin_collision(struct req *rq, struct kstr name)
{
	int n;
	struct topic **all = registry_topics(rq->b->reg, &n);

	for (int i = 0; i < n; i++) {
		const char *tn = all[i]->name;
		int32_t j = 0;

		for (; j < name.len && tn[j]; j++) {
			char a = name.p[j] == '.' ? '_' : name.p[j], b = tn[j] == '.' ? '_' : tn[j];

			if (a != b)
				break;
		}
		if (j == name.len && tn[j] == '\0')
			return all[i];
	}
	return NULL;
}

/* Shared preamble: the topic named, or an error for this entry. */
static struct topic *admin_topic(struct req *rq, struct kstr name, int16_t *err, struct kstr *msg)
{
	struct topic *t = registry_find(rq->b->reg, name);

	if (!t) {
		*err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		*msg = req_printf(rq, "The topic '%s' does not exist.", req_cstr(rq, name));
	}
	return t;
}

/*
 * True if the replica list is rf distinct live brokers (rf 0: the first
 * list's length); a single node: exactly this node.
 */
static bool admin_replicas_ok(struct req *rq, const struct int32_array *ids, int32_t rf)
{
	if (ids->n < 1 || (rf && ids->n != rf) || (!rq->b->cluster && ids->n != 1))
		return false;
	for (int32_t i = 0; i < ids->n; i++) {
		if (!topic_zk_is_live(rq->b, ids->v[i]))
			return false;
		for (int32_t j = 0; j < i; j++)
			if (ids->v[j] == ids->v[i])
				return false;
	}
	return true;
}

/* ---- waiting for the worker thread (CreateTopics, CreatePartitions) ---- */

/*
 * A request waiting for its builds; malloc'd, as it outlives a request
 * answered at its timeout.
 */
struct admin_wait {
	struct req *rq; /* NULL once answered */
	int pending;    /* builds not ended yet */
};

/* The ErrorCode and ErrorMessage of entry i of rq's response. */
static void admin_entry(struct req *rq, int32_t i, int16_t **code, struct kstr **msg)
{
	if (rq->hdr.api_key == API_CreateTopics) {
		struct CreateTopicsResponseTopic *r = &((struct CreateTopicsResponse *)rq->out)->Topics.v[i];

		*code = &r->ErrorCode;
		*msg = &r->ErrorMessage;
	} else {
		struct CreatePartitionsResponseResult *r = &((struct CreatePartitionsResponse *)rq->out)->Results.v[i];

		*code = &r->ErrorCode;
		*msg = &r->ErrorMessage;
	}
}

/* Entry slot of w's request ends with code and msg (NULL: none); the request is answered after its last one. */
static void admin_end(struct admin_wait *w, int32_t slot, int16_t code, const char *msg)
{
	struct req *rq = w->rq;
	int16_t *c;
	struct kstr *m;

	if (rq) {
		admin_entry(rq, slot, &c, &m);
		*c = code;
		*m = msg ? req_printf(rq, "%s", msg) : KSTR_NULL;
	}
	if (--w->pending)
		return;
	if (rq && loop_timer_armed(&rq->timer))
		loop_timer_cancel(rq->b->loop, &rq->timer);
	if (rq)
		req_reply(rq);
	free(w);
}

/* reg_build.done: entry slot is made (err 0) or not. */
static void admin_build_done(void *waiter, int32_t slot, int err)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "Cannot make the partitions' files: %s", strerror(-err));
	admin_end(waiter, slot, err ? KERR_UNKNOWN_SERVER_ERROR : KERR_NONE, err ? msg : NULL);
}

/* One more entry of rq to wait for (OUT: *w, allocated by the first one). */
static void admin_wait_add(struct req *rq, struct admin_wait **w)
{
	if (!*w && !(*w = calloc(1, sizeof(**w))))
		abort(); /* as req_alloc: the build is queued and must be waited for */
	(*w)->rq = rq;
	(*w)->pending++;
}

/* Entry slot of rq waits for build b (OUT: *w, allocated by the first one). */
static int16_t admin_wait_for(struct req *rq, struct admin_wait **w, struct reg_build *b, int32_t slot,
			      struct kstr *msg)
{
	admin_wait_add(rq, w);
	b->done = admin_build_done;
	b->waiter = *w;
	b->slot = slot;
	*msg = req_printf(rq, "Timed out while the partitions' files were made; they will be.");
	return KERR_REQUEST_TIMED_OUT; /* what the entry says if the timeout comes first */
}

/* rq's timeout passed before its builds ended: answered now, they go on. */
static void admin_timeout(struct loop_timer *timer)
{
	struct req *rq = (struct req *)((char *)timer - offsetof(struct req, timer));
	struct admin_wait *w = rq->hold;

	w->rq = NULL;
	req_reply(rq);
}

/* H_REPLY if nothing is being made for rq (w NULL), else parks it until its builds end or timeout_ms. */
static int admin_park(struct req *rq, struct admin_wait *w, int32_t timeout_ms)
{
	if (!w)
		return H_REPLY;
	rq->hold = w;
	if (timeout_ms > 0) {
		rq->timer.fn = admin_timeout;
		loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + timeout_ms);
	}
	return H_PARKED;
}

/* ---- CreateTopics ---- */

/*
 * Manual assignments: partitions 0..n-1, each once, each on this node only
 * (cluster mode: each on the same number of distinct live brokers, *rf).
 */
static int16_t create_assignments(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t *nparts,
				  int32_t *rf, struct kstr *msg)
{
	int32_t n = in->Assignments.n;
	bool *seen = req_alloc(rq, (size_t)n, sizeof(*seen));

	if (in->NumPartitions != -1 || in->ReplicationFactor != -1) {
		*msg = req_printf(rq, "Both numPartitions or replicationFactor and replicasAssignments were set. "
				      "Both cannot be used at the same time.");
		return KERR_INVALID_REQUEST;
	}
	for (int32_t i = 0; i < n; i++) {
		const struct CreateTopicsRequestAssignment *a = &in->Assignments.v[i];

		if (a->PartitionIndex < 0 || a->PartitionIndex >= n || seen[a->PartitionIndex]) {
			*msg = req_printf(rq, "Partitions must be numbered 0 to %d, each once; got %d.", n - 1,
					  a->PartitionIndex);
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		seen[a->PartitionIndex] = true;
		if (!admin_replicas_ok(rq, &a->BrokerIds, in->Assignments.v[0].BrokerIds.n)) {
			*msg = rq->b->cluster ? req_printf(rq,
							   "Partition %d must be assigned to distinct live brokers, as "
							   "many as partition 0.",
							   a->PartitionIndex)
					      : req_printf(rq,
							   "Partition %d may only be assigned to broker %d (this "
							   "single node).",
							   a->PartitionIndex, rq->b->node_id);
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	*nparts = n;
	*rf = n ? in->Assignments.v[0].BrokerIds.n : 1;
	return KERR_NONE;
}

/*
 * Whether a topic can take adding more partitions, total in all with rf
 * replicas each.  Single node: one descriptor each must be left
 * (registry_partition_room()).  Cluster: its assignment must fit one
 * znode (ZNODE_TOPIC_MAX_REPLICAS).  Refused whole, before any file or
 * znode is made, rather than failing part way (EMFILE while connections
 * and segment rolls need descriptors too) or building an assignment of
 * billions of replicas in memory.
 */
static int16_t admin_fits(struct req *rq, int32_t adding, int32_t total, int32_t rf, struct kstr *msg)
{
	int64_t room = rq->b->cluster ? 0 : registry_partition_room(rq->b->reg);

	if (rq->b->cluster && (int64_t)total * rf > ZNODE_TOPIC_MAX_REPLICAS) {
		*msg = req_printf(rq,
				  "%d partition(s) of %d replica(s) do not fit the topic's ZooKeeper node (at most %d "
				  "replicas in all).",
				  total, rf, ZNODE_TOPIC_MAX_REPLICAS);
		return KERR_INVALID_PARTITIONS;
	}
	if (rq->b->cluster || adding <= room)
		return KERR_NONE;
	*msg = req_printf(rq,
			  "%d more partition(s) do not fit this broker's descriptor limit (room for %lld more: one "
			  "descriptor each; raise the hard RLIMIT_NOFILE).",
			  adding, (long long)(room > 0 ? room : 0));
	return KERR_INVALID_PARTITIONS;
}

/* Partition count and replication factor, from the request or the broker defaults. */
static int16_t create_sizes(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t *nparts, int32_t *rf_out,
			    struct kstr *msg)
{
	const struct broker_cfg *cfg = &rq->b->cfg;
	int32_t np = in->NumPartitions == -1 ? cfg->num_partitions : in->NumPartitions;
	int32_t rf = in->ReplicationFactor == -1 ? cfg->default_replication_factor : in->ReplicationFactor;

	if (in->Assignments.n > 0)
		return create_assignments(rq, in, nparts, rf_out, msg);
	if (np <= 0) {
		*msg = req_printf(rq, "Number of partitions was set to an invalid non-positive value.");
		return KERR_INVALID_PARTITIONS;
	}
	if (rf <= 0) {
		*msg = req_printf(rq, "Replication factor must be larger than 0, or -1 to use the default value.");
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	if (rf > 1 && !rq->b->cluster) {
		*msg = req_printf(rq,
				  "Unable to replicate the partition %d time(s): The target replication factor "
				  "of %d cannot be reached because only 1 broker(s) are registered.",
				  rf, rf);
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	if (rf > topic_zk_live(rq->b)) {
		*msg = req_printf(rq, "Replication factor: %d larger than available brokers: %d.", rf,
				  topic_zk_live(rq->b));
		return KERR_INVALID_REPLICATION_FACTOR;
	}
	*nparts = np;
	*rf_out = rf;
	return KERR_NONE;
}

/* Applies the request's configs to tcfg (already initialised). */
static int16_t create_configs(struct req *rq, const struct CreateTopicsRequestTopic *in, struct topic_cfg *tcfg,
			      struct kstr *msg)
{
	char err[256];

	for (int32_t i = 0; i < in->Configs.n; i++) {
		const struct CreateTopicsRequestConfig *c = &in->Configs.v[i];
		const char *key = req_cstr(rq, c->Name);
		int rc;

		if (c->Value.len < 0) {
			*msg = req_printf(rq, "Null value not supported for topic configs: %s", key);
			return KERR_INVALID_REQUEST;
		}
		err[0] = '\0';
		rc = topic_cfg_set(tcfg, key, req_cstr(rq, c->Value), err, sizeof(err));
		if (rc == -ENOENT) {
			*msg = req_printf(rq, "Unknown topic config name: %s", key);
			return KERR_INVALID_CONFIG;
		}
		if (rc < 0) {
			*msg = req_printf(rq, "%s", rc == -ENOMEM ? "out of memory" : err);
			return rc == -ENOMEM ? KERR_UNKNOWN_SERVER_ERROR : KERR_INVALID_CONFIG;
		}
	}
	return KERR_NONE;
}

/*
 * Cluster mode: a topic whose znodes are being written; its files are made
 * once ZooKeeper took them (so a name taken on another broker is refused).
 */
struct admin_zk {
	struct admin_wait *w;
	struct broker *b;
	int32_t slot, nparts;
	struct kuuid id;
	struct topic_cfg tcfg;
	char name[];
};

/* cluster_done_fn: the znodes are written (err 0), or not; the replicas make the partitions (LeaderAndIsr). */
static void admin_zk_done(void *arg, int err)
{
	struct admin_zk *z = arg;
	char msg[320];

	snprintf(msg, sizeof(msg),
		 err == -EEXIST     ? "Topic '%s' already exists."
		 : err == -ENOTCONN ? "Topic '%s' not created: ZooKeeper is not reachable."
				    : "Cannot create topic '%s'.",
		 z->name);
	admin_end(z->w, z->slot,
		  !err               ? KERR_NONE
		  : err == -EEXIST   ? KERR_TOPIC_ALREADY_EXISTS
		  : err == -ENOTCONN ? KERR_REQUEST_TIMED_OUT
				     : KERR_UNKNOWN_SERVER_ERROR,
		  err ? msg : NULL);
	topic_cfg_release(&z->tcfg);
	free(z);
}

/* Cluster mode: writes entry slot's znodes; its files are made when ZooKeeper answers. */
static int16_t admin_zk_create(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
			       int32_t slot, const struct topic_cfg *tcfg, struct admin_wait **w, struct kstr *msg)
{
	size_t len = (size_t)in->Name.len;
	struct admin_zk *z = calloc(1, sizeof(*z) + len + 1);
	int rc = z ? topic_cfg_copy(&z->tcfg, tcfg) : -ENOMEM;

	if (!rc) {
		memcpy(z->name, in->Name.p, len);
		z->b = rq->b;
		z->slot = slot;
		z->nparts = nparts;
		uuid_random(&z->id);
		rc = topic_zk_create(rq, in, nparts, rf, &z->id, admin_zk_done, z);
		if (rc)
			topic_cfg_release(&z->tcfg);
	}
	if (rc) {
		free(z);
		*msg = req_printf(rq, "Cannot write topic '%s' to ZooKeeper: %s", req_cstr(rq, in->Name),
				  rc == -ENOTCONN ? "not connected"
				  : rc == -EXDEV  ? "only some brokers have a rack (broker.rack)"
						  : strerror(-rc));
		return rc == -ENOTCONN ? KERR_REQUEST_TIMED_OUT
		       : rc == -EXDEV  ? KERR_INVALID_REPLICA_ASSIGNMENT
				       : KERR_UNKNOWN_SERVER_ERROR;
	}
	admin_wait_add(rq, w);
	z->w = *w;
	*msg = req_printf(rq, "Timed out while the topic was created; it will be.");
	return KERR_REQUEST_TIMED_OUT; /* what the entry says if the timeout comes first */
}

/* Checks one topic (entry slot) completely, then begins creating it unless validate_only. */
static int16_t create_one(struct req *rq, const struct CreateTopicsRequestTopic *in, bool validate_only, int32_t slot,
			  struct admin_wait **w, struct kstr *msg)
{
	const char *name = req_cstr(rq, in->Name);
	struct topic_cfg tcfg;
	struct reg_build *b;
	struct topic *t;
	int32_t nparts = 0, rf = 1;
	int16_t err;
	int rc;

	if (!topic_name_valid(in->Name)) {
		*msg = req_printf(rq,
				  "Topic name '%s' is illegal: it must be 1 to 249 characters of ASCII "
				  "alphanumerics, '.', '_' and '-', and not '.' or '..'",
				  name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (!authz_create_topic(rq, in->Name))
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (registry_find(rq->b->reg, in->Name)) {
		*msg = req_printf(rq, "Topic '%s' already exists.", name);
		return KERR_TOPIC_ALREADY_EXISTS;
	}
	if ((t = admin_collision(rq, in->Name)) != NULL) {
		*msg = req_printf(rq, "Topic '%s' collides with existing topic: %s", name, t->name);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	err = create_sizes(rq, in, &nparts, &rf, msg);
	if (!err)
		err = admin_fits(rq, nparts, nparts, rf, msg);
	if (err)
		return err;
	if (topic_cfg_init(&tcfg, &rq->b->cfg) < 0) {
		*msg = req_printf(rq, "out of memory");
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	err = create_configs(rq, in, &tcfg, msg);
	if (!err && !validate_only && rq->b->cluster) {
		err = admin_zk_create(rq, in, nparts, rf, slot, &tcfg, w, msg);
	} else if (!err && !validate_only) {
		rc = creator_create(rq->b->creator, in->Name, nparts, &tcfg, &b);
		if (rc < 0) {
			log_error("cannot create topic '%s': %s", name, strerror(-rc));
			*msg = req_printf(rq, "Cannot create topic '%s': %s", name, strerror(-rc));
			err = rc == -EEXIST ? KERR_TOPIC_ALREADY_EXISTS : KERR_UNKNOWN_SERVER_ERROR;
		} else {
			err = admin_wait_for(rq, w, b, slot, msg);
		}
	}
	topic_cfg_release(&tcfg);
	return err;
}

int h_create_topics(struct req *rq, const void *vin, void *vout)
{
	const struct CreateTopicsRequest *in = vin;
	struct CreateTopicsResponse *out = vout;
	int32_t n = in->Topics.n > 0 ? in->Topics.n : 0;
	struct admin_wait *w = NULL;
	bool *dup;

	_Static_assert(offsetof(struct CreateTopicsRequestTopic, Name) == 0, "admin_dups needs Name first");
	dup = admin_dups(rq, in->Topics.v, n, sizeof(in->Topics.v[0]));
	out->Topics.v = req_alloc(rq, (size_t)n, sizeof(*out->Topics.v));
	out->Topics.n = n;
	for (int32_t i = 0; i < n; i++) {
		struct CreateTopicsResponseTopic *r = &out->Topics.v[i];

		CreateTopicsResponseTopic_init(r);
		r->Name = in->Topics.v[i].Name;
		r->ErrorMessage = KSTR_NULL;
		if (dup[i]) {
			r->ErrorCode = KERR_INVALID_REQUEST;
			r->ErrorMessage = req_printf(rq, "Found multiple entries for this topic.");
			continue;
		}
		r->ErrorCode = create_one(rq, &in->Topics.v[i], in->validateOnly, i, &w, &r->ErrorMessage);
	}
	return admin_park(rq, w, in->timeoutMs);
}

/* ---- DeleteTopics ---- */

int admin_topic_remove(struct broker *b, struct topic *t)
{
	for (int32_t p = 0; p < t->nparts; p++)
		if (t->parts[p]) {
			syncer_forget(b->syncer, t->parts[p]);
			cleaner_forget(b->cleaner, t->parts[p]);
		}
	replica_forget_topic(b, t->name); /* a topic made again under the name starts at leader epoch 0 */
	return registry_delete(b->reg, t);
}

static int16_t delete_one(struct req *rq, struct kstr name)
{
	struct kstr msg;
	int16_t err = KERR_NONE;
	struct topic *t;

	if (!authz_topic(rq, name, ACL_OP_DELETE))
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (!rq->b->cfg.delete_topic_enable) /* the error code exists from v3 on */
		return rq->hdr.api_version < 3 ? KERR_INVALID_REQUEST : KERR_TOPIC_DELETION_DISABLED;
	if (rq->b->cluster && !registry_find(rq->b->reg, name) && mcache_topic(rq->b->mcache, name.p, name.len)) {
		/* no partition of it here: the controller's StopReplica reaches its replicas */
		cluster_topic_delete(rq->b->cluster, req_cstr(rq, name));
		return KERR_NONE;
	}
	t = admin_topic(rq, name, &err, &msg);
	if (!t)
		return err;
	if (t->internal)
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (t->builds)
		return KERR_LEADER_NOT_AVAILABLE; /* its files are being made (retriable) */
	if (admin_topic_remove(rq->b, t) < 0)
		return KERR_UNKNOWN_SERVER_ERROR;
	if (rq->b->cluster)
		cluster_topic_delete(rq->b->cluster, req_cstr(rq, name));
	return KERR_NONE;
}

int h_delete_topics(struct req *rq, const void *vin, void *vout)
{
	const struct DeleteTopicsRequest *in = vin;
	struct DeleteTopicsResponse *out = vout;
	int32_t n = in->TopicNames.n > 0 ? in->TopicNames.n : 0;
	bool *dup = admin_dups(rq, in->TopicNames.v, n, sizeof(in->TopicNames.v[0]));

	out->Responses.v = req_alloc(rq, (size_t)n, sizeof(*out->Responses.v));
	out->Responses.n = n;
	for (int32_t i = 0; i < n; i++) {
		struct DeleteTopicsResponseTopic *r = &out->Responses.v[i];

		DeleteTopicsResponseTopic_init(r);
		r->Name = in->TopicNames.v[i];
		r->ErrorCode = dup[i] ? KERR_INVALID_REQUEST : delete_one(rq, in->TopicNames.v[i]);
	}
	return H_REPLY;
}

/* ---- CreatePartitions ---- */

static int16_t partitions_check(struct req *rq, const struct CreatePartitionsRequestTopic *in, const struct topic *t,
				struct kstr *msg)
{
	int32_t adding = in->Count - t->nparts_next;

	if (t->creating) {
		*msg = req_printf(rq, "Topic %s is being created.", t->name);
		return KERR_LEADER_NOT_AVAILABLE;
	}
	if (t->internal) {
		*msg = req_printf(rq,
				  "Cannot change the partition count of internal topic %s: its coordinator maps "
				  "each key to hash %% %d.",
				  t->name, t->nparts);
		return KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (in->Count < t->nparts_next) {
		*msg = req_printf(rq, "The topic %s currently has %d partition(s); %d would not be an increase.",
				  t->name, t->nparts_next, in->Count);
		return KERR_INVALID_PARTITIONS;
	}
	if (in->Count == t->nparts_next) {
		*msg = req_printf(rq, "Topic already has %d partition(s).", t->nparts_next);
		return KERR_INVALID_PARTITIONS;
	}
	if (in->Assignments.n < 0)
		return KERR_NONE;
	if (in->Assignments.n != adding) {
		*msg = req_printf(rq,
				  "Attempted to add %d additional partition(s), but only %d assignment(s) "
				  "were specified.",
				  adding, in->Assignments.n);
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	for (int32_t i = 0; i < adding; i++) {
		if (!admin_replicas_ok(rq, &in->Assignments.v[i].BrokerIds, 0)) {
			*msg = rq->b->cluster
				       ? req_printf(rq, "Partition %d must be assigned to distinct live brokers.",
						    t->nparts_next + i)
				       : req_printf(rq,
						    "Partition %d may only be assigned to broker %d (this "
						    "single node).",
						    t->nparts_next + i, rq->b->node_id);
			return KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	return KERR_NONE;
}

/* Cluster mode: CreatePartitions of entry slot, once ZooKeeper took the new assignment. */
struct admin_grow {
	struct admin_wait *w;
	struct broker *b;
	int32_t slot, total;
	char name[];
};

static int16_t admin_grow_code(int err, const char *name, char *msg, size_t cap)
{
	snprintf(msg, cap,
		 err == -ESTALE     ? "The partition count of '%s' in ZooKeeper is not this broker's; nothing added."
		 : err == -ENOENT   ? "Topic '%s' is not in ZooKeeper; nothing added."
		 : err == -EINVAL   ? "Replication factor of '%s' larger than the available brokers."
		 : err == -ENOTCONN ? "Partitions of '%s' not added: ZooKeeper is not reachable."
		 : err == -E2BIG    ? "The partitions of '%s' would not fit its ZooKeeper node."
				    : "Cannot add partitions to '%s'.",
		 name);
	return err == -ESTALE || err == -E2BIG ? KERR_INVALID_PARTITIONS
	       : err == -ENOENT                ? KERR_UNKNOWN_TOPIC_OR_PARTITION
	       : err == -EINVAL                ? KERR_INVALID_REPLICATION_FACTOR
	       : err == -ENOTCONN              ? KERR_REQUEST_TIMED_OUT
					       : KERR_UNKNOWN_SERVER_ERROR;
}

/* cluster_done_fn: the assignment is written (err 0), or not; the replicas add the partitions (LeaderAndIsr). */
static void admin_grow_done(void *arg, int err)
{
	struct admin_grow *g = arg;
	char msg[320];
	int16_t code = err ? admin_grow_code(err, g->name, msg, sizeof(msg)) : KERR_NONE;

	admin_end(g->w, g->slot, code, err ? msg : NULL);
	free(g);
}

/* Cluster mode: writes entry slot's new assignment; its partitions are made when ZooKeeper answers. */
static int16_t admin_grow_zk(struct req *rq, const struct CreatePartitionsRequestTopic *in, const struct topic *t,
			     int32_t slot, struct admin_wait **w, struct kstr *msg)
{
	int32_t adding = in->Count - t->nparts_next, *manual = NULL;
	struct admin_grow *g = calloc(1, sizeof(*g) + strlen(t->name) + 1);
	char text[320];
	int rc = -ENOMEM;

	if (in->Assignments.n > 0) {
		manual = req_alloc(rq, (size_t)adding, sizeof(*manual));
		for (int32_t i = 0; i < adding; i++)
			manual[i] = in->Assignments.v[i].BrokerIds.v[0]; /* one each: partitions_check() */
	}
	if (g) {
		*g = (struct admin_grow){ .b = rq->b, .slot = slot, .total = in->Count };
		strcpy(g->name, t->name);
		rc = cluster_topic_grow(rq->b->cluster, t->name, t->nparts_next, in->Count, manual, admin_grow_done, g);
	}
	if (rc) {
		int16_t code = admin_grow_code(rc, t->name, text, sizeof(text));

		free(g);
		*msg = req_printf(rq, "%s", text);
		return code;
	}
	admin_wait_add(rq, w);
	g->w = *w;
	*msg = req_printf(rq, "Timed out while the partitions were added; they will be.");
	return KERR_REQUEST_TIMED_OUT; /* what the entry says if the timeout comes first */
}

/* Cluster mode: the topic as the metadata cache has it (this broker may hold none or some of its partitions). */
static int16_t partitions_zk(struct req *rq, const struct CreatePartitionsRequestTopic *in, bool validate_only,
			     int32_t slot, struct admin_wait **w, struct kstr *msg)
{
	const struct mcache_topic *mt = mcache_topic(rq->b->mcache, in->Name.p, in->Name.len);
	struct topic view;
	int16_t err;

	if (!mt) {
		*msg = req_printf(rq, "The topic '%s' does not exist.", req_cstr(rq, in->Name));
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	memset(&view, 0, sizeof(view));
	view.name = mt->name;
	view.nparts = view.nparts_next = mt->nparts;
	view.internal = topic_name_internal(in->Name);
	err = partitions_check(rq, in, &view, msg);
	if (!err)
		err = admin_fits(rq, in->Count - view.nparts, in->Count, mt->nparts > 0 ? mt->parts[0].replicas.n : 1,
				 msg);
	if (err || validate_only)
		return err;
	return admin_grow_zk(rq, in, &view, slot, w, msg);
}

static int16_t partitions_one(struct req *rq, const struct CreatePartitionsRequestTopic *in, bool validate_only,
			      int32_t slot, struct admin_wait **w, struct kstr *msg)
{
	int16_t err = KERR_NONE;
	struct topic *t = rq->b->cluster ? NULL : admin_topic(rq, in->Name, &err, msg);
	struct reg_build *b;
	int rc;

	if (!authz_topic(rq, in->Name, ACL_OP_ALTER))
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	if (rq->b->cluster)
		return partitions_zk(rq, in, validate_only, slot, w, msg);
	if (!t)
		return err;
	err = partitions_check(rq, in, t, msg);
	if (!err)
		err = admin_fits(rq, in->Count - t->nparts_next, in->Count, 1, msg);
	if (err || validate_only)
		return err;
	rc = creator_grow(rq->b->creator, t, in->Count, &b);
	if (rc < 0) {
		log_error("cannot add partitions to '%s': %s", t->name, strerror(-rc));
		*msg = req_printf(rq, "Cannot add partitions: %s (topic now has %d)", strerror(-rc), t->nparts);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	return admin_wait_for(rq, w, b, slot, msg);
}

int h_create_partitions(struct req *rq, const void *vin, void *vout)
{
	const struct CreatePartitionsRequest *in = vin;
	struct CreatePartitionsResponse *out = vout;
	int32_t n = in->Topics.n > 0 ? in->Topics.n : 0;
	struct admin_wait *w = NULL;
	bool *dup;

	_Static_assert(offsetof(struct CreatePartitionsRequestTopic, Name) == 0, "admin_dups needs Name first");
	dup = admin_dups(rq, in->Topics.v, n, sizeof(in->Topics.v[0]));
	out->Results.v = req_alloc(rq, (size_t)n, sizeof(*out->Results.v));
	out->Results.n = n;
	for (int32_t i = 0; i < n; i++) {
		struct CreatePartitionsResponseResult *r = &out->Results.v[i];

		CreatePartitionsResponseResult_init(r);
		r->Name = in->Topics.v[i].Name;
		if (dup[i]) {
			r->ErrorCode = KERR_INVALID_REQUEST;
			r->ErrorMessage = req_printf(rq, "Duplicate topic in request.");
			continue;
		}
		r->ErrorCode = partitions_one(rq, &in->Topics.v[i], in->ValidateOnly, i, &w, &r->ErrorMessage);
	}
	return admin_park(rq, w, in->TimeoutMs);
}

/* ---- DeleteRecords ---- */

/* Moves one partition's log start; OUT: *low_watermark (the new log start). */
static int16_t records_one(struct topic *t, const struct DeleteRecordsRequestPartition *in, int64_t *low_watermark)
{
	struct part *part = t ? registry_part(t, in->PartitionIndex) : NULL;
	int64_t hw, offset;
	int rc;

	if (!part)
		return registry_part_error(t, in->PartitionIndex);
	if (t->internal || !config_cleanup_deletes(t->cfg.cleanup_policy))
		return KERR_POLICY_VIOLATION; /* Kafka: internal or compact-only topics */
	hw = part_high_watermark(part);
	offset = in->Offset == -1 ? hw : in->Offset;
	if (offset < 0 || offset > hw)
		return KERR_OFFSET_OUT_OF_RANGE;
	if (offset > part_log_start_offset(part)) {
		rc = part_delete_records(part, offset);
		if (rc == -ERANGE)
			return KERR_OFFSET_OUT_OF_RANGE;
		if (rc < 0) {
			log_error("'%s-%d': delete records below %lld: %s", t->name, in->PartitionIndex,
				  (long long)offset, strerror(-rc));
			return KERR_KAFKA_STORAGE_ERROR;
		}
	}
	*low_watermark = part_log_start_offset(part);
	return KERR_NONE;
}

int h_delete_records(struct req *rq, const void *vin, void *vout)
{
	const struct DeleteRecordsRequest *in = vin;
	struct DeleteRecordsResponse *out = vout;
	int32_t n = in->Topics.n > 0 ? in->Topics.n : 0;

	out->Topics.v = req_alloc(rq, (size_t)n, sizeof(*out->Topics.v));
	out->Topics.n = n;
	for (int32_t i = 0; i < n; i++) {
		const struct DeleteRecordsRequestTopic *ti = &in->Topics.v[i];
		struct DeleteRecordsResponseTopic *to = &out->Topics.v[i];
		struct topic *t = registry_find(rq->b->reg, ti->Name);
		int32_t np = ti->Partitions.n > 0 ? ti->Partitions.n : 0;

		DeleteRecordsResponseTopic_init(to);
		to->Name = ti->Name;
		to->Partitions.v = req_alloc(rq, (size_t)np, sizeof(*to->Partitions.v));
		to->Partitions.n = np;
		for (int32_t j = 0; j < np; j++) {
			struct DeleteRecordsResponsePartition *po = &to->Partitions.v[j];

			DeleteRecordsResponsePartition_init(po);
			po->PartitionIndex = ti->Partitions.v[j].PartitionIndex;
			po->LowWatermark = -1;
			po->ErrorCode = authz_topic_kerr(rq, ti->Name, ACL_OP_DELETE);
			if (!po->ErrorCode)
				po->ErrorCode = t ? records_one(t, &ti->Partitions.v[j], &po->LowWatermark)
						  : registry_missing_error(rq->b->reg, ti->Name, po->PartitionIndex);
		}
	}
	return H_REPLY;
}
