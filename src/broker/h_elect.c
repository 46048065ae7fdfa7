/*
 * h_elect.c - the requests that change partition leadership or ISRs on
 * the active controller (cluster mode only; docs/cluster.md):
 *
 *   AlterPartition  from a partition's leader: its new ISR, checked against the state znode
 *                   (leader, leader epoch, partition epoch = znode version, live replicas) and
 *                   written; the answer carries the ISR, leader epoch and partition epoch now.
 *   ElectLeaders    from an admin client: preferred-replica or unclean elections of the partitions
 *                   given, or of every partition when the list is null.
 *   AlterPartitionReassignments  from an admin client: start or cancel (null replicas) partition
 *                   reassignments (cluster/reassign.h); answered once ZooKeeper took them.
 *   ListPartitionReassignments   the reassignments under way, from the last leadership pass.
 *
 * Any other broker answers NOT_CONTROLLER.  Both park the request while
 * the controller reads and writes ZooKeeper (cluster_isr_change(),
 * cluster_elect(); the work is in cluster/change.c) and answer once every
 * partition is decided.  The response is laid out when the request
 * arrives, so the completion only fills in each partition's outcome.
 */
#include <stdlib.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "cluster/change.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "cluster/reassign.h"
#include "proto/kerr.h"
#include "util/log.h"

/* ---- AlterPartition ---- */

/* The name of the topic with id in the metadata cache, or NULL. */
static const char *elect_topic_name(const struct mcache *mc, const struct kuuid *id)
{
	for (int t = 0; t < mc->ntopics; t++)
		if (!memcmp(&mc->topics[t].id, id, sizeof(*id)))
			return mc->topics[t].name;
	return NULL;
}

/* Fills item it from one partition of the request; false if it cannot be asked (err set). */
static bool elect_isr_item(const char *topic, const struct AlterPartitionRequestPartition *p, struct change_item *it)
{
	it->partition = p->PartitionIndex;
	it->leader_epoch = p->LeaderEpoch;
	it->partition_epoch = p->PartitionEpoch;
	if (!topic || strlen(topic) >= sizeof(it->topic)) {
		it->err = topic ? KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_UNKNOWN_TOPIC_ID;
		return false;
	}
	strcpy(it->topic, topic);
	if (p->NewIsr.n > ZNODE_REPLICAS_MAX) {
		it->err = KERR_INVALID_REQUEST;
		return false;
	}
	it->isr.n = p->NewIsr.n;
	memcpy(it->isr.ids, p->NewIsr.v, sizeof(int32_t) * (size_t)p->NewIsr.n);
	return true;
}

static void elect_ids(struct req *rq, const struct znode_replicas *r, struct int32_array *out)
{
	out->n = r->n;
	out->v = req_alloc(rq, (size_t)(r->n ? r->n : 1), sizeof(int32_t));
	memcpy(out->v, r->ids, sizeof(int32_t) * (size_t)r->n);
}

/* A request waiting for the controller (in its arena). */
struct elect_wait {
	struct req *rq;
	int16_t *pre; /* AlterPartition: each item's error found before asking (0: asked) */
	bool in_call; /* the controller is being asked: a completion now is answered by the handler */
	bool answered;
};

/* The controller decided: answer now, or let the handler do it if it is still asking. */
static void elect_finish(struct elect_wait *w)
{
	if (w->in_call)
		w->answered = true;
	else
		req_reply(w->rq);
}

/* What a handler returns after asking the controller (err: its immediate answer). */
static int elect_asked(struct elect_wait *w, int16_t err)
{
	w->in_call = false;
	return err || w->answered ? H_REPLY : H_PARKED;
}

/* Fills the response's partitions in request order from items. */
static void elect_isr_fill(struct req *rq, const int16_t *pre, const struct change_item *items)
{
	struct AlterPartitionResponse *out = rq->out;
	int k = 0;

	for (int32_t t = 0; t < out->Topics.n; t++)
		for (int32_t i = 0; i < out->Topics.v[t].Partitions.n; i++, k++) {
			struct AlterPartitionResponsePartition *p = &out->Topics.v[t].Partitions.v[i];
			const struct change_item *it = &items[k];

			p->ErrorCode = pre[k] ? pre[k] : it->err;
			if (it->err == KERR_INELIGIBLE_REPLICA && rq->hdr.api_version == 0)
				p->ErrorCode = KERR_OPERATION_NOT_ATTEMPTED; /* v0 has no INELIGIBLE_REPLICA */
			p->LeaderId = it->st.leader;
			p->LeaderEpoch = it->version >= 0 ? it->st.leader_epoch : -1;
			p->PartitionEpoch = it->version;
			elect_ids(rq, &it->st.isr, &p->Isr);
		}
}

