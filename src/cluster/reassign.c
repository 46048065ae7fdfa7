/*
 * reassign.c - partition reassignment on the controller (reassign.h).
 *
 * A request is grouped by topic: each topic's znode is read, every item
 * of it applied (reassign_apply) and the document written back in one
 * multi-op that checks /controller_epoch and the znode's version; a
 * conflict reads it again (3 tries).  The end of a reassignment is the
 * same read-apply-write, started from a pass's states.
 */
#include "cluster/reassign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/znode.h"
#include "proto/kerr.h"
#include "util/log.h"

#define REASSIGN_TRIES 3
#define REASSIGN_STOPS_MAX 4096

/* One request under way. */
struct reassign_op {
	struct reassign *ra;
	struct reassign_item *items;
	int n;
	int pending; /* topics not finished */
	reassign_done_fn *done;
	void *arg;
};

/* One topic of a request (or of a pass's ends: op NULL). */
struct reassign_topic {
	struct reassign_op *op;
	struct reassign *ra;
	int tries;
	struct znode_replicas *ends; /* pass: TRS per partition to end with ([nends]), n 0: leave */
	int32_t nends;
	struct reassign_stop *stops; /* what to queue once written */
	int nstops;
	int32_t *changed; /* the partitions whose replicas changed */
	int nchanged;
	char name[256];
};

/* A state whose leader epoch moves on because its replicas changed. */
struct reassign_bump {
	struct reassign *ra;
	int32_t partition;
	struct znode_state st;
	char topic[256];
};

static void reassign_topic_read(struct reassign_topic *rt);

static bool reassign_has(const struct znode_replicas *r, int32_t id)
{
	for (int32_t i = 0; i < r->n; i++)
		if (r->ids[i] == id)
			return true;
	return false;
}

/* out = a - b (order of a kept). */
static void reassign_minus(const struct znode_replicas *a, const struct znode_replicas *b, struct znode_replicas *out)
{
	struct znode_replicas r = { 0 };

	for (int32_t i = 0; i < a->n; i++)
		if (!reassign_has(b, a->ids[i]))
			r.ids[r.n++] = a->ids[i];
	*out = r;
}

void reassign_target(const struct znode_replicas *rs, const struct znode_replicas *removing, struct znode_replicas *trs)
{
	reassign_minus(rs, removing, trs);
}

static bool reassign_valid(const struct znode_replicas *t, const int32_t *brokers, int nbrokers)
{
	if (t->n <= 0)
		return false;
	for (int32_t i = 0; i < t->n; i++) {
		bool known = false;

		for (int k = 0; k < nbrokers && !known; k++)
			known = brokers[k] == t->ids[i];
		if (t->ids[i] < 0 || !known)
			return false;
		for (int32_t j = 0; j < i; j++)
			if (t->ids[j] == t->ids[i])
				return false;
	}
	return true;
}

int16_t reassign_apply(struct znode_replicas *rs, struct znode_replicas *adding, struct znode_replicas *removing,
		       const struct znode_replicas *target, const int32_t *brokers, int nbrokers,
		       struct znode_replicas *dropped)
{
	bool ongoing = adding->n || removing->n;
	struct znode_replicas ors, extra, add, rem, next;

	dropped->n = 0;
	reassign_minus(rs, adding, &ors); /* the original replicas */
	if (!target) {
		if (!ongoing)
			return KERR_NO_REASSIGNMENT_IN_PROGRESS;
		*dropped = *adding;
		*rs = ors;
		adding->n = removing->n = 0;
		return KERR_NONE;
	}
	if (!reassign_valid(target, brokers, nbrokers))
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	reassign_minus(&ors, target, &extra);
	if (target->n + extra.n > ZNODE_REPLICAS_MAX)
		return KERR_INVALID_REPLICA_ASSIGNMENT;
	next = *target;
	for (int32_t i = 0; i < extra.n; i++)
		next.ids[next.n++] = extra.ids[i];
	reassign_minus(target, &ors, &add);
	rem = extra;
	reassign_minus(adding, target, dropped); /* added before, no longer wanted */
	*rs = next;
	*adding = add;
	*removing = rem;
	return KERR_NONE;
}

