/*
 * leaders.c - the controller's partition states in ZooKeeper (leaders.h).
 *
 * One pass: list /brokers/topics (watched) -> read each assignment ->
 * read each partition's state -> write the states that must change.  The
 * pass holds a copy of its inputs and counts the replies it waits for;
 * the last one ends it, and a pass asked for meanwhile starts then.
 * Replies of a closed session (ZCLOSING) only count down.
 */
#include "cluster/leaders.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/znode.h"
#include "util/log.h"

struct leaders_pass {
	struct leaders *ls;
	int pending;
	bool conflict;   /* a state changed under us: run again */
	bool incomplete; /* a read failed: brokers are not told of this pass */
	int32_t *live;
	int nlive;
	int32_t epoch;
	int32_t epoch_version;
	char **marked; /* topics under /admin/delete_topics: left to the deletion (deleter.h) */
	int nmarked;
	struct leaders_state *states; /* what the pass leaves, for ls->on_pass */
	int nstates, capstates;
};

/* One partition being looked at. */
struct leaders_part {
	struct leaders_pass *pass;
	struct znode_replicas replicas;
	int32_t partition;
	char topic[256];
	char topic_id[32];
	struct znode_state st; /* being written */
};

static void leaders_start(struct leaders *ls);

static void leaders_pass_end(struct leaders_pass *pass)
{
	struct leaders *ls = pass->ls;

	if (--pass->pending)
		return;
	ls->running = false;
	if (pass->conflict)
		ls->again = true;
	else if (ls->on_pass && !ls->stopping && !pass->incomplete)
		ls->on_pass(ls->on_pass_arg, pass->states, pass->nstates, pass->live, pass->nlive, pass->epoch);
	free(pass->states);
	for (int i = 0; i < pass->nmarked; i++)
		free(pass->marked[i]);
	free(pass->marked);
	free(pass->live);
	free(pass);
	if (ls->again && !ls->stopping)
		leaders_start(ls);
}

static bool leaders_live(const struct leaders_pass *pass, int32_t id)
{
	for (int i = 0; i < pass->nlive; i++)
		if (pass->live[i] == id)
			return true;
	return false;
}

static bool leaders_in(const struct znode_replicas *r, int32_t id)
{
	for (int32_t i = 0; i < r->n; i++)
		if (r->ids[i] == id)
			return true;
	return false;
}

/* Keeps partition lp's state (st, or none) for ls->on_pass. */
static void leaders_keep(struct leaders_part *lp, const struct znode_state *st)
{
	struct leaders_pass *pass = lp->pass;
	struct leaders_state *s;

	if (pass->nstates == pass->capstates) {
		int cap = pass->capstates ? pass->capstates * 2 : 64;
		struct leaders_state *p = realloc(pass->states, sizeof(*p) * (size_t)cap);

		if (!p) {
			pass->incomplete = true; /* tell brokers nothing rather than a partial cluster */
			return;
		}
		pass->states = p;
		pass->capstates = cap;
	}
	s = &pass->states[pass->nstates++];
	memset(s, 0, sizeof(*s));
	strcpy(s->topic, lp->topic);
	strcpy(s->topic_id, lp->topic_id);
	s->partition = lp->partition;
	s->replicas = lp->replicas;
	s->has_state = st != NULL;
	if (st)
		s->st = *st;
	else
		s->st.leader = -1;
}

static void leaders_on_written(void *arg, const struct zk_reply *rep)
{
	struct leaders_part *lp = arg;

	if (rep->rc == ZOK)
		leaders_keep(lp, &lp->st);
	else
		lp->pass->incomplete = true;

	if (rep->rc != ZOK && rep->failed_op == 0)
		log_info("partition %s-%d: state not written: %s changed (no longer controller?)", lp->topic,
			 lp->partition, ZNODE_CONTROLLER_EPOCH);
	else if (rep->rc == ZBADVERSION || rep->rc == ZNODEEXISTS)
		lp->pass->conflict = true;
	else if (rep->rc != ZOK && rep->rc != ZCLOSING)
		log_warn("partition %s-%d: writing its state: %s", lp->topic, lp->partition, zerror(rep->rc));
	leaders_pass_end(lp->pass);
	free(lp);
}

static void leaders_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	(void)rep; /* a parent of a state: the create of the state reports what matters */
}

/*
 * Writes st (a new state znode when version < 0, else a set conditional on
 * version); takes lp.  A new state's parents are created one by one, not
 * with zk_ensure_path(): a topic deleted meanwhile must not come back.
 */