static void elect_on_isr(void *arg, struct change_item *items, int n)
{
	struct elect_wait *w = arg;

	(void)n;
	elect_isr_fill(w->rq, w->pre, items);
	elect_finish(w);
}

/* Lays out the response as the request, and the items (OUT) to ask for, in the same order. */
static int elect_isr_layout(struct req *rq, const struct AlterPartitionRequest *in, struct AlterPartitionResponse *out,
			    struct change_item **items, int16_t **pre)
{
	int n = 0, k = 0;

	for (int32_t t = 0; t < in->Topics.n; t++)
		n += in->Topics.v[t].Partitions.n;
	*items = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**items));
	*pre = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**pre));
	out->Topics.n = in->Topics.n;
	out->Topics.v = req_alloc(rq, (size_t)(in->Topics.n ? in->Topics.n : 1), sizeof(*out->Topics.v));
	for (int32_t t = 0; t < in->Topics.n; t++) {
		const struct AlterPartitionRequestTopic *ti = &in->Topics.v[t];
		struct AlterPartitionResponseTopic *to = &out->Topics.v[t];
		const char *name = rq->hdr.api_version >= 2 ? elect_topic_name(rq->b->mcache, &ti->TopicId)
							    : req_cstr(rq, ti->TopicName);

		AlterPartitionResponseTopic_init(to);
		to->TopicName = ti->TopicName;
		to->TopicId = ti->TopicId;
		to->Partitions.n = ti->Partitions.n;
		to->Partitions.v =
			req_alloc(rq, (size_t)(ti->Partitions.n ? ti->Partitions.n : 1), sizeof(*to->Partitions.v));
		for (int32_t i = 0; i < ti->Partitions.n; i++, k++) {
			AlterPartitionResponsePartition_init(&to->Partitions.v[i]);
			to->Partitions.v[i].PartitionIndex = ti->Partitions.v[i].PartitionIndex;
			(*items)[k].version = -1;
			(*items)[k].st.leader = -1;
			if (!elect_isr_item(name, &ti->Partitions.v[i], &(*items)[k])) {
				(*pre)[k] = (*items)[k].err;
				(*items)[k].topic[0] = '\0'; /* not asked: the controller knows no "" topic */
			}
		}
	}
	return n;
}

int h_alter_partition(struct req *rq, const void *vin, void *vout)
{
	const struct AlterPartitionRequest *in = vin;
	struct AlterPartitionResponse *out = vout;
	struct elect_wait *w = req_alloc(rq, 1, sizeof(*w));
	struct change_item *items;
	int n = elect_isr_layout(rq, in, out, &items, &w->pre);
	int16_t err;

	if ((out->ErrorCode = authz_cluster_kerr(rq, ACL_OP_CLUSTER_ACTION)))
		return H_REPLY;
	w->rq = rq;
	w->in_call = true;
	err = cluster_isr_change(rq->b->cluster, in->BrokerId, in->BrokerEpoch, items, n, elect_on_isr, w);
	if (err) {
		out->ErrorCode = err;
		log_warn("AlterPartition from broker %d (broker epoch %lld): %s", in->BrokerId,
			 (long long)in->BrokerEpoch, kerr_name(err));
	}
	return elect_asked(w, err);
}

/* ---- ElectLeaders ---- */

/* One topic's results laid out for n partitions; the items (from *k on) get its name. */
static void elect_layout_topic(struct req *rq, struct kstr name, const int32_t *parts, int32_t n,
			       struct ElectLeadersResult *res, struct change_item *items, int *k)
{
	const char *topic = req_cstr(rq, name);

	ElectLeadersResult_init(res);
	res->Topic = name;
	res->PartitionResult.n = n;
	res->PartitionResult.v = req_alloc(rq, (size_t)(n ? n : 1), sizeof(*res->PartitionResult.v));
	for (int32_t i = 0; i < n; i++, (*k)++) {
		ElectLeadersPartitionResult_init(&res->PartitionResult.v[i]);
		res->PartitionResult.v[i].PartitionId = parts[i];
		if (strlen(topic) < sizeof(items[*k].topic))
			strcpy(items[*k].topic, topic);
		items[*k].partition = parts[i];
	}
}