/* Queues a StopReplica (delete) of topic-partition for broker (the oldest goes past the cap). */
static void reassign_queue_stop(struct reassign *ra, const struct reassign_stop *s)
{
	struct reassign_stop *p;

	for (int i = 0; i < ra->nstops; i++)
		if (ra->stops[i].broker == s->broker && ra->stops[i].partition == s->partition &&
		    !strcmp(ra->stops[i].topic, s->topic))
			return;
	if (ra->nstops == REASSIGN_STOPS_MAX) {
		memmove(ra->stops, ra->stops + 1, sizeof(*ra->stops) * (size_t)(ra->nstops - 1));
		ra->nstops--;
	}
	p = realloc(ra->stops, sizeof(*p) * (size_t)(ra->nstops + 1));
	if (!p) {
		log_error("controller: out of memory: replica %d of %s-%d keeps its files", s->broker, s->topic,
			  s->partition);
		return;
	}
	ra->stops = p;
	ra->stops[ra->nstops++] = *s;
}

static void reassign_add_stops(struct reassign_topic *rt, int32_t partition, const struct znode_replicas *ids)
{
	struct reassign_stop *p = realloc(rt->stops, sizeof(*p) * (size_t)(rt->nstops + ids->n + 1));

	if (!p)
		return;
	rt->stops = p;
	for (int32_t i = 0; i < ids->n; i++) {
		struct reassign_stop *s = &rt->stops[rt->nstops++];

		snprintf(s->topic, sizeof(s->topic), "%s", rt->name);
		s->partition = partition;
		s->broker = ids->ids[i];
	}
}

static void reassign_note_changed(struct reassign_topic *rt, int32_t partition)
{
	int32_t *v = realloc(rt->changed, sizeof(*v) * (size_t)(rt->nchanged + 1));

	if (!v)
		return;
	rt->changed = v;
	rt->changed[rt->nchanged++] = partition;
}

/* One bump less under way; the last runs a pass, which tells the replicas. */
static void reassign_bump_end(struct reassign_bump *bp)
{
	struct reassign *ra = bp->ra;

	free(bp);
	if (--ra->bumping == 0 && !ra->stopping && ra->ls->live)
		leaders_run(ra->ls, ra->ls->live, ra->ls->nlive, ra->ls->epoch, ra->ls->epoch_version);
}

static void reassign_on_bumped(void *arg, const struct zk_reply *rep)
{
	struct reassign_bump *bp = arg;

	if (rep->rc != ZOK && rep->rc != ZCLOSING)
		log_warn("partition %s-%d: leader epoch not moved on: %s", bp->topic, bp->partition, zerror(rep->rc));
	reassign_bump_end(bp);
}

static void reassign_on_bump_state(void *arg, const struct zk_reply *rep)
{
	struct reassign_bump *bp = arg;
	struct reassign *ra = bp->ra;

	if (rep->rc != ZOK || rep->data_len < 0 || ra->stopping ||
	    znode_state_decode(rep->data, (size_t)rep->data_len, &bp->st)) {
		reassign_bump_end(bp); /* no state yet: its first LeaderAndIsr has the replicas */
		return;
	}
	bp->st.leader_epoch++;
	bp->st.controller_epoch = ra->ls->epoch;
	if (leaders_state_write(ra->zk, ra->ls->epoch_version, bp->topic, bp->partition, &bp->st, rep->version,
				reassign_on_bumped, bp))
		reassign_bump_end(bp);
}

/*
 * The replicas of partition changed: its leader epoch moves on (as Kafka's
 * controller does), so every replica applies the new replica set.
 */
