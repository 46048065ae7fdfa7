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
	struct znode_replicas replicas, adding, removing;
	int32_t partition;
	char topic[256];
	char topic_id[32];
	struct znode_state st; /* read, then being written */
	int32_t version;       /* of the state znode read, -1 when there is none */
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
	else if (!ls->stopping && !pass->incomplete) {
		free(ls->last);
		ls->last = pass->states; /* kept for elections and AlterPartition (leaders_find) */
		ls->nlast = pass->nstates;
		pass->states = NULL;
		if (ls->on_pass)
			ls->on_pass(ls->on_pass_arg, ls->last, ls->nlast, pass->live, pass->nlive, pass->epoch);
	}
	free(pass->states);
	for (int i = 0; i < pass->nmarked; i++)
		free(pass->marked[i]);
	free(pass->marked);
	free(pass->live);
	free(pass);
	if (!ls->again && ls->then_live && !ls->stopping) { /* the bounced brokers' start-up */
		free(ls->live);
		ls->live = ls->then_live;
		ls->nlive = ls->nthen;
		ls->then_live = NULL;
		ls->again = true;
	}
	if (ls->again && !ls->stopping)
		leaders_start(ls);
}

bool leaders_is_live(const int32_t *live, int nlive, int32_t id)
{
	for (int i = 0; i < nlive; i++)
		if (live[i] == id)
			return true;
	return false;
}

bool leaders_in(const struct znode_replicas *r, int32_t id)
{
	for (int32_t i = 0; i < r->n; i++)
		if (r->ids[i] == id)
			return true;
	return false;
}

/* Keeps partition lp's state (st, or none) for ls->on_pass. */
static void leaders_keep(struct leaders_part *lp, const struct znode_state *st, int32_t version)
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
	s->adding = lp->adding;
	s->removing = lp->removing;
	s->has_state = st != NULL;
	s->version = version;
	if (st)
		s->st = *st;
	else
		s->st.leader = -1;
}

static void leaders_on_written(void *arg, const struct zk_reply *rep)
{
	struct leaders_part *lp = arg;

	if (rep->rc == ZOK)
		leaders_keep(lp, &lp->st, lp->version + 1); /* a create gives version 0 */
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
 * version); takes lp.
 */
static void leaders_write(struct leaders_part *lp, const struct znode_state *st, int32_t version)
{
	log_info("partition %s-%d: leader %d (leader epoch %d, isr of %d)", lp->topic, lp->partition, st->leader,
		 st->leader_epoch, st->isr.n);
	if (leaders_state_write(lp->pass->ls->zk, lp->pass->epoch_version, lp->topic, lp->partition, st, version,
				leaders_on_written, lp)) {
		leaders_pass_end(lp->pass);
		free(lp);
	}
}

int leaders_state_write(struct zk *zk, int32_t epoch_version, const char *topic, int32_t partition,
			const struct znode_state *st, int32_t version, zk_done_fn *done, void *arg)
{
	char path[384], *doc = znode_state_encode(st);
	struct zk_op ops[2] = {
		{ .type = ZK_OP_CHECK, .path = ZNODE_CONTROLLER_EPOCH, .version = epoch_version },
		{ .type = version < 0 ? ZK_OP_CREATE : ZK_OP_SET, .path = path, .version = version },
	};
	int err = -ENOMEM;

	snprintf(path, sizeof(path), "%s/%s/partitions", ZNODE_TOPICS, topic);
	if (doc && version < 0) {
		zk_create(zk, path, NULL, -1, false, leaders_ignore, NULL);
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%d", partition);
		zk_create(zk, path, NULL, -1, false, leaders_ignore, NULL);
	} else {
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%d", partition);
	}
	strcat(path, "/state");
	if (doc) {
		ops[1].data = doc;
		ops[1].len = (int)strlen(doc);
		err = zk_multi(zk, ops, 2, done, arg);
	}
	free(doc);
	return err;
}

/* id is live and one of replicas: it may lead or stay in the ISR. */
static bool leaders_eligible(const int32_t *live, int nlive, const struct znode_replicas *replicas, int32_t id)
{
	return leaders_is_live(live, nlive, id) && leaders_in(replicas, id);
}

/*
 * Removes the ISR members not live (or no longer replicas) from st, keeping
 * the last one if none is (Kafka never empties an ISR).
 */