/* Lays out the results (every partition of the metadata cache when the request names none); OUT items. */
static int elect_layout(struct req *rq, const struct ElectLeadersRequest *in, struct ElectLeadersResponse *out,
			struct change_item **items)
{
	const struct mcache *mc = rq->b->mcache;
	bool all = in->TopicPartitions.n < 0;
	int32_t nt = all ? mc->ntopics : in->TopicPartitions.n;
	int n = 0, k = 0;

	for (int32_t t = 0; t < nt; t++)
		n += all ? mc->topics[t].nparts : in->TopicPartitions.v[t].Partitions.n;
	*items = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**items));
	out->ReplicaElectionResults.n = nt;
	out->ReplicaElectionResults.v = req_alloc(rq, (size_t)(nt ? nt : 1), sizeof(*out->ReplicaElectionResults.v));
	for (int32_t t = 0; t < nt; t++) {
		struct ElectLeadersResult *res = &out->ReplicaElectionResults.v[t];

		if (all) {
			int32_t *parts = req_alloc(rq, (size_t)(mc->topics[t].nparts + 1), sizeof(*parts));

			for (int32_t p = 0; p < mc->topics[t].nparts; p++)
				parts[p] = p;
			/* a copy: an UpdateMetadata may replace the cache before the answer is encoded */
			elect_layout_topic(rq, req_printf(rq, "%s", mc->topics[t].name), parts, mc->topics[t].nparts,
					   res, *items, &k);
		} else {
			const struct ElectLeadersRequestTopic *ti = &in->TopicPartitions.v[t];

			elect_layout_topic(rq, ti->Topic, ti->Partitions.v, ti->Partitions.n, res, *items, &k);
		}
	}
	return n;
}

/* Each partition's outcome (err, or NOT_CONTROLLER for all when err_all is set). */
static void elect_fill(struct req *rq, const struct change_item *items, int16_t err_all)
{
	struct ElectLeadersResponse *out = rq->out;
	int k = 0;

	for (int32_t t = 0; t < out->ReplicaElectionResults.n; t++) {
		struct ElectLeadersResult *res = &out->ReplicaElectionResults.v[t];

		for (int32_t i = 0; i < res->PartitionResult.n; i++, k++) {
			struct ElectLeadersPartitionResult *p = &res->PartitionResult.v[i];

			p->ErrorCode = err_all ? err_all : items[k].err;
			if (p->ErrorCode)
				p->ErrorMessage = req_printf(rq, "%s", kerr_name(p->ErrorCode));
		}
	}
}

static void elect_on_elected(void *arg, struct change_item *items, int n)
{
	struct elect_wait *w = arg;

	(void)n;
	elect_fill(w->rq, items, 0);
	elect_finish(w);
}

int h_elect_leaders(struct req *rq, const void *vin, void *vout)
{
	const struct ElectLeadersRequest *in = vin;
	struct ElectLeadersResponse *out = vout;
	struct elect_wait *w = req_alloc(rq, 1, sizeof(*w));
	struct change_item *items;
	int n = elect_layout(rq, in, out, &items);
	int16_t err;

	if (in->ElectionType != 0 && in->ElectionType != 1) {
		out->ErrorCode = KERR_INVALID_REQUEST;
		elect_fill(rq, items, KERR_INVALID_REQUEST);
		return H_REPLY;
	}
	if ((err = authz_cluster_kerr(rq, ACL_OP_ALTER))) {
		out->ErrorCode = err;
		elect_fill(rq, items, err);
		return H_REPLY;
	}
	w->rq = rq;
	w->in_call = true;
	err = cluster_elect(rq->b->cluster, in->ElectionType == 1, items, n, elect_on_elected, w);
	if (err) {
		out->ErrorCode = err;
		elect_fill(rq, items, err); /* v0 has no top-level error: every partition says it */
	}
	return elect_asked(w, err);
}

/* ---- AlterPartitionReassignments, ListPartitionReassignments ---- */