static void reassign_bump(struct reassign *ra, const char *topic, int32_t partition)
{
	struct reassign_bump *bp = calloc(1, sizeof(*bp));
	char path[384];

	if (!bp)
		return;
	bp->ra = ra;
	bp->partition = partition;
	snprintf(bp->topic, sizeof(bp->topic), "%s", topic);
	snprintf(path, sizeof(path), "%s/%s/partitions/%d/state", ZNODE_TOPICS, topic, partition);
	ra->bumping++;
	if (zk_get(ra->zk, path, false, reassign_on_bump_state, bp))
		reassign_bump_end(bp);
}

/* A request's topic is done: its items' errors are set. */
static void reassign_topic_end(struct reassign_topic *rt, bool written)
{
	struct reassign_op *op = rt->op;
	struct reassign *ra = rt->ra;

	for (int i = 0; written && i < rt->nstops; i++)
		reassign_queue_stop(ra, &rt->stops[i]);
	for (int i = 0; written && i < rt->nchanged; i++)
		reassign_bump(ra, rt->name, rt->changed[i]);
	free(rt->stops);
	free(rt->ends);
	free(rt->changed);
	free(rt);
	if (!op) {
		ra->completing--;
		return;
	}
	if (--op->pending == 0) {
		op->done(op->arg, op->items, op->n);
		free(op);
	}
}

/* Sets err on the not yet decided items of rt's topic. */
static void reassign_topic_fail(struct reassign_topic *rt, int16_t err)
{
	for (int i = 0; rt->op && i < rt->op->n; i++)
		if (!strcmp(rt->op->items[i].topic, rt->name) && rt->op->items[i].err == KERR_NONE)
			rt->op->items[i].err = err;
}

static void reassign_on_written(void *arg, const struct zk_reply *rep)
{
	struct reassign_topic *rt = arg;

	if (rep->rc == ZBADVERSION && rep->failed_op != 0 && ++rt->tries < REASSIGN_TRIES && !rt->ra->stopping) {
		free(rt->stops);
		rt->stops = NULL;
		rt->nstops = 0;
		rt->nchanged = 0;
		for (int i = 0; rt->op && i < rt->op->n; i++)
			if (!strcmp(rt->op->items[i].topic, rt->name))
				rt->op->items[i].err = KERR_NONE; /* decided again on the new read */
		reassign_topic_read(rt);
		return;
	}
	if (rep->rc != ZOK) {
		log_warn("topic '%s': reassignment not written: %s", rt->name, zerror(rep->rc));
		reassign_topic_fail(rt, rep->rc == ZBADVERSION && rep->failed_op == 0 ? KERR_NOT_CONTROLLER
										      : KERR_REQUEST_TIMED_OUT);
	}
	reassign_topic_end(rt, rep->rc == ZOK);
}

/* Applies the request's items of rt's topic to zt; true if any changed it. */
static bool reassign_topic_items(struct reassign_topic *rt, struct znode_topic *zt)
{
	struct reassign *ra = rt->ra;
	int nbrokers = 0;
	const int32_t *brokers = ra->brokers ? ra->brokers(ra->brokers_arg, &nbrokers) : NULL;
	bool changed = false;

	for (int i = 0; i < rt->op->n; i++) {
		struct reassign_item *it = &rt->op->items[i];
		struct znode_replicas dropped;
		int32_t p = it->partition;

		if (strcmp(it->topic, rt->name) || it->err)
			continue;
		if (p < 0 || p >= zt->nparts) {
			it->err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
			continue;
		}
		it->err = reassign_apply(&zt->parts[p], &zt->adding[p], &zt->removing[p],
					 it->cancel ? NULL : &it->target, brokers, nbrokers, &dropped);
		if (it->err)
			continue;
		changed = true;
		reassign_note_changed(rt, p);
		reassign_add_stops(rt, p, &dropped);
		log_info("partition %s-%d: reassignment %s (replicas %d, adding %d, removing %d)", rt->name, p,
			 it->cancel ? "cancelled" : "started", zt->parts[p].n, zt->adding[p].n, zt->removing[p].n);
	}
	return changed;
}