static bool leaders_shrink(const int32_t *live, int nlive, const struct znode_replicas *replicas,
			   struct znode_state *st)
{
	int32_t n = 0, last = st->isr.n ? st->isr.ids[st->isr.n - 1] : -1;
	bool changed;

	for (int32_t i = 0; i < st->isr.n; i++)
		if (leaders_eligible(live, nlive, replicas, st->isr.ids[i]))
			st->isr.ids[n++] = st->isr.ids[i];
	changed = n != st->isr.n;
	if (n == 0 && last >= 0) {
		st->isr.ids[n++] = last;
		changed = st->isr.n != 1;
	}
	st->isr.n = n;
	return changed;
}

/*
 * The state a partition should have now; false if st stays as it is.
 * unclean: unclean.leader.election.enable holds for its topic.
 */
bool leaders_next(const int32_t *live, int nlive, const struct znode_replicas *replicas, bool exists, bool unclean,
		  struct znode_state *st)
{
	int32_t old_leader = st->leader;
	bool isr_changed;

	if (!exists) {
		memset(st, 0, sizeof(*st));
		st->leader = -1;
		for (int32_t i = 0; i < replicas->n; i++)
			if (leaders_is_live(live, nlive, replicas->ids[i]))
				st->isr.ids[st->isr.n++] = replicas->ids[i]; /* Kafka: the live replicas */
		if (!st->isr.n)
			return false; /* no replica live: it stays new, without a state */
		st->leader = st->isr.ids[0];
		return true;
	}
	if (st->leader >= 0 && leaders_eligible(live, nlive, replicas, st->leader)) {
		if (!leaders_shrink(live, nlive, replicas, st))
			return false;
		st->leader_epoch++;
		return true;
	}
	for (int32_t i = 0; i < replicas->n; i++) {
		int32_t id = replicas->ids[i];

		if (leaders_is_live(live, nlive, id) && leaders_in(&st->isr, id)) {
			leaders_shrink(live, nlive, replicas, st);
			st->leader = id;
			st->leader_epoch++;
			return true;
		}
	}
	for (int32_t i = 0; unclean && i < replicas->n; i++)
		if (leaders_is_live(live, nlive, replicas->ids[i])) {
			st->leader = replicas->ids[i];
			st->isr = (struct znode_replicas){ .n = 1, .ids = { st->leader } };
			st->leader_epoch++;
			return true;
		}
	isr_changed = leaders_shrink(live, nlive, replicas, st);
	st->leader = -1;
	if (old_leader < 0 && !isr_changed)
		return false;
	st->leader_epoch++;
	return true;
}

/* Decides and writes (or keeps) lp's state, exists: lp->st was read; takes lp. */
static void leaders_settle(struct leaders_part *lp, bool exists, bool unclean)
{
	struct leaders_pass *pass = lp->pass;
	struct znode_state st = lp->st;

	if (leaders_next(pass->live, pass->nlive, &lp->replicas, exists, unclean, &st)) {
		st.controller_epoch = pass->epoch;
		lp->st = st;
		leaders_write(lp, &st, exists ? lp->version : -1);
		return;
	}
	leaders_keep(lp, exists ? &lp->st : NULL, lp->version);
	leaders_pass_end(pass);
	free(lp);
}

/* unclean.leader.election.enable of a topic's overrides (/config/topics/<t>), else dflt. */
static bool leaders_unclean_of(const struct zk_reply *rep, bool dflt)
{
	struct znode_config cfg;
	bool on = dflt;

	if (rep->rc != ZOK || rep->data_len < 0 || znode_topic_config_decode(rep->data, (size_t)rep->data_len, &cfg))
		return dflt;
	for (int i = 0; i < cfg.n; i++)
		if (!strcmp(cfg.names[i], "unclean.leader.election.enable"))
			on = !strcmp(cfg.values[i], "true");
	znode_topic_config_free(&cfg);
	return on;
}

static void leaders_on_config(void *arg, const struct zk_reply *rep)
{
	struct leaders_part *lp = arg;

	if (rep->rc == ZCLOSING) {
		leaders_pass_end(lp->pass);
		free(lp);
		return;
	}
	leaders_settle(lp, true, leaders_unclean_of(rep, lp->pass->ls->unclean_default));
}