/* Fills each partition's outcome from items (err_all: the same for all). */
static void elect_reassign_fill(struct req *rq, const struct reassign_item *items, int16_t err_all)
{
	struct AlterPartitionReassignmentsResponse *out = rq->out;
	int k = 0;

	for (int32_t t = 0; t < out->Responses.n; t++)
		for (int32_t i = 0; i < out->Responses.v[t].Partitions.n; i++, k++) {
			struct ReassignablePartitionResponse *p = &out->Responses.v[t].Partitions.v[i];

			p->ErrorCode = err_all ? err_all : items[k].err;
			if (p->ErrorCode)
				p->ErrorMessage = req_printf(rq, "%s", kerr_name(p->ErrorCode));
		}
}

static void elect_on_reassigned(void *arg, struct reassign_item *items, int n)
{
	struct elect_wait *w = arg;

	(void)n;
	elect_reassign_fill(w->rq, items, 0);
	elect_finish(w);
}

/* One partition of the request as an item; false (err set) if it cannot be asked. */
static bool elect_reassign_item(const char *topic, const struct ReassignablePartition *p, struct reassign_item *it)
{
	it->partition = p->PartitionIndex;
	it->cancel = p->Replicas.n < 0;
	if (strlen(topic) >= sizeof(it->topic) || !*topic) {
		it->err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return false;
	}
	strcpy(it->topic, topic);
	if (p->Replicas.n > ZNODE_REPLICAS_MAX) {
		it->err = KERR_INVALID_REPLICA_ASSIGNMENT;
		return false;
	}
	it->target.n = it->cancel ? 0 : p->Replicas.n;
	if (it->target.n)
		memcpy(it->target.ids, p->Replicas.v, sizeof(int32_t) * (size_t)it->target.n);
	return true;
}

/* Lays out the response as the request; OUT items (pre: each one's error found here). */
static int elect_reassign_layout(struct req *rq, const struct AlterPartitionReassignmentsRequest *in,
				 struct reassign_item **items, int16_t **pre)
{
	struct AlterPartitionReassignmentsResponse *out = rq->out;
	int n = 0, k = 0;

	for (int32_t t = 0; t < in->Topics.n; t++)
		n += in->Topics.v[t].Partitions.n;
	*items = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**items));
	*pre = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**pre));
	out->Responses.n = in->Topics.n;
	out->Responses.v = req_alloc(rq, (size_t)(in->Topics.n ? in->Topics.n : 1), sizeof(*out->Responses.v));
	for (int32_t t = 0; t < in->Topics.n; t++) {
		const struct ReassignableTopic *ti = &in->Topics.v[t];
		struct ReassignableTopicResponse *to = &out->Responses.v[t];
		const char *name = req_cstr(rq, ti->Name);

		ReassignableTopicResponse_init(to);
		to->Name = ti->Name;
		to->Partitions.n = ti->Partitions.n;
		to->Partitions.v =
			req_alloc(rq, (size_t)(ti->Partitions.n ? ti->Partitions.n : 1), sizeof(*to->Partitions.v));
		for (int32_t i = 0; i < ti->Partitions.n; i++, k++) {
			ReassignablePartitionResponse_init(&to->Partitions.v[i]);
			to->Partitions.v[i].PartitionIndex = ti->Partitions.v[i].PartitionIndex;
			if (!elect_reassign_item(name, &ti->Partitions.v[i], &(*items)[k]))
				(*pre)[k] = (*items)[k].err;
		}
	}
	return n;
}

/* The items that can be asked, packed to the front of ask (OUT their count). */
static int elect_reassign_askable(struct req *rq, struct reassign_item *items, const int16_t *pre, int n,
				  struct reassign_item **ask)
{
	int m = 0;

	*ask = req_alloc(rq, (size_t)(n ? n : 1), sizeof(**ask));
	for (int i = 0; i < n; i++)
		if (!pre[i])
			(*ask)[m++] = items[i];
	return m;
}

/* The controller's outcomes (asked, in order) back into items, with pre's errors kept. */
static void elect_reassign_merge(struct reassign_item *items, const int16_t *pre, int n,
				 const struct reassign_item *asked)
{
	for (int i = 0, m = 0; i < n; i++)
		items[i].err = pre[i] ? pre[i] : asked[m++].err;
}

/* A reassignment request waiting for the controller. */
struct elect_reassign_wait {
	struct elect_wait w;
	struct reassign_item *items;
	int16_t *pre;
	int n;
};