/* Ends the reassignments of rt->ends whose state the znode still shows; true if any. */
static bool reassign_topic_ends(struct reassign_topic *rt, struct znode_topic *zt)
{
	bool changed = false;

	for (int32_t p = 0; p < rt->nends && p < zt->nparts; p++) {
		struct znode_replicas trs;

		if (!rt->ends[p].n || (!zt->adding[p].n && !zt->removing[p].n))
			continue;
		reassign_target(&zt->parts[p], &zt->removing[p], &trs);
		if (trs.n != rt->ends[p].n || memcmp(trs.ids, rt->ends[p].ids, sizeof(int32_t) * (size_t)trs.n))
			continue; /* changed since the pass: the next one decides */
		reassign_add_stops(rt, p, &zt->removing[p]);
		reassign_note_changed(rt, p);
		zt->parts[p] = trs;
		zt->adding[p].n = zt->removing[p].n = 0;
		changed = true;
		log_info("partition %s-%d: reassignment complete: every target replica is in the isr", rt->name, p);
	}
	return changed;
}

static void reassign_on_topic(void *arg, const struct zk_reply *rep)
{
	struct reassign_topic *rt = arg;
	struct znode_topic zt;
	char path[384], *doc = NULL;
	bool changed;

	if (rep->rc == ZNONODE ||
	    (rep->rc == ZOK && (rep->data_len < 0 || znode_topic_decode(rep->data, (size_t)rep->data_len, &zt)))) {
		reassign_topic_fail(rt, KERR_UNKNOWN_TOPIC_OR_PARTITION);
		reassign_topic_end(rt, false);
		return;
	}
	if (rep->rc != ZOK) {
		reassign_topic_fail(rt, KERR_REQUEST_TIMED_OUT);
		reassign_topic_end(rt, false);
		return;
	}
	changed = rt->op ? reassign_topic_items(rt, &zt) : reassign_topic_ends(rt, &zt);
	if (changed)
		doc = znode_topic_doc_encode(&zt);
	znode_topic_free(&zt);
	if (changed && doc) {
		struct zk_op ops[2] = {
			{ .type = ZK_OP_CHECK, .path = ZNODE_CONTROLLER_EPOCH, .version = rt->ra->ls->epoch_version },
			{ .type = ZK_OP_SET,
			  .path = path,
			  .data = doc,
			  .len = (int)strlen(doc),
			  .version = rep->version },
		};

		snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPICS, rt->name);
		if (!zk_multi(rt->ra->zk, ops, 2, reassign_on_written, rt)) {
			free(doc);
			return;
		}
	}
	free(doc);
	if (changed)
		reassign_topic_fail(rt, KERR_REQUEST_TIMED_OUT);
	reassign_topic_end(rt, false);
}

static void reassign_topic_read(struct reassign_topic *rt)
{
	char path[384];

	snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPICS, rt->name);
	if (zk_get(rt->ra->zk, path, false, reassign_on_topic, rt)) {
		reassign_topic_fail(rt, KERR_REQUEST_TIMED_OUT);
		reassign_topic_end(rt, false);
	}
}

static struct reassign_topic *reassign_topic_new(struct reassign *ra, struct reassign_op *op, const char *name)
{
	struct reassign_topic *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->ra = ra;
	rt->op = op;
	snprintf(rt->name, sizeof(rt->name), "%s", name);
	return rt;
}