/* True if lp's leader is gone, no live replica is in the ISR, but one is live: only an unclean election elects. */
static bool leaders_unclean_case(const struct leaders_part *lp)
{
	const struct leaders_pass *pass = lp->pass;
	bool replica_live = false;

	if (lp->st.leader >= 0 && leaders_eligible(pass->live, pass->nlive, &lp->replicas, lp->st.leader))
		return false;
	for (int32_t i = 0; i < lp->replicas.n; i++) {
		if (!leaders_is_live(pass->live, pass->nlive, lp->replicas.ids[i]))
			continue;
		if (leaders_in(&lp->st.isr, lp->replicas.ids[i]))
			return false;
		replica_live = true;
	}
	return replica_live;
}

static void leaders_on_state(void *arg, const struct zk_reply *rep)
{
	struct leaders_part *lp = arg;
	bool exists = rep->rc == ZOK;
	char path[384];

	memset(&lp->st, 0, sizeof(lp->st));
	lp->version = -1;
	if (exists && (rep->data_len < 0 || znode_state_decode(rep->data, (size_t)rep->data_len, &lp->st))) {
		log_warn("partition %s-%d: its state znode is not Kafka's; left alone", lp->topic, lp->partition);
		leaders_pass_end(lp->pass);
		free(lp);
		return;
	}
	if (!exists && rep->rc != ZNONODE) {
		lp->pass->incomplete = true; /* not read: brokers are told only of a complete pass */
		leaders_pass_end(lp->pass);
		free(lp);
		return;
	}
	if (exists)
		lp->version = rep->version;
	if (exists && leaders_unclean_case(lp)) { /* the topic's override decides */
		snprintf(path, sizeof(path), "%s/%s", ZNODE_TOPIC_CONFIGS, lp->topic);
		if (!zk_get(lp->pass->ls->zk, path, false, leaders_on_config, lp))
			return;
	}
	leaders_settle(lp, exists, lp->pass->ls->unclean_default);
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
		lp->adding = zt->adding[p];
		lp->removing = zt->removing[p];
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

/* A copy of the n ids of live without those of drop (nd of them), *out_n of them; NULL if out of memory. */
static int32_t *leaders_ids_copy(const int32_t *live, int n, const int32_t *drop, int nd, int *out_n)
{
	int32_t *copy = malloc(sizeof(*copy) * (size_t)(n > 0 ? n : 1));

	*out_n = 0;
	for (int i = 0; copy && i < n; i++)
		if (!leaders_is_live(drop, nd, live[i]))
			copy[(*out_n)++] = live[i];
	return copy;
}

void leaders_run(struct leaders *ls, const int32_t *live, int nlive, int32_t controller_epoch, int32_t epoch_version)
{
	leaders_run_bounced(ls, live, nlive, NULL, 0, controller_epoch, epoch_version);
}

void leaders_run_bounced(struct leaders *ls, const int32_t *live, int nlive, const int32_t *bounced, int nbounced,
			 int32_t controller_epoch, int32_t epoch_version)
{
	int n, nall;
	int32_t *copy = leaders_ids_copy(live, nlive, bounced, nbounced, &n);
	int32_t *all = nbounced || ls->then_live ? leaders_ids_copy(live, nlive, NULL, 0, &nall) : NULL;

	if (!copy || ls->stopping || ((nbounced || ls->then_live) && !all)) {
		free(copy);
		free(all);
		return;
	}
	if (all) { /* the start-up pass: these brokers, after the pass without the bounced ones */
		free(ls->then_live);
		ls->then_live = all;
		ls->nthen = nall;
	}
	if (!nbounced && all)
		free(copy); /* a pass without bounced brokers is still to run: keep its brokers */
	else {
		free(ls->live);
		ls->live = copy;
		ls->nlive = n;
	}
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
	free(ls->then_live);
	ls->then_live = NULL;
	ls->nthen = 0;
	free(ls->last);
	ls->last = NULL;
	ls->nlast = 0;
}

const struct leaders_state *leaders_find(const struct leaders *ls, const char *topic, int32_t partition)
{
	for (int i = 0; i < ls->nlast; i++)
		if (ls->last[i].partition == partition && !strcmp(ls->last[i].topic, topic))
			return &ls->last[i];
	return NULL;
}
