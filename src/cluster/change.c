/*
 * change.c - the controller's partition state changes on request
 * (change.h).  One job per request: each item is read, decided and
 * written independently; the job counts the items not finished and the
 * last one calls done.
 */
#include "cluster/change.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "proto/kerr.h"
#include "util/log.h"

#define CHANGE_ATTEMPTS 3

struct change_job {
	struct leaders *ls;
	enum change_kind kind;
	int32_t broker_id;
	struct change_item *items;
	int n;
	int pending;
	int written;
	change_done_fn *done;
	void *arg;
};

/* One item under way. */
struct change_op {
	struct change_job *job;
	struct change_item *it;
	struct znode_replicas replicas;
	int attempts;
	struct znode_state st; /* being written */
};

static void change_read(struct change_op *op);

static void change_end(struct change_op *op, int16_t err)
{
	struct change_job *job = op->job;

	op->it->err = err;
	free(op);
	if (--job->pending)
		return;
	job->done(job->arg, job->items, job->n, job->written);
	free(job);
}

static int16_t change_preferred(const struct leaders *ls, const struct znode_replicas *replicas, struct znode_state *st)
{
	int32_t pref = replicas->n ? replicas->ids[0] : -1;

	if (st->leader == pref)
		return KERR_ELECTION_NOT_NEEDED;
	if (pref < 0 || !leaders_is_live(ls->live, ls->nlive, pref) || !leaders_in(&st->isr, pref))
		return KERR_PREFERRED_LEADER_NOT_AVAILABLE;
	st->leader = pref;
	st->leader_epoch++;
	return KERR_NONE;
}

static int16_t change_unclean(const struct leaders *ls, const struct znode_replicas *replicas, struct znode_state *st)
{
	if (st->leader >= 0 && leaders_is_live(ls->live, ls->nlive, st->leader))
		return KERR_ELECTION_NOT_NEEDED;
	if (!leaders_next(ls->live, ls->nlive, replicas, true, true, st) || st->leader < 0)
		return KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
	return KERR_NONE;
}

static int16_t change_isr(const struct change_job *job, const struct change_item *it,
			  const struct znode_replicas *replicas, int32_t version, struct znode_state *st)
{
	const struct leaders *ls = job->ls;

	if (st->leader != job->broker_id)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	if (it->leader_epoch != st->leader_epoch)
		return KERR_FENCED_LEADER_EPOCH;
	if (it->partition_epoch != version)
		return KERR_INVALID_UPDATE_VERSION;
	if (!leaders_in(&it->isr, st->leader))
		return KERR_INVALID_REQUEST;
	for (int32_t i = 0; i < it->isr.n; i++)
		if (!leaders_in(replicas, it->isr.ids[i]) || !leaders_is_live(ls->live, ls->nlive, it->isr.ids[i]))
			return KERR_INELIGIBLE_REPLICA;
	st->isr = it->isr;
	return KERR_NONE;
}

static void change_on_written(void *arg, const struct zk_reply *rep)
{
	struct change_op *op = arg;

	if (rep->rc == ZOK) {
		op->it->st = op->st;
		op->it->version++;
		op->job->written++;
		log_info("partition %s-%d: leader %d (leader epoch %d), isr of %d, partition epoch %d (%s)",
			 op->it->topic, op->it->partition, op->st.leader, op->st.leader_epoch, op->st.isr.n,
			 op->it->version, op->job->kind == CHANGE_ISR ? "AlterPartition" : "election");
		change_end(op, KERR_NONE);
	} else if (rep->failed_op == 0 || rep->rc == ZCLOSING) {
		change_end(op, KERR_NOT_CONTROLLER); /* /controller_epoch moved: no longer controller */
	} else if (rep->rc == ZBADVERSION && op->job->kind != CHANGE_ISR && ++op->attempts < CHANGE_ATTEMPTS) {
		change_read(op);
	} else {
		change_end(op, rep->rc == ZBADVERSION ? KERR_INVALID_UPDATE_VERSION : KERR_UNKNOWN_SERVER_ERROR);
	}
}