static void elect_on_reassigned_all(void *arg, struct reassign_item *asked, int m)
{
	struct elect_reassign_wait *rw = arg;

	(void)m;
	elect_reassign_merge(rw->items, rw->pre, rw->n, asked);
	elect_on_reassigned(&rw->w, rw->items, rw->n);
}

int h_alter_partition_reassignments(struct req *rq, const void *vin, void *vout)
{
	const struct AlterPartitionReassignmentsRequest *in = vin;
	struct AlterPartitionReassignmentsResponse *out = vout;
	struct elect_reassign_wait *rw = req_alloc(rq, 1, sizeof(*rw));
	struct reassign_item *ask;
	int16_t err;
	int m;

	rw->n = elect_reassign_layout(rq, in, &rw->items, &rw->pre);
	if ((err = authz_cluster_kerr(rq, ACL_OP_ALTER))) {
		out->ErrorCode = err;
		elect_reassign_fill(rq, rw->items, err);
		return H_REPLY;
	}
	m = elect_reassign_askable(rq, rw->items, rw->pre, rw->n, &ask);
	rw->w.rq = rq;
	rw->w.in_call = true;
	err = cluster_reassign(rq->b->cluster, ask, m, elect_on_reassigned_all, rw);
	if (err) {
		out->ErrorCode = err;
		out->ErrorMessage = req_printf(rq, "%s", kerr_name(err));
		elect_reassign_fill(rq, rw->items, err);
	}
	return elect_asked(&rw->w, err);
}

/* True if the request asks for partition p of topic (topics null: all). */
static bool elect_list_wanted(const struct ListPartitionReassignmentsRequest *in, const char *topic, int32_t p)
{
	if (in->Topics.n < 0)
		return true;
	for (int32_t t = 0; t < in->Topics.n; t++) {
		const struct ListPartitionReassignmentsTopics *ti = &in->Topics.v[t];

		if ((size_t)ti->Name.len != strlen(topic) || memcmp(ti->Name.p, topic, (size_t)ti->Name.len))
			continue;
		for (int32_t i = 0; i < ti->PartitionIndexes.n; i++)
			if (ti->PartitionIndexes.v[i] == p)
				return true;
	}
	return false;
}

/* Adds partition s to out (its topic's entry last, or a new one). */
static void elect_list_add(struct req *rq, struct ListPartitionReassignmentsResponse *out, int cap,
			   const struct leaders_state *s)
{
	struct OngoingTopicReassignment *t = out->Topics.n ? &out->Topics.v[out->Topics.n - 1] : NULL;
	struct OngoingPartitionReassignment *p;

	if (!t || (size_t)t->Name.len != strlen(s->topic) || memcmp(t->Name.p, s->topic, (size_t)t->Name.len)) {
		t = &out->Topics.v[out->Topics.n++];
		OngoingTopicReassignment_init(t);
		t->Name = req_printf(rq, "%s", s->topic);
		t->Partitions.v = req_alloc(rq, (size_t)cap, sizeof(*t->Partitions.v));
	}
	p = &t->Partitions.v[t->Partitions.n++];
	OngoingPartitionReassignment_init(p);
	p->PartitionIndex = s->partition;
	elect_ids(rq, &s->replicas, &p->Replicas);
	elect_ids(rq, &s->adding, &p->AddingReplicas);
	elect_ids(rq, &s->removing, &p->RemovingReplicas);
}

int h_list_partition_reassignments(struct req *rq, const void *vin, void *vout)
{
	const struct ListPartitionReassignmentsRequest *in = vin;
	struct ListPartitionReassignmentsResponse *out = vout;
	const struct leaders_state *parts;
	int n;

	if ((out->ErrorCode = authz_cluster_kerr(rq, ACL_OP_DESCRIBE)))
		return H_REPLY;
	if ((out->ErrorCode = cluster_reassign_states(rq->b->cluster, &parts, &n))) {
		out->ErrorMessage = req_printf(rq, "%s", kerr_name(out->ErrorCode));
		return H_REPLY;
	}
	out->Topics.v = req_alloc(rq, (size_t)(n ? n : 1), sizeof(*out->Topics.v));
	for (int i = 0; i < n; i++)
		if ((parts[i].adding.n || parts[i].removing.n) &&
		    elect_list_wanted(in, parts[i].topic, parts[i].partition))
			elect_list_add(rq, out, n, &parts[i]);
	return H_REPLY;
}