int reassign_alter(struct reassign *ra, struct reassign_item *items, int n, reassign_done_fn *done, void *arg)
{
	struct reassign_op *op = calloc(1, sizeof(*op));

	if (!op)
		return -ENOMEM;
	*op = (struct reassign_op){ .ra = ra, .items = items, .n = n, .pending = 1, .done = done, .arg = arg };
	for (int i = 0; i < n; i++) {
		struct reassign_topic *rt;
		bool seen = false;

		items[i].err = KERR_NONE;
		for (int j = 0; j < i && !seen; j++)
			seen = !strcmp(items[j].topic, items[i].topic);
		if (seen)
			continue;
		if (!(rt = reassign_topic_new(ra, op, items[i].topic))) {
			items[i].err = KERR_UNKNOWN_SERVER_ERROR;
			continue;
		}
		op->pending++;
		reassign_topic_read(rt);
	}
	if (--op->pending == 0) {
		done(arg, items, n);
		free(op);
	}
	return 0;
}

/* True if s is in progress and every target replica is in its ISR. */
static bool reassign_done_in(const struct leaders_state *s, struct znode_replicas *trs)
{
	if (!s->has_state || (!s->adding.n && !s->removing.n))
		return false;
	reassign_target(&s->replicas, &s->removing, trs);
	for (int32_t i = 0; i < trs->n; i++)
		if (!reassign_has(&s->st.isr, trs->ids[i]))
			return false;
	return trs->n > 0;
}

/* Starts the end of every finished reassignment of parts, one znode write per topic. */
static void reassign_end_finished(struct reassign *ra, const struct leaders_state *parts, int n)
{
	struct reassign_topic *rt = NULL;

	for (int i = 0; i < n; i++) {
		struct znode_replicas trs;

		if (!reassign_done_in(&parts[i], &trs))
			continue;
		if (rt && strcmp(rt->name, parts[i].topic)) {
			ra->completing++;
			reassign_topic_read(rt);
			rt = NULL;
		}
		if (!rt && !(rt = reassign_topic_new(ra, NULL, parts[i].topic)))
			return;
		if (parts[i].partition >= rt->nends) {
			int32_t m = parts[i].partition + 1;
			struct znode_replicas *e = realloc(rt->ends, sizeof(*e) * (size_t)m);

			if (!e)
				continue;
			memset(e + rt->nends, 0, sizeof(*e) * (size_t)(m - rt->nends));
			rt->ends = e;
			rt->nends = m;
		}
		rt->ends[parts[i].partition] = trs;
	}
	if (rt) {
		ra->completing++;
		reassign_topic_read(rt);
	}
}

/* Whether stop s is due now (1), to be kept (0) or dropped (-1). */
static int reassign_stop_due(const struct reassign_stop *s, const struct leaders_state *parts, int n,
			     const int32_t *live, int nlive)
{
	for (int i = 0; i < n; i++) {
		const struct leaders_state *p = &parts[i];

		if (p->partition != s->partition || strcmp(p->topic, s->topic))
			continue;
		if (reassign_has(&p->replicas, s->broker))
			return -1; /* a replica again */
		if (p->st.leader == s->broker || reassign_has(&p->st.isr, s->broker))
			return 0; /* the state still names it: after the pass that moves it */
		return leaders_is_live(live, nlive, s->broker) ? 1 : 0;
	}
	return -1; /* the topic is gone (deleted) */
}

static int reassign_stop_cmp(const void *a, const void *b)
{
	const struct reassign_stop *x = a, *y = b;

	return (x->broker > y->broker) - (x->broker < y->broker);
}

/* Sends each broker the StopReplica due to it, in one request. */
static void reassign_send_stops(struct reassign *ra, const struct leaders_state *parts, int n, const int32_t *live,
				int nlive)
{
	struct reassign_stop *due = malloc(sizeof(*due) * (size_t)(ra->nstops ? ra->nstops : 1));
	int k = 0, ndue = 0;

	if (!due)
		return;
	for (int i = 0; i < ra->nstops; i++) {
		int d = reassign_stop_due(&ra->stops[i], parts, n, live, nlive);

		if (d > 0)
			due[ndue++] = ra->stops[i];
		if (d == 0)
			ra->stops[k++] = ra->stops[i];
	}
	ra->nstops = k;
	qsort(due, (size_t)ndue, sizeof(*due), reassign_stop_cmp);
	for (int i = 0, j; i < ndue; i = j) {
		for (j = i; j < ndue && due[j].broker == due[i].broker; j++)
			;
		log_info("controller: StopReplica (delete) of %d partitions to broker %d", j - i, due[i].broker);
		ra->on_stop(ra->on_stop_arg, due[i].broker, due + i, j - i);
	}
	free(due);
}