/* Decides op's item on the state read (st, version); writes it or ends op with the refusal. */
static void change_decide(struct change_op *op, struct znode_state *st, int32_t version)
{
	struct change_job *job = op->job;
	int16_t err;

	op->it->st = *st;
	op->it->version = version;
	err = job->kind == CHANGE_PREFERRED ? change_preferred(job->ls, &op->replicas, st)
	      : job->kind == CHANGE_UNCLEAN ? change_unclean(job->ls, &op->replicas, st)
					    : change_isr(job, op->it, &op->replicas, version, st);
	if (err) {
		change_end(op, err);
		return;
	}
	st->controller_epoch = job->ls->epoch;
	op->st = *st;
	if (leaders_state_write(job->ls->zk, job->ls->epoch_version, op->it->topic, op->it->partition, st, version,
				change_on_written, op))
		change_end(op, KERR_UNKNOWN_SERVER_ERROR);
}

static void change_on_state(void *arg, const struct zk_reply *rep)
{
	struct change_op *op = arg;
	enum change_kind kind = op->job->kind;
	struct znode_state st;

	memset(&st, 0, sizeof(st));
	if (rep->rc == ZNONODE) /* no replica was ever live */
		change_end(op, kind == CHANGE_PREFERRED ? KERR_PREFERRED_LEADER_NOT_AVAILABLE
			       : kind == CHANGE_UNCLEAN ? KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE
							: KERR_UNKNOWN_TOPIC_OR_PARTITION);
	else if (rep->rc == ZCLOSING)
		change_end(op, KERR_NOT_CONTROLLER);
	else if (rep->rc != ZOK || rep->data_len < 0 || znode_state_decode(rep->data, (size_t)rep->data_len, &st))
		change_end(op, KERR_UNKNOWN_SERVER_ERROR);
	else
		change_decide(op, &st, rep->version);
}

static void change_read(struct change_op *op)
{
	char path[384];

	snprintf(path, sizeof(path), "%s/%s/partitions/%d/state", ZNODE_TOPICS, op->it->topic, op->it->partition);
	if (zk_get(op->job->ls->zk, path, false, change_on_state, op))
		change_end(op, KERR_NOT_CONTROLLER);
}

int change_run(struct leaders *ls, enum change_kind kind, int32_t broker_id, struct change_item *items, int n,
	       change_done_fn *done, void *arg)
{
	struct change_job *job = calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	*job = (struct change_job){ .ls = ls,
				    .kind = kind,
				    .broker_id = broker_id,
				    .items = items,
				    .n = n,
				    .pending = 1,
				    .done = done,
				    .arg = arg };
	for (int i = 0; i < n; i++) {
		const struct leaders_state *s = leaders_find(ls, items[i].topic, items[i].partition);
		struct change_op *op = calloc(1, sizeof(*op));

		items[i].st = (struct znode_state){ .leader = -1 };
		items[i].version = -1;
		items[i].err = KERR_UNKNOWN_TOPIC_OR_PARTITION;
		if (!op || !s) {
			free(op);
			continue;
		}
		op->job = job;
		op->it = &items[i];
		op->replicas = s->replicas;
		job->pending++;
		change_read(op);
	}
	if (--job->pending == 0) {
		done(arg, items, n, job->written);
		free(job);
	}
	return 0;
}

/* True if broker id's share of preferred partitions led by another broker is above pct percent. */
static bool change_imbalanced(const struct leaders *ls, int32_t id, int32_t pct)
{
	int total = 0, off = 0;

	for (int i = 0; i < ls->nlast; i++) {
		const struct leaders_state *s = &ls->last[i];

		if (!s->replicas.n || s->replicas.ids[0] != id)
			continue;
		total++;
		off += s->st.leader != id;
	}
	return total > 0 && (int64_t)off * 100 > (int64_t)pct * total;
}

int change_rebalance_items(const struct leaders *ls, int32_t pct, struct change_item **out)
{
	struct change_item *items = NULL;
	int n = 0;

	*out = NULL;
	for (int i = 0; i < ls->nlast; i++) {
		const struct leaders_state *s = &ls->last[i];
		int32_t pref = s->replicas.n ? s->replicas.ids[0] : -1;
		struct change_item *p;

		if (!s->has_state || pref < 0 || s->st.leader == pref || !leaders_is_live(ls->live, ls->nlive, pref) ||
		    !leaders_in(&s->st.isr, pref) || !change_imbalanced(ls, pref, pct))
			continue;
		p = realloc(items, sizeof(*items) * (size_t)(n + 1));
		if (!p)
			break;
		items = p;
		memset(&items[n], 0, sizeof(items[n]));
		strcpy(items[n].topic, s->topic);
		items[n++].partition = s->partition;
	}
	*out = items;
	return n;
}