static void leaders_write(struct leaders_part *lp, const struct znode_state *st, int32_t version)
{
	char path[384], *doc = znode_state_encode(st);
	struct zk_op ops[2] = {
		{ .type = ZK_OP_CHECK, .path = ZNODE_CONTROLLER_EPOCH, .version = lp->pass->epoch_version },
		{ .type = version < 0 ? ZK_OP_CREATE : ZK_OP_SET, .path = path, .version = version },
	};
	struct zk *zk = lp->pass->ls->zk;
	int err = -ENOMEM;

	log_info("partition %s-%d: leader %d (leader epoch %d)", lp->topic, lp->partition, st->leader,
		 st->leader_epoch);
	snprintf(path, sizeof(path), "%s/%s/partitions", ZNODE_TOPICS, lp->topic);
	if (doc && version < 0) {
		zk_create(zk, path, NULL, -1, false, leaders_ignore, NULL);
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%d", lp->partition);
		zk_create(zk, path, NULL, -1, false, leaders_ignore, NULL);
	} else {
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%d", lp->partition);
	}
	strcat(path, "/state");
	if (doc) {
		ops[1].data = doc;
		ops[1].len = (int)strlen(doc);
		err = zk_multi(zk, ops, 2, leaders_on_written, lp);
	}
	free(doc);
	if (err) {
		leaders_pass_end(lp->pass);
		free(lp);
	}
}

/* The state a partition should have now; false if st stays as it is. */
static bool leaders_next(const struct leaders_pass *pass, const struct znode_replicas *replicas, bool exists,
			 struct znode_state *st)
{
	if (!exists) {
		for (int32_t i = 0; i < replicas->n; i++)
			if (leaders_live(pass, replicas->ids[i])) {
				*st = (struct znode_state){ .leader = replicas->ids[i],
							    .leader_epoch = 0,
							    .isr = { .n = 1, .ids = { replicas->ids[i] } } };
				return true;
			}
		return false; /* no replica live: it stays new, without a state */
	}
	if (st->leader >= 0 && !leaders_live(pass, st->leader)) {
		int32_t gone = st->leader, n = 0;

		for (int32_t i = 0; i < st->isr.n && st->isr.n > 1; i++)
			if (st->isr.ids[i] != gone)
				st->isr.ids[n++] = st->isr.ids[i];
		st->isr.n = st->isr.n > 1 ? n : st->isr.n;
		st->leader = -1;
		st->leader_epoch++;
		return true;
	}
	if (st->leader >= 0)
		return false;
	for (int32_t i = 0; i < replicas->n; i++) {
		int32_t id = replicas->ids[i], n = 0;

		if (!leaders_live(pass, id) || !leaders_in(&st->isr, id))
			continue;
		for (int32_t j = 0; j < st->isr.n; j++)
			if (leaders_live(pass, st->isr.ids[j]))
				st->isr.ids[n++] = st->isr.ids[j];
		st->isr.n = n;
		st->leader = id;
		st->leader_epoch++;
		return true;
	}
	return false;
}

static void leaders_on_state(void *arg, const struct zk_reply *rep)
{
	struct leaders_part *lp = arg;
	struct znode_state st;
	bool exists = rep->rc == ZOK;

	memset(&st, 0, sizeof(st));
	if (exists && (rep->data_len < 0 || znode_state_decode(rep->data, (size_t)rep->data_len, &st))) {
		log_warn("partition %s-%d: its state znode is not Kafka's; left alone", lp->topic, lp->partition);
		exists = false;
		rep = NULL;
	}
	if (rep && (exists || rep->rc == ZNONODE) && leaders_next(lp->pass, &lp->replicas, exists, &st)) {
		st.controller_epoch = lp->pass->epoch;
		lp->st = st;
		leaders_write(lp, &st, exists ? rep->version : -1);
		return;
	}
	if (rep && (exists || rep->rc == ZNONODE))
		leaders_keep(lp, exists ? &st : NULL);
	else if (rep)
		lp->pass->incomplete = true; /* not read: brokers are told only of a complete pass */
	leaders_pass_end(lp->pass);
	free(lp);
}

/* Reads the state of each partition of topic (assignment zt). */
static void leaders_read_states(struct leaders_pass *pass, const char *topic, const struct znode_topic *zt)
{
	_Static_assert(sizeof(zt->topic_id) == sizeof(((struct leaders_part *)0)->topic_id), "topic id size");
	for (int32_t p = 0; p < zt->nparts; p++) {
		struct leaders_part *lp = calloc(1, sizeof(*lp));
		char path[384];

		if (!lp || strlen(topic) >= sizeof(lp->topic)) {
			free(lp);
			continue;
		}
		lp->pass = pass;
		lp->replicas = zt->parts[p];
		lp->partition = p;
		strcpy(lp->topic, topic);
		memcpy(lp->topic_id, zt->topic_id, sizeof(lp->topic_id));
		snprintf(path, sizeof(path), "%s/%s/partitions/%d/state", ZNODE_TOPICS, topic, p);
		pass->pending++;
		if (zk_get(pass->ls->zk, path, false, leaders_on_state, lp)) {
			pass->pending--;
			free(lp);
		}
	}
}