void reassign_on_pass(struct reassign *ra, const struct leaders_state *parts, int n, const int32_t *live, int nlive)
{
	if (ra->stopping)
		return;
	if (!ra->completing)
		reassign_end_finished(ra, parts, n);
	if (ra->nstops && ra->on_stop)
		reassign_send_stops(ra, parts, n, live, nlive);
}

/* ---- /admin/reassign_partitions ---- */

struct reassign_legacy {
	struct reassign *ra;
	int32_t version; /* of the znode read */
	int n;
	struct reassign_item items[];
};

static void reassign_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	(void)rep;
}

static void reassign_on_legacy_done(void *arg, struct reassign_item *items, int n)
{
	struct reassign_legacy *rl = arg;

	for (int i = 0; i < n; i++)
		if (items[i].err)
			log_warn("%s: partition %s-%d not reassigned: %s", ZNODE_REASSIGN, items[i].topic,
				 items[i].partition, kerr_name(items[i].err));
	if (!rl->ra->stopping)
		zk_delete(rl->ra->zk, ZNODE_REASSIGN, rl->version, reassign_ignore, NULL);
	free(rl);
}

static void reassign_on_legacy(void *arg, const struct zk_reply *rep)
{
	struct reassign *ra = arg;
	struct znode_reassign *v;
	struct reassign_legacy *rl;
	int n;

	if (rep->rc == ZNONODE)
		zk_exists(ra->zk, ZNODE_REASSIGN, true, reassign_ignore, NULL); /* its creation is watched */
	if (rep->rc != ZOK || ra->stopping)
		return;
	if (rep->data_len < 0 || znode_reassign_decode(rep->data, (size_t)rep->data_len, &v, &n)) {
		log_warn("%s is not Kafka's reassignment document; deleted", ZNODE_REASSIGN);
		zk_delete(ra->zk, ZNODE_REASSIGN, rep->version, reassign_ignore, NULL);
		return;
	}
	rl = calloc(1, sizeof(*rl) + sizeof(rl->items[0]) * (size_t)(n ? n : 1));
	if (rl) {
		rl->ra = ra;
		rl->version = rep->version;
		rl->n = n;
		for (int i = 0; i < n; i++) {
			snprintf(rl->items[i].topic, sizeof(rl->items[i].topic), "%s", v[i].topic);
			rl->items[i].partition = v[i].partition;
			rl->items[i].target = v[i].replicas;
		}
		log_info("%s: %d partitions to reassign", ZNODE_REASSIGN, n);
		if (reassign_alter(ra, rl->items, n, reassign_on_legacy_done, rl))
			free(rl);
	}
	free(v);
}

void reassign_run_znode(struct reassign *ra)
{
	if (!ra->stopping)
		zk_get(ra->zk, ZNODE_REASSIGN, true, reassign_on_legacy, ra);
}

bool reassign_watches(const char *path)
{
	return path && !strcmp(path, ZNODE_REASSIGN);
}

void reassign_init(struct reassign *ra, struct zk *zk, struct leaders *ls)
{
	memset(ra, 0, sizeof(*ra));
	ra->zk = zk;
	ra->ls = ls;
}

void reassign_stop(struct reassign *ra)
{
	ra->stopping = true;
	free(ra->stops);
	ra->stops = NULL;
	ra->nstops = 0;
}