struct leaders_topic {
	struct leaders_pass *pass;
	char name[];
};

static void leaders_on_topic(void *arg, const struct zk_reply *rep)
{
	struct leaders_topic *lt = arg;
	struct znode_topic zt;

	if (rep->rc == ZOK) {
		if (rep->data_len >= 0 && !znode_topic_decode(rep->data, (size_t)rep->data_len, &zt)) {
			leaders_read_states(lt->pass, lt->name, &zt);
			znode_topic_free(&zt);
		} else {
			log_warn("%s/%s is not Kafka's topic assignment; its partitions are left alone", ZNODE_TOPICS,
				 lt->name);
		}
	}
	leaders_pass_end(lt->pass);
	free(lt);
}

static bool leaders_marked(const struct leaders_pass *pass, const char *topic)
{
	for (int i = 0; i < pass->nmarked; i++)
		if (!strcmp(pass->marked[i], topic))
			return true;
	return false;
}

/* Reply to the listing of /admin/delete_topics, which comes before that of /brokers/topics. */
static void leaders_on_marked(void *arg, const struct zk_reply *rep)
{
	struct leaders_pass *pass = arg;

	if (rep->rc == ZOK && rep->nchildren > 0 && (pass->marked = calloc((size_t)rep->nchildren, sizeof(char *))))
		for (int i = 0; i < rep->nchildren; i++)
			if ((pass->marked[pass->nmarked] = strdup(rep->children[i])))
				pass->nmarked++;
	leaders_pass_end(pass);
}

static void leaders_on_topics(void *arg, const struct zk_reply *rep)
{
	struct leaders_pass *pass = arg;

	for (int i = 0; rep->rc == ZOK && i < rep->nchildren; i++) {
		size_t n = strlen(rep->children[i]);
		struct leaders_topic *lt = leaders_marked(pass, rep->children[i]) ? NULL : malloc(sizeof(*lt) + n + 1);
		char path[384];

		if (!lt)
			continue;
		lt->pass = pass;
		memcpy(lt->name, rep->children[i], n + 1);
		snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPICS, lt->name);
		pass->pending++;
		if (zk_get(pass->ls->zk, path, true, leaders_on_topic, lt)) { /* watched: partitions added */
			pass->pending--;
			free(lt);
		}
	}
	leaders_pass_end(pass);
}

static void leaders_start(struct leaders *ls)
{
	struct leaders_pass *pass = calloc(1, sizeof(*pass));

	ls->again = false;
	if (pass)
		pass->live = malloc(sizeof(*pass->live) * (size_t)(ls->nlive > 0 ? ls->nlive : 1));
	if (!pass || !pass->live) {
		if (pass)
			free(pass);
		log_error("controller: out of memory for a leadership pass");
		return;
	}
	memcpy(pass->live, ls->live, sizeof(*pass->live) * (size_t)ls->nlive);
	pass->nlive = ls->nlive;
	pass->epoch = ls->epoch;
	pass->epoch_version = ls->epoch_version;
	pass->ls = ls;
	pass->pending = 2;
	ls->running = true;
	if (zk_children(ls->zk, ZNODE_DELETE_TOPICS, false, leaders_on_marked, pass))
		pass->pending--;
	if (zk_children(ls->zk, ZNODE_TOPICS, true, leaders_on_topics, pass) && --pass->pending == 0) {
		ls->running = false;
		free(pass->live);
		free(pass);
	}
}

void leaders_init(struct leaders *ls, struct zk *zk)
{
	memset(ls, 0, sizeof(*ls));
	ls->zk = zk;
}

void leaders_run(struct leaders *ls, const int32_t *live, int nlive, int32_t controller_epoch, int32_t epoch_version)
{
	int32_t *copy = malloc(sizeof(*copy) * (size_t)(nlive > 0 ? nlive : 1));

	if (!copy || ls->stopping) {
		free(copy);
		return;
	}
	memcpy(copy, live, sizeof(*copy) * (size_t)nlive);
	free(ls->live);
	ls->live = copy;
	ls->nlive = nlive;
	ls->epoch = controller_epoch;
	ls->epoch_version = epoch_version;
	if (ls->running)
		ls->again = true;
	else
		leaders_start(ls);
}

bool leaders_watches(const char *path)
{
	size_t n = strlen(ZNODE_TOPICS);

	return path && !strncmp(path, ZNODE_TOPICS, n) && (!path[n] || (path[n] == '/' && !strchr(path + n + 1, '/')));
}

void leaders_stop(struct leaders *ls)
{
	ls->stopping = true;
	free(ls->live);
	ls->live = NULL;
	ls->nlive = 0;
}
