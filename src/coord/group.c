/*
 * group.c - the group coordinator state machine (Kafka's classic protocol,
 * GroupCoordinator.scala / GroupMetadata.scala, single node).
 *
 *                 first JoinGroup
 *      +-------+ ---------------------> +--------------------+
 *      | Empty |                        | PreparingRebalance | <------------+
 *      +-------+ <--------------------- +--------------------+              |
 *        |  ^     join phase ends with        |  join phase ends            |
 *        |  |     no members                  v  (all joined or timeout)    |
 *        |  |                         +----------------------+  member      |
 *        |  |                         | CompletingRebalance  | -----------> |
 *        |  |                         +----------------------+  join/leave/ |
 *        |  |                                 | leader's SyncGroup  expiry  |
 *        |  |                                 v                             |
 *        |  |                              +--------+   join (new member,   |
 *        |  |                              | Stable | ----------------------+
 *        |  |                              +--------+   leader, protocols changed),
 *        v  |                                            leave, session expiry
 *      +------+   DeleteGroups, offsets expired (only from Empty)
 *      | Dead |
 *      +------+
 *
 * Transitions, each through group_set_state():
 *   Empty/Stable/Completing -> Preparing   group_prepare_rebalance()
 *   Preparing -> Completing / Empty        group_complete_join()
 *   Completing -> Stable                   group_sync_leader()
 *   Empty -> Dead                          group_kill() (delete, expiry)
 * A group read back from __consumer_offsets starts Stable (members) or
 * Empty (none) without a transition (group_on_meta()).
 *
 * Join phase: it ends when every known member has sent JoinGroup again (and
 * no member id handed out with MEMBER_ID_REQUIRED is outstanding), or when
 * the largest rebalance timeout of the members passes; then dynamic members
 * that did not rejoin are removed, while static ones stay in the new
 * generation (they learn it when they come back, or leave by session
 * expiry), with the leadership passing to a member that did rejoin; if
 * none did, the phase waits another rebalance timeout (Kafka's
 * onCompleteJoin).  A group leaving Empty waits first
 * group.initial.rebalance.delay.ms, extended by that delay while new
 * members keep arriving, up to the rebalance timeout (InitialDelayedJoin).
 *
 * Sessions: every member has a session timer, re-armed by Heartbeat,
 * SyncGroup, OffsetCommit and the end of a join phase; members waiting in
 * JoinGroup or SyncGroup are kept alive.  An expired member leaves.
 *
 * Static members (group.instance.id) that join again with an empty member
 * id take over their old member id's place: in a Stable group with an
 * unchanged protocol they get a new member id and their old assignment
 * without a rebalance; the old member id is fenced (FENCED_INSTANCE_ID).
 */
#include "coord/group.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"

struct group_protocol {
	char *name;
	uint8_t *metadata;
	int32_t len;
};

struct group_member {
	struct group *grp;
	char *member_id;
	struct kstr group_instance_id; /* owned, every byte kept; p NULL: dynamic member */
	char *client_id, *client_host;
	int32_t session_timeout_ms, rebalance_timeout_ms;
	struct group_protocol *protocols;
	int32_t nprotocols;
	uint8_t *assignment;
	int32_t assignment_len;
	void *join_waiter, *sync_waiter; /* parked JoinGroup / SyncGroup */
	bool pending;                    /* id handed out (MEMBER_ID_REQUIRED), not yet joined */
	struct loop_timer session;
	struct group_member *next;
};

struct group {
	struct group_coord *gc;
	struct kstr name; /* owned, NUL-terminated copy; may hold NUL bytes: use name.len */
	enum group_state state;
	int32_t generation;
	char *protocol_type, *protocol_name, *leader; /* NULL when none */
	struct group_member *members;                 /* joined and pending */
	int32_t nmembers;                             /* joined only */
	struct loop_timer join_timer;                 /* end of the join phase */
	int64_t rebalance_start_ms;
	bool initial_delay, new_member_added;
	int64_t state_ts_ms; /* wall clock of the last state change, -1 unknown */
	struct group_offsets offsets;
	struct group *hnext;
};

struct group_coord {
	struct loop *loop;
	struct group_coord_cfg cfg;
	struct group_coord_ops ops;
	struct group_store *store;
	struct group **buckets;
	size_t nbuckets, ngroups;
	struct group **list; /* group_coord_groups() snapshot */
	struct loop_timer expiry;
	uint64_t member_seq;
	uint8_t *owned;           /* cluster mode: GROUP_PART_* per partition; NULL: all (single node) */
	struct loop_timer loader; /* loads the partitions in GROUP_PART_LOADING */
};

/* Cluster mode: where this broker stands with one __consumer_offsets partition. */
enum { GROUP_PART_NOT_OWNED = 0, GROUP_PART_LOADING, GROUP_PART_LOADED };

static const char *const group_state_names[] = {
	[GROUP_EMPTY] = "Empty",
	[GROUP_PREPARING_REBALANCE] = "PreparingRebalance",
	[GROUP_COMPLETING_REBALANCE] = "CompletingRebalance",
	[GROUP_STABLE] = "Stable",
	[GROUP_DEAD] = "Dead",
};

static void group_prepare_rebalance(struct group *grp, const char *why);
static void group_try_complete_join(struct group *grp);

const char *group_state_name(enum group_state st)
{
	return group_state_names[st];
}

static void group_set_state(struct group *grp, enum group_state to)
{
	bool ok;

	switch (to) {
	case GROUP_PREPARING_REBALANCE:
		ok = grp->state == GROUP_EMPTY || grp->state == GROUP_STABLE ||
		     grp->state == GROUP_COMPLETING_REBALANCE;
		break;
	case GROUP_COMPLETING_REBALANCE:
		ok = grp->state == GROUP_PREPARING_REBALANCE;
		break;
	case GROUP_STABLE:
		ok = grp->state == GROUP_COMPLETING_REBALANCE;
		break;
	case GROUP_EMPTY:
		ok = grp->state == GROUP_PREPARING_REBALANCE;
		break;
	case GROUP_DEAD:
		ok = grp->state != GROUP_DEAD;
		break;
	default:
		ok = false;
	}
	assert(ok);
	(void)ok;
	log_debug(LOGC_GROUP, "group", "group '%.*s': %s -> %s (generation %d)", grp->name.len, grp->name.p,
		  group_state_names[grp->state], group_state_names[to], grp->generation);
	grp->state = to;
	grp->state_ts_ms = clock_wall_ms();
}

/* ---- small helpers ---- */

static char *group_kstrdup(struct kstr s)
{
	char *p;

	if (!s.p || s.len < 0)
		return NULL;
	p = strndup(s.p, (size_t)s.len);
	if (!p) {
		log_error("out of memory in the group coordinator");
		abort(); /* like req_alloc: a system out-of-memory is not recoverable here */
	}
	return p;
}

/* An owned copy of a client-supplied name, every byte kept (NUL included). */
static struct kstr group_name_dup(struct kstr s)
{
	char *p = malloc((size_t)s.len + 1);

	if (!p) {
		log_error("out of memory in the group coordinator");
		abort();
	}
	memcpy(p, s.p, (size_t)s.len);
	p[s.len] = '\0';
	return (struct kstr){ p, s.len };
}

static void *group_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		log_error("out of memory in the group coordinator");
		abort();
	}
	return p;
}

static struct kstr group_kstr(const char *s)
{
	return s ? kstr_c(s) : KSTR_NULL;
}

static bool group_kstr_is(struct kstr a, const char *s)
{
	return s ? a.p && kstr_eq_c(a, s) : !a.p;
}

static int64_t group_now(void)
{
	return clock_mono_ms();
}

/* ---- the table of groups ---- */

static size_t group_hash(struct kstr name, size_t nbuckets)
{
	uint64_t h = 1469598103934665603ull;

	for (int32_t i = 0; i < name.len; i++)
		h = (h ^ (uint8_t)name.p[i]) * 1099511628211ull;
	return (size_t)(h % nbuckets);
}

struct group *group_find(struct group_coord *gc, struct kstr group_id)
{
	struct group *grp;

	if (!group_id.p)
		return NULL;
	for (grp = gc->buckets[group_hash(group_id, gc->nbuckets)]; grp; grp = grp->hnext)
		if (kstr_eq(group_id, grp->name))
			return grp;
	return NULL;
}

static void group_rehash(struct group_coord *gc)
{
	size_t n = gc->nbuckets * 4;
	struct group **nb = group_xcalloc(n, sizeof(*nb));

	for (size_t i = 0; i < gc->nbuckets; i++)
		while (gc->buckets[i]) {
			struct group *grp = gc->buckets[i];
			size_t h = group_hash(grp->name, n);

			gc->buckets[i] = grp->hnext;
			grp->hnext = nb[h];
			nb[h] = grp;
		}
	free(gc->buckets);
	gc->buckets = nb;
	gc->nbuckets = n;
}

static void group_on_join_timer(struct loop_timer *t);

static struct group *group_create(struct group_coord *gc, struct kstr group_id)
{
	struct group *grp = group_xcalloc(1, sizeof(*grp));
	size_t h;

	if (gc->ngroups >= gc->nbuckets * 2)
		group_rehash(gc);
	h = group_hash(group_id, gc->nbuckets);
	grp->gc = gc;
	grp->name = group_name_dup(group_id);
	grp->state = GROUP_EMPTY;
	grp->state_ts_ms = -1;
	group_store_offsets_init(&grp->offsets);
	loop_timer_init(&grp->join_timer, group_on_join_timer);
	grp->hnext = gc->buckets[h];
	gc->buckets[h] = grp;
	gc->ngroups++;
	log_debug(LOGC_GROUP, "group", "group '%.*s' created", grp->name.len, grp->name.p);
	return grp;
}

/* ---- members ---- */

static void group_protocols_free(struct group_member *m)
{
	for (int32_t i = 0; i < m->nprotocols; i++) {
		free(m->protocols[i].name);
		free(m->protocols[i].metadata);
	}
	free(m->protocols);
	m->protocols = NULL;
	m->nprotocols = 0;
}

static void group_set_protocols(struct group_member *m, const struct group_protocol_arg *p, int32_t n)
{
	group_protocols_free(m);
	m->protocols = group_xcalloc((size_t)n, sizeof(*m->protocols));
	m->nprotocols = n;
	for (int32_t i = 0; i < n; i++) {
		m->protocols[i].name = group_kstrdup(p[i].name.p ? p[i].name : KSTR(""));
		m->protocols[i].len = p[i].metadata.len > 0 ? p[i].metadata.len : 0;
		m->protocols[i].metadata = group_xcalloc((size_t)m->protocols[i].len, 1);
		if (m->protocols[i].len)
			memcpy(m->protocols[i].metadata, p[i].metadata.p, (size_t)m->protocols[i].len);
	}
}

static void group_set_assignment(struct group_member *m, const void *p, int32_t len)
{
	free(m->assignment);
	m->assignment_len = p && len > 0 ? len : 0;
	m->assignment = group_xcalloc((size_t)m->assignment_len, 1);
	if (p && m->assignment_len)
		memcpy(m->assignment, p, (size_t)m->assignment_len);
}

static const struct group_protocol *group_member_protocol(const struct group_member *m, const char *name)
{
	for (int32_t i = 0; name && i < m->nprotocols; i++)
		if (!strcmp(m->protocols[i].name, name))
			return &m->protocols[i];
	return NULL;
}

static void group_on_session_timer(struct loop_timer *t);

static void group_touch(struct group_member *m)
{
	loop_timer_set(m->grp->gc->loop, &m->session, group_now() + m->session_timeout_ms);
}

static char *group_new_member_id(struct group_coord *gc, struct kstr prefix)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%.*s-%016llx-%06llx",
		 prefix.p && prefix.len > 0 ? (int)(prefix.len > 200 ? 200 : prefix.len) : 0, prefix.p ? prefix.p : "",
		 (unsigned long long)clock_mono_us(), (unsigned long long)++gc->member_seq);
	return group_kstrdup(kstr_c(buf));
}

static struct group_member *group_member_add(struct group *grp, char *member_id, const struct group_join_args *a)
{
	struct group_member *m = group_xcalloc(1, sizeof(*m)), **pp = &grp->members;

	m->grp = grp;
	m->member_id = member_id;
	m->group_instance_id = a->group_instance_id.p ? group_name_dup(a->group_instance_id) : KSTR_NULL;
	m->client_id = group_kstrdup(a->client_id.p ? a->client_id : KSTR(""));
	m->client_host = group_kstrdup(a->client_host.p ? a->client_host : KSTR(""));
	m->session_timeout_ms = a->session_timeout_ms;
	m->rebalance_timeout_ms = a->rebalance_timeout_ms;
	group_set_protocols(m, a->protocols, a->nprotocols);
	loop_timer_init(&m->session, group_on_session_timer);
	while (*pp) /* keep join order: the first member becomes the leader */
		pp = &(*pp)->next;
	*pp = m;
	return m;
}

static void group_member_free(struct group *grp, struct group_member *m)
{
	struct group_member **pp = &grp->members;

	while (*pp != m)
		pp = &(*pp)->next;
	*pp = m->next;
	if (!m->pending)
		grp->nmembers--;
	loop_timer_cancel(grp->gc->loop, &m->session);
	group_protocols_free(m);
	free(m->member_id);
	free((char *)m->group_instance_id.p);
	free(m->client_id);
	free(m->client_host);
	free(m->assignment);
	free(m);
}

static struct group_member *group_member_find(const struct group *grp, struct kstr member_id)
{
	for (struct group_member *m = grp->members; m; m = m->next)
		if (member_id.p && kstr_eq_c(member_id, m->member_id))
			return m;
	return NULL;
}

static struct group_member *group_static_find(const struct group *grp, struct kstr instance_id)
{
	for (struct group_member *m = grp->members; m; m = m->next)
		if (instance_id.p && m->group_instance_id.p && kstr_eq(instance_id, m->group_instance_id))
			return m;
	return NULL;
}

/* Kafka's isStaticMemberFenced: the instance id belongs to another member id. */
static bool group_fenced(const struct group *grp, struct kstr member_id, struct kstr instance_id)
{
	struct group_member *m = group_static_find(grp, instance_id);

	return m && !(member_id.p && kstr_eq_c(member_id, m->member_id));
}

/* ---- answering waiters ---- */

static void group_join_answer(struct group_member *m, int16_t error, bool with_members);

static void group_join_error(struct group_coord *gc, void *waiter, int16_t error, struct kstr member_id)
{
	struct group_join_result res = {
		.error = error,
		.generation = -1,
		.protocol_type = KSTR_NULL,
		.protocol_name = KSTR_NULL,
		.leader = KSTR(""),
		.member_id = member_id.p ? member_id : KSTR(""),
	};

	gc->ops.join_done(waiter, &res);
}

static void group_sync_answer(struct group_coord *gc, void *waiter, int16_t error, const struct group_member *m)
{
	struct group_sync_result res = { .error = error, .protocol_type = KSTR_NULL, .protocol_name = KSTR_NULL };

	if (!error && m) {
		res.protocol_type = group_kstr(m->grp->protocol_type);
		res.protocol_name = group_kstr(m->grp->protocol_name);
		res.assignment = (struct bytes){ m->assignment, m->assignment_len };
	}
	gc->ops.sync_done(waiter, &res);
}

/* Answers and clears whatever m is waiting in. */
static void group_member_release(struct group_member *m, int16_t error)
{
	void *jw = m->join_waiter, *sw = m->sync_waiter;

	m->join_waiter = m->sync_waiter = NULL;
	if (jw)
		group_join_error(m->grp->gc, jw, error, kstr_c(m->member_id));
	if (sw)
		group_sync_answer(m->grp->gc, sw, error, NULL);
}

static void group_fill_info(const struct group_member *m, struct group_member_info *info, bool with_data)
{
	const struct group_protocol *p = with_data ? group_member_protocol(m, m->grp->protocol_name) : NULL;

	info->member_id = kstr_c(m->member_id);
	info->group_instance_id = m->group_instance_id;
	info->client_id = kstr_c(m->client_id);
	info->client_host = kstr_c(m->client_host);
	info->metadata = p ? (struct bytes){ p->metadata, p->len } : (struct bytes){ (const uint8_t *)"", 0 };
	info->assignment = with_data ? (struct bytes){ m->assignment, m->assignment_len }
				     : (struct bytes){ (const uint8_t *)"", 0 };
}

/* Answers m's JoinGroup with the current generation (members: to the leader). */
static void group_join_answer(struct group_member *m, int16_t error, bool with_members)
{
	struct group *grp = m->grp;
	struct group_member_info *infos = NULL;
	struct group_join_result res = {
		.error = error,
		.generation = grp->generation,
		.protocol_type = group_kstr(grp->protocol_type),
		.protocol_name = group_kstr(grp->protocol_name),
		.leader = kstr_c(grp->leader ? grp->leader : ""),
		.member_id = kstr_c(m->member_id),
	};
	void *waiter = m->join_waiter;
	int32_t n = 0;

	m->join_waiter = NULL;
	if (with_members && grp->leader && !strcmp(grp->leader, m->member_id)) {
		infos = group_xcalloc((size_t)grp->nmembers, sizeof(*infos));
		for (struct group_member *o = grp->members; o; o = o->next)
			if (!o->pending)
				group_fill_info(o, &infos[n++], true);
	}
	res.members = infos;
	res.nmembers = n;
	grp->gc->ops.join_done(waiter, &res);
	free(infos);
}

/* ---- persistence ---- */

/* Writes the group metadata record (acks=1: not waited for). */
static void group_persist(struct group *grp)
{
	struct group_store_member *mbs = group_xcalloc((size_t)grp->nmembers, sizeof(*mbs));
	struct group_store_meta meta = {
		.protocol_type = group_kstr(grp->protocol_type),
		.generation = grp->generation,
		.protocol_name = group_kstr(grp->protocol_name),
		.leader = group_kstr(grp->leader),
		.state_ts_ms = grp->state_ts_ms,
		.members = mbs,
	};
	struct part *part;
	int err;

	for (struct group_member *m = grp->members; m; m = m->next) {
		const struct group_protocol *p = group_member_protocol(m, grp->protocol_name);
		struct group_store_member *s = &mbs[meta.nmembers];

		if (m->pending)
			continue;
		meta.nmembers++;
		s->member_id = kstr_c(m->member_id);
		s->group_instance_id = m->group_instance_id;
		s->client_id = kstr_c(m->client_id);
		s->client_host = kstr_c(m->client_host);
		s->rebalance_timeout_ms = m->rebalance_timeout_ms;
		s->session_timeout_ms = m->session_timeout_ms;
		s->subscription = p ? (struct bytes){ p->metadata, p->len } : (struct bytes){ NULL, 0 };
		s->assignment = (struct bytes){ m->assignment, m->assignment_len };
	}
	err = group_store_write(grp->gc->store, grp->name, NULL, 0, false, &meta, false, clock_wall_ms(), &part);
	if (err)
		log_error("group '%.*s': cannot write its metadata to __consumer_offsets: %s", grp->name.len,
			  grp->name.p, strerror(-err));
	free(mbs);
}

/* ---- the join phase ---- */

static int32_t group_rebalance_timeout(const struct group *grp)
{
	int32_t t = 0;

	for (struct group_member *m = grp->members; m; m = m->next)
		if (!m->pending && m->rebalance_timeout_ms > t)
			t = m->rebalance_timeout_ms;
	return t;
}

static bool group_all_joined(const struct group *grp)
{
	for (struct group_member *m = grp->members; m; m = m->next)
		if (m->pending || !m->join_waiter)
			return false;
	return true;
}

static void group_prepare_rebalance(struct group *grp, const char *why)
{
	struct group_coord *gc = grp->gc;
	int64_t now = group_now(), timeout = group_rebalance_timeout(grp);

	if (grp->state == GROUP_COMPLETING_REBALANCE)
		for (struct group_member *m = grp->members; m; m = m->next) {
			group_set_assignment(m, NULL, 0);
			if (m->sync_waiter) {
				void *w = m->sync_waiter;

				m->sync_waiter = NULL;
				group_sync_answer(gc, w, KERR_REBALANCE_IN_PROGRESS, NULL);
			}
		}
	grp->initial_delay = grp->state == GROUP_EMPTY && gc->cfg.initial_rebalance_delay_ms > 0;
	grp->new_member_added = false;
	group_set_state(grp, GROUP_PREPARING_REBALANCE);
	log_info("group '%.*s': preparing to rebalance (generation %d): %s", grp->name.len, grp->name.p,
		 grp->generation, why);
	grp->rebalance_start_ms = now;
	if (grp->initial_delay)
		timeout = timeout < gc->cfg.initial_rebalance_delay_ms ? timeout : gc->cfg.initial_rebalance_delay_ms;
	loop_timer_set(gc->loop, &grp->join_timer, now + timeout);
}

/* Kafka's selectProtocol: the protocol all members support with most first-choice votes. */
static const char *group_select_protocol(const struct group *grp)
{
	const struct group_member *first = grp->members;
	const char *best = NULL;
	int best_votes = -1;

	while (first && first->pending)
		first = first->next;
	for (int32_t i = 0; first && i < first->nprotocols; i++) {
		const char *cand = first->protocols[i].name;
		int votes = 0;
		bool all = true;

		for (const struct group_member *m = grp->members; m && all; m = m->next)
			all = m->pending || group_member_protocol(m, cand);
		if (!all)
			continue;
		for (const struct group_member *m = grp->members; m; m = m->next)
			for (int32_t j = 0; !m->pending && j < m->nprotocols; j++) {
				bool supported = true;

				for (const struct group_member *o = grp->members; o && supported; o = o->next)
					supported = o->pending || group_member_protocol(o, m->protocols[j].name);
				if (supported) {
					votes += !strcmp(m->protocols[j].name, cand);
					break;
				}
			}
		if (votes > best_votes) {
			best = cand;
			best_votes = votes;
		}
	}
	return best;
}

/*
 * Kafka's maybeElectNewJoinedLeader: a leader that has not rejoined (a
 * static member kept in the group) hands over to one that has.  False
 * when no member has rejoined.
 */
static bool group_elect_joined_leader(struct group *grp)
{
	struct group_member *leader = grp->leader ? group_member_find(grp, kstr_c(grp->leader)) : NULL, *m;

	if (leader && leader->join_waiter)
		return true;
	for (m = grp->members; m && (m->pending || !m->join_waiter); m = m->next)
		;
	if (!m)
		return false;
	free(grp->leader);
	grp->leader = group_kstrdup(kstr_c(m->member_id));
	return true;
}

static void group_complete_join(struct group *grp)
{
	struct group_member *m, *next;

	loop_timer_cancel(grp->gc->loop, &grp->join_timer);
	grp->initial_delay = false;
	for (m = grp->members; m; m = next) {
		next = m->next;
		/* static members stay until their session expires (KIP-345) */
		if (!m->pending && !m->join_waiter && !m->group_instance_id.p) {
			log_info("group '%.*s': member '%s' did not rejoin in time, removed", grp->name.len,
				 grp->name.p, m->member_id);
			group_member_release(m, KERR_UNKNOWN_MEMBER_ID);
			group_member_free(grp, m);
		}
	}
	if (grp->nmembers > 0 && !group_elect_joined_leader(grp)) {
		/* only static members that have not rejoined: wait another rebalance timeout */
		log_info("group '%.*s': no member rejoined, waiting for them or their session timeouts", grp->name.len,
			 grp->name.p);
		loop_timer_set(grp->gc->loop, &grp->join_timer, group_now() + group_rebalance_timeout(grp));
		return;
	}
	grp->generation++;
	free(grp->protocol_name);
	grp->protocol_name = NULL;
	if (grp->nmembers == 0) {
		free(grp->leader);
		grp->leader = NULL;
		group_set_state(grp, GROUP_EMPTY);
		log_info("group '%.*s': empty at generation %d", grp->name.len, grp->name.p, grp->generation);
		group_persist(grp);
		return;
	}
	grp->protocol_name = group_kstrdup(kstr_c(group_select_protocol(grp)));
	group_set_state(grp, GROUP_COMPLETING_REBALANCE);
	log_info("group '%.*s': generation %d with %d members, protocol '%s', leader '%s'", grp->name.len, grp->name.p,
		 grp->generation, grp->nmembers, grp->protocol_name, grp->leader);
	for (m = grp->members; m; m = m->next)
		if (!m->pending) {
			if (m->join_waiter) /* a static member that has not rejoined learns the generation later */
				group_join_answer(m, KERR_NONE, true);
			group_touch(m);
		}
}

static void group_try_complete_join(struct group *grp)
{
	if (grp->state == GROUP_PREPARING_REBALANCE && !grp->initial_delay && group_all_joined(grp))
		group_complete_join(grp);
}

static void group_on_join_timer(struct loop_timer *t)
{
	struct group *grp = (struct group *)((char *)t - offsetof(struct group, join_timer));
	int64_t now = group_now(), end = grp->rebalance_start_ms + group_rebalance_timeout(grp);

	if (grp->state != GROUP_PREPARING_REBALANCE)
		return;
	if (grp->initial_delay && grp->new_member_added && now < end) {
		int64_t delay = grp->gc->cfg.initial_rebalance_delay_ms;

		grp->new_member_added = false;
		loop_timer_set(grp->gc->loop, t, now + (end - now < delay ? end - now : delay));
		return;
	}
	group_complete_join(grp);
}

/* Stable / Completing / Empty: start a rebalance; then see whether it is already complete. */
static void group_rebalance(struct group *grp, const char *why)
{
	if (grp->state != GROUP_PREPARING_REBALANCE && grp->state != GROUP_DEAD)
		group_prepare_rebalance(grp, why);
	group_try_complete_join(grp);
}

/* Parks a JoinGroup for m, answering an older one still parked. */
static void group_park_join(struct group_member *m, void *waiter)
{
	if (m->join_waiter)
		group_join_error(m->grp->gc, m->join_waiter, KERR_REBALANCE_IN_PROGRESS, kstr_c(m->member_id));
	m->join_waiter = waiter;
}

static void group_member_update(struct group_member *m, const struct group_join_args *a)
{
	group_set_protocols(m, a->protocols, a->nprotocols);
	m->session_timeout_ms = a->session_timeout_ms;
	m->rebalance_timeout_ms = a->rebalance_timeout_ms;
}

static void group_add_and_rebalance(struct group *grp, struct group_member *m, const struct group_join_args *a,
				    void *waiter)
{
	if (m->pending) {
		m->pending = false;
		group_member_update(m, a);
	}
	grp->nmembers++;
	m->join_waiter = waiter;
	grp->new_member_added = true;
	if (!grp->leader)
		grp->leader = group_kstrdup(kstr_c(m->member_id));
	group_touch(m);
	group_rebalance(grp, "a new member joined");
}

/* ---- JoinGroup ---- */

/* Kafka's protocol checks: a type and protocols, and (non-empty group) a match. */
static bool group_protocols_ok(const struct group *grp, const struct group_join_args *a)
{
	if (!a->protocol_type.p || a->protocol_type.len == 0 || a->nprotocols <= 0)
		return false;
	if (grp->state == GROUP_EMPTY && grp->nmembers == 0)
		return true;
	if (!grp->protocol_type || !kstr_eq_c(a->protocol_type, grp->protocol_type))
		return false;
	for (int32_t i = 0; i < a->nprotocols; i++) {
		bool all = true;
		char *name = group_kstrdup(a->protocols[i].name.p ? a->protocols[i].name : KSTR(""));

		for (const struct group_member *m = grp->members; m && all; m = m->next)
			all = m->pending || group_member_protocol(m, name);
		free(name);
		if (all)
			return true;
	}
	return false;
}

static bool group_same_protocols(const struct group_member *m, const struct group_join_args *a)
{
	if (m->nprotocols != a->nprotocols)
		return false;
	for (int32_t i = 0; i < a->nprotocols; i++) {
		const struct group_protocol *p = &m->protocols[i];
		int32_t len = a->protocols[i].metadata.len > 0 ? a->protocols[i].metadata.len : 0;

		if (!group_kstr_is(a->protocols[i].name, p->name) || len != p->len ||
		    (len && memcmp(a->protocols[i].metadata.p, p->metadata, (size_t)len)))
			return false;
	}
	return true;
}

/* A static member joins again with an empty member id: it replaces its old member id. */
static void group_join_static_again(struct group *grp, struct group_member *m, const struct group_join_args *a,
				    void *waiter)
{
	char *old_id = m->member_id;
	bool same = false;

	for (int32_t i = 0; i < a->nprotocols && grp->protocol_name; i++)
		same = same || group_kstr_is(a->protocols[i].name, grp->protocol_name);
	group_member_release(m, KERR_FENCED_INSTANCE_ID);
	m->member_id = group_new_member_id(grp->gc, a->group_instance_id);
	log_info("group '%.*s': static member '%.*s' rejoined as '%s', fencing '%s'", grp->name.len, grp->name.p,
		 m->group_instance_id.len, m->group_instance_id.p, m->member_id, old_id);
	free(m->client_id);
	m->client_id = group_kstrdup(a->client_id.p ? a->client_id : KSTR(""));
	group_member_update(m, a);
	group_touch(m);
	m->join_waiter = waiter;
	if (grp->state == GROUP_STABLE && same) {
		/* answered with the old leader id: the new member must not think it leads */
		group_join_answer(m, KERR_NONE, false);
		if (grp->leader && !strcmp(grp->leader, old_id)) {
			free(grp->leader);
			grp->leader = group_kstrdup(kstr_c(m->member_id));
		}
		group_persist(grp);
	} else {
		if (grp->leader && !strcmp(grp->leader, old_id)) {
			free(grp->leader);
			grp->leader = group_kstrdup(kstr_c(m->member_id));
		}
		group_rebalance(grp, "a static member rejoined with other protocols");
	}
	free(old_id);
}

static void group_join_new(struct group *grp, const struct group_join_args *a, void *waiter)
{
	struct group_member *m = group_static_find(grp, a->group_instance_id);

	if (m && !m->pending) {
		group_join_static_again(grp, m, a, waiter);
		return;
	}
	if (grp->nmembers >= grp->gc->cfg.max_size) {
		group_join_error(grp->gc, waiter, KERR_GROUP_MAX_SIZE_REACHED, a->member_id);
		return;
	}
	m = group_member_add(
		grp, group_new_member_id(grp->gc, a->group_instance_id.p ? a->group_instance_id : a->client_id), a);
	if (!grp->protocol_type)
		grp->protocol_type = group_kstrdup(a->protocol_type);
	if (a->require_known_member_id && !a->group_instance_id.p) {
		/* KIP-394: hand out the id; the member joins again with it */
		m->pending = true;
		group_touch(m);
		group_join_error(grp->gc, waiter, KERR_MEMBER_ID_REQUIRED, kstr_c(m->member_id));
		return;
	}
	group_add_and_rebalance(grp, m, a, waiter);
}

static void group_join_known(struct group *grp, const struct group_join_args *a, void *waiter)
{
	struct group_member *m = group_member_find(grp, a->member_id);

	if (a->group_instance_id.p && group_fenced(grp, a->member_id, a->group_instance_id)) {
		group_join_error(grp->gc, waiter, KERR_FENCED_INSTANCE_ID, a->member_id);
		return;
	}
	if (m && m->pending) {
		group_add_and_rebalance(grp, m, a, waiter);
		return;
	}
	if (!m || grp->state == GROUP_EMPTY || grp->state == GROUP_DEAD) {
		group_join_error(grp->gc, waiter, KERR_UNKNOWN_MEMBER_ID, a->member_id);
		return;
	}
	group_touch(m);
	if (grp->state == GROUP_PREPARING_REBALANCE || !group_same_protocols(m, a) ||
	    (grp->state == GROUP_STABLE && grp->leader && !strcmp(grp->leader, m->member_id))) {
		group_member_update(m, a);
		group_park_join(m, waiter);
		group_rebalance(grp, "a member joined again");
		return;
	}
	/* Completing or Stable, nothing changed: the current generation again */
	group_park_join(m, waiter);
	group_join_answer(m, KERR_NONE, grp->state == GROUP_COMPLETING_REBALANCE);
}

void group_join(struct group_coord *gc, const struct group_join_args *a, void *waiter)
{
	struct group *grp = group_find(gc, a->group_id);
	bool new_member = !a->member_id.p || a->member_id.len == 0;
	int16_t err = KERR_NONE;

	if (!a->group_id.p || a->group_id.len == 0)
		err = KERR_INVALID_GROUP_ID;
	else if ((err = group_coord_owner_kerr(gc, a->group_id)))
		;
	else if (a->session_timeout_ms < gc->cfg.min_session_timeout_ms ||
		 a->session_timeout_ms > gc->cfg.max_session_timeout_ms)
		err = KERR_INVALID_SESSION_TIMEOUT;
	else if (!grp && !new_member)
		err = KERR_UNKNOWN_MEMBER_ID;
	else if (grp && grp->state == GROUP_DEAD)
		err = KERR_COORDINATOR_NOT_AVAILABLE;
	else if (!group_protocols_ok(grp ? grp : &(struct group){ .state = GROUP_EMPTY }, a))
		err = KERR_INCONSISTENT_GROUP_PROTOCOL;
	if (err) {
		group_join_error(gc, waiter, err, a->member_id);
		return;
	}
	if (!grp)
		grp = group_create(gc, a->group_id);
	if (new_member)
		group_join_new(grp, a, waiter);
	else
		group_join_known(grp, a, waiter);
}

/* ---- SyncGroup, Heartbeat, LeaveGroup, sessions ---- */

/* The leader's SyncGroup: store every assignment, persist, go Stable, answer all. */
static void group_sync_leader(struct group *grp, const struct group_sync_args *a)
{
	struct group_member *m;

	for (m = grp->members; m; m = m->next)
		group_set_assignment(m, NULL, 0);
	for (int32_t i = 0; i < a->nassignments; i++) {
		m = group_member_find(grp, a->assignments[i].member_id);
		if (m && !m->pending)
			group_set_assignment(m, a->assignments[i].assignment.p, a->assignments[i].assignment.len);
	}
	group_persist(grp);
	group_set_state(grp, GROUP_STABLE);
	for (m = grp->members; m; m = m->next)
		if (m->sync_waiter) {
			void *w = m->sync_waiter;

			m->sync_waiter = NULL;
			group_sync_answer(grp->gc, w, KERR_NONE, m);
		}
}

/* Member, instance and generation checks shared by SyncGroup and Heartbeat. */
static int16_t group_member_check(struct group *grp, struct kstr member_id, struct kstr instance_id, int32_t generation,
				  struct group_member **out)
{
	struct group_member *m;

	if (!grp)
		return KERR_UNKNOWN_MEMBER_ID;
	if (grp->state == GROUP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (instance_id.p && group_fenced(grp, member_id, instance_id))
		return KERR_FENCED_INSTANCE_ID;
	m = group_member_find(grp, member_id);
	if (!m || m->pending || grp->state == GROUP_EMPTY)
		return KERR_UNKNOWN_MEMBER_ID;
	if (generation != grp->generation)
		return KERR_ILLEGAL_GENERATION;
	*out = m;
	return KERR_NONE;
}

void group_sync(struct group_coord *gc, const struct group_sync_args *a, void *waiter)
{
	struct group *grp = group_find(gc, a->group_id);
	struct group_member *m = NULL;
	int16_t err = group_coord_owner_kerr(gc, a->group_id);

	if (!err)
		err = group_member_check(grp, a->member_id, a->group_instance_id, a->generation, &m);

	if (!err && ((a->protocol_type.p && !group_kstr_is(a->protocol_type, grp->protocol_type)) ||
		     (a->protocol_name.p && !group_kstr_is(a->protocol_name, grp->protocol_name))))
		err = KERR_INCONSISTENT_GROUP_PROTOCOL;
	if (!err && grp->state == GROUP_PREPARING_REBALANCE)
		err = KERR_REBALANCE_IN_PROGRESS;
	if (err) {
		group_sync_answer(gc, waiter, err, NULL);
		return;
	}
	group_touch(m);
	if (grp->state == GROUP_STABLE) {
		group_sync_answer(gc, waiter, KERR_NONE, m);
		return;
	}
	if (m->sync_waiter)
		group_sync_answer(gc, m->sync_waiter, KERR_REBALANCE_IN_PROGRESS, NULL);
	m->sync_waiter = waiter;
	if (grp->leader && !strcmp(grp->leader, m->member_id))
		group_sync_leader(grp, a);
}

int16_t group_heartbeat(struct group_coord *gc, struct kstr group_id, struct kstr member_id,
			struct kstr group_instance_id, int32_t generation)
{
	struct group *grp = group_find(gc, group_id);
	struct group_member *m = NULL;
	int16_t err = group_coord_owner_kerr(gc, group_id);

	if (!err)
		err = group_member_check(grp, member_id, group_instance_id, generation, &m);
	if (err)
		return err;
	group_touch(m);
	return grp->state == GROUP_PREPARING_REBALANCE ? KERR_REBALANCE_IN_PROGRESS : KERR_NONE;
}

/* A member leaves (LeaveGroup, session expiry): rebalance the others. */
static void group_remove_member(struct group *grp, struct group_member *m, const char *why)
{
	bool pending = m->pending;

	log_info("group '%.*s': member '%s' %s", grp->name.len, grp->name.p, m->member_id, why);
	group_member_release(m, KERR_UNKNOWN_MEMBER_ID);
	if (grp->leader && !strcmp(grp->leader, m->member_id)) {
		free(grp->leader);
		grp->leader = NULL;
	}
	group_member_free(grp, m);
	if (pending || grp->state == GROUP_PREPARING_REBALANCE)
		group_try_complete_join(grp);
	else if (grp->state == GROUP_STABLE || grp->state == GROUP_COMPLETING_REBALANCE)
		group_rebalance(grp, why);
}

int16_t group_leave(struct group_coord *gc, struct kstr group_id, struct kstr member_id, struct kstr group_instance_id)
{
	struct group *grp = group_find(gc, group_id);
	struct group_member *m;
	int16_t err = group_coord_owner_kerr(gc, group_id);

	if (err)
		return err;
	if (!grp)
		return KERR_UNKNOWN_MEMBER_ID;
	if (grp->state == GROUP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if ((!member_id.p || member_id.len == 0) && group_instance_id.p) {
		m = group_static_find(grp, group_instance_id);
	} else {
		if (group_instance_id.p && group_fenced(grp, member_id, group_instance_id))
			return KERR_FENCED_INSTANCE_ID;
		m = group_member_find(grp, member_id);
	}
	if (!m)
		return KERR_UNKNOWN_MEMBER_ID;
	group_remove_member(grp, m, "left the group");
	return KERR_NONE;
}

static void group_on_session_timer(struct loop_timer *t)
{
	struct group_member *m = (struct group_member *)((char *)t - offsetof(struct group_member, session));

	if (m->join_waiter || m->sync_waiter) {
		group_touch(m); /* waiting in JoinGroup / SyncGroup keeps a member alive */
		return;
	}
	group_remove_member(m->grp, m, "expired (session timeout)");
}

/* ---- offsets ---- */

int16_t group_commit_check(struct group_coord *gc, struct kstr group_id, struct kstr member_id,
			   struct kstr group_instance_id, int32_t generation, struct group **out)
{
	struct group *grp = group_find(gc, group_id);
	struct group_member *m;
	int16_t err;

	if (!group_id.p)
		return KERR_INVALID_GROUP_ID;
	if ((err = group_coord_owner_kerr(gc, group_id)))
		return err;
	if (!grp) {
		if (generation >= 0)
			return KERR_ILLEGAL_GENERATION;
		grp = group_create(gc, group_id); /* a simple (assign()) consumer's offsets */
	}
	if (grp->state == GROUP_DEAD)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (group_instance_id.p && group_fenced(grp, member_id, group_instance_id))
		return KERR_FENCED_INSTANCE_ID;
	if (generation < 0 && grp->state == GROUP_EMPTY) {
		*out = grp;
		return KERR_NONE;
	}
	if (grp->state == GROUP_COMPLETING_REBALANCE)
		return KERR_REBALANCE_IN_PROGRESS;
	m = group_member_find(grp, member_id);
	if (!m || m->pending)
		return KERR_UNKNOWN_MEMBER_ID;
	if (generation != grp->generation)
		return KERR_ILLEGAL_GENERATION;
	group_touch(m);
	*out = grp;
	return KERR_NONE;
}

int group_commit(struct group_coord *gc, struct group *grp, const struct group_offset *offs, int n,
		 struct part **part_out)
{
	int err = group_store_write(gc->store, grp->name, offs, n, false, NULL, false, clock_wall_ms(), part_out);

	for (int i = 0; !err && i < n; i++)
		err = group_store_offset_set(&grp->offsets, &offs[i]);
	return err;
}

int group_txn_stage(struct group_coord *gc, struct group *grp, int64_t producer_id, const struct group_offset *offs,
		    int n)
{
	int32_t log_partition = group_store_partition_of(gc->store, grp->name); /* where group_txn_commit writes */
	int err = 0;

	for (int i = 0; !err && i < n; i++)
		err = group_store_offset_stage(&grp->offsets, log_partition, producer_id, &offs[i]);
	return err;
}

void group_txn_complete(struct group_coord *gc, int32_t log_partition, int64_t producer_id, bool commit)
{
	for (size_t b = 0; b < gc->nbuckets; b++)
		for (struct group *grp = gc->buckets[b]; grp; grp = grp->hnext)
			group_store_offset_complete(&grp->offsets, log_partition, producer_id, commit);
}

/* Removes grp from the table and frees it (it must have no members). */
static void group_kill(struct group *grp)
{
	struct group_coord *gc = grp->gc;
	struct group **pp = &gc->buckets[group_hash(grp->name, gc->nbuckets)];

	assert(grp->nmembers == 0);
	while (grp->members)
		group_member_free(grp, grp->members);
	group_set_state(grp, GROUP_DEAD);
	while (*pp != grp)
		pp = &(*pp)->hnext;
	*pp = grp->hnext;
	gc->ngroups--;
	loop_timer_cancel(gc->loop, &grp->join_timer);
	group_store_offsets_release(&grp->offsets);
	free(grp->protocol_type);
	free(grp->protocol_name);
	free(grp->leader);
	free((char *)grp->name.p);
	free(grp);
}

int16_t group_delete(struct group_coord *gc, struct kstr group_id, struct part **part_out)
{
	struct group *grp = group_find(gc, group_id);
	int err = group_coord_owner_kerr(gc, group_id);

	if (err)
		return (int16_t)err;
	if (!grp || grp->state == GROUP_DEAD)
		return KERR_GROUP_ID_NOT_FOUND;
	if (grp->state != GROUP_EMPTY || grp->nmembers > 0)
		return KERR_NON_EMPTY_GROUP;
	err = group_store_write(gc->store, group_id, grp->offsets.v, grp->offsets.n, true, NULL, true, clock_wall_ms(),
				part_out);
	if (err) {
		log_error("group '%.*s': cannot write tombstones: %s", grp->name.len, grp->name.p, strerror(-err));
		return KERR_COORDINATOR_NOT_AVAILABLE;
	}
	log_info("group '%.*s' deleted", grp->name.len, grp->name.p);
	group_kill(grp);
	return KERR_NONE;
}

int16_t group_offset_delete_check(const struct group *grp)
{
	if (!grp || grp->state == GROUP_DEAD)
		return KERR_GROUP_ID_NOT_FOUND;
	if (grp->state != GROUP_EMPTY && (!grp->protocol_type || strcmp(grp->protocol_type, "consumer")))
		return KERR_NON_EMPTY_GROUP;
	return KERR_NONE;
}

/* Does a consumer-protocol subscription (version, topics[] ...) name topic? */
static bool group_subscription_has(const uint8_t *p, int32_t len, struct kstr topic)
{
	struct rd r;
	int32_t n;

	rd_init(&r, p, len > 0 ? (size_t)len : 0);
	rd_i16(&r);
	n = rd_count(&r, rd_i32(&r), 2, false);
	for (int32_t i = 0; i < n && !r.err; i++) {
		int16_t l = rd_i16(&r);
		struct bytes b;

		if (l >= 0 && rd_view(&r, (size_t)l, &b) && l == topic.len && !memcmp(b.p, topic.p, (size_t)l))
			return true;
	}
	return false;
}

bool group_subscribed(const struct group *grp, struct kstr topic)
{
	if (grp->state == GROUP_EMPTY || !grp->protocol_type || strcmp(grp->protocol_type, "consumer"))
		return false;
	for (const struct group_member *m = grp->members; m; m = m->next) {
		const struct group_protocol *p = group_member_protocol(m, grp->protocol_name);

		if (!m->pending &&
		    (p ? group_subscription_has(p->metadata, p->len, topic)
		       : m->nprotocols && group_subscription_has(m->protocols[0].metadata, m->protocols[0].len, topic)))
			return true;
	}
	return false;
}

int group_offset_delete(struct group_coord *gc, struct group *grp, const struct group_offset *offs, int n,
			struct part **part_out)
{
	int err =
		n ? group_store_write(gc->store, grp->name, offs, n, true, NULL, false, clock_wall_ms(), part_out) : 0;

	for (int i = 0; !err && i < n; i++)
		group_store_offset_delete(&grp->offsets, kstr_c(offs[i].topic), offs[i].partition);
	return err;
}

/* Expires the offsets of one empty group; kills it when nothing is left. */
static void group_expire_one(struct group *grp, int64_t now)
{
	struct group_coord *gc = grp->gc;
	struct group_offset *dead = group_xcalloc((size_t)grp->offsets.n, sizeof(*dead));
	struct part *part;
	int n = 0;

	for (int i = 0; i < grp->offsets.n; i++) {
		const struct group_offset *o = &grp->offsets.v[i];
		int64_t base = grp->protocol_type && grp->state_ts_ms >= 0 ? grp->state_ts_ms : o->commit_ts_ms;

		if (base + gc->cfg.offsets_retention_ms <= now)
			dead[n++] = *o;
	}
	if (n && group_store_write(gc->store, grp->name, dead, n, true, NULL, n == grp->offsets.n, now, &part) == 0) {
		log_info("group '%.*s': %d committed offsets expired", grp->name.len, grp->name.p, n);
		for (int i = n - 1; i >= 0; i--)
			group_store_offset_delete(&grp->offsets, kstr_c(dead[i].topic), dead[i].partition);
	}
	free(dead);
	if (grp->offsets.n > 0 || grp->offsets.pending || grp->members)
		return;
	if (n == 0 && grp->generation > 0 &&
	    group_store_write(gc->store, grp->name, NULL, 0, false, NULL, true, now, &part) < 0)
		return;
	group_kill(grp);
}

void group_coord_expire(struct group_coord *gc, int64_t now_wall_ms)
{
	for (size_t b = 0; b < gc->nbuckets; b++) {
		struct group *grp = gc->buckets[b], *next;

		for (; grp; grp = next) {
			next = grp->hnext;
			if (grp->state == GROUP_EMPTY && grp->nmembers == 0)
				group_expire_one(grp, now_wall_ms);
		}
	}
}

/* ---- loading from __consumer_offsets ---- */

static struct group_offsets *group_offsets_of(void *arg, struct kstr group, bool create)
{
	struct group_coord *gc = arg;
	struct group *grp = group_find(gc, group);

	if (!grp && create)
		grp = group_create(gc, group);
	return grp ? &grp->offsets : NULL;
}

/* Drops every member and the protocol of a loaded group (before replacing them). */
static void group_reset(struct group *grp)
{
	while (grp->members)
		group_member_free(grp, grp->members);
	free(grp->protocol_type);
	grp->protocol_type = NULL;
	free(grp->protocol_name);
	grp->protocol_name = NULL;
	free(grp->leader);
	grp->leader = NULL;
	grp->state = GROUP_EMPTY;
}

static void group_load_member(struct group *grp, const struct group_store_member *s)
{
	struct group_protocol_arg proto = { group_kstr(grp->protocol_name), s->subscription };
	struct group_join_args a = {
		.group_instance_id = s->group_instance_id,
		.client_id = s->client_id,
		.client_host = s->client_host,
		.session_timeout_ms = s->session_timeout_ms,
		.rebalance_timeout_ms = s->rebalance_timeout_ms,
		.protocols = &proto,
		.nprotocols = grp->protocol_name ? 1 : 0,
	};
	struct group_member *m = group_member_add(grp, group_kstrdup(s->member_id), &a);

	if (m->rebalance_timeout_ms < 0)
		m->rebalance_timeout_ms = m->session_timeout_ms;
	group_set_assignment(m, s->assignment.p, s->assignment.len);
	grp->nmembers++;
	group_touch(m);
}

static void group_on_meta(void *arg, struct kstr group, const struct group_store_meta *meta)
{
	struct group_coord *gc = arg;
	struct group *grp = group_find(gc, group);

	if (!grp && !meta)
		return;
	if (!grp)
		grp = group_create(gc, group);
	group_reset(grp);
	if (!meta) {
		grp->generation = 0;
		if (grp->offsets.n == 0 && !grp->offsets.pending)
			group_kill(grp);
		return;
	}
	grp->generation = meta->generation;
	grp->protocol_type = meta->protocol_type.len > 0 ? group_kstrdup(meta->protocol_type) : NULL;
	grp->protocol_name = group_kstrdup(meta->protocol_name);
	grp->leader = group_kstrdup(meta->leader);
	grp->state_ts_ms = meta->state_ts_ms;
	for (int32_t i = 0; i < meta->nmembers; i++)
		group_load_member(grp, &meta->members[i]);
	/* a group read back starts where it was, without a transition (see the header) */
	grp->state = grp->nmembers ? GROUP_STABLE : GROUP_EMPTY;
}

static void group_on_marker(void *arg, int32_t log_partition, int64_t producer_id, bool commit)
{
	group_txn_complete(arg, log_partition, producer_id, commit);
}

static size_t group_unload(struct group_coord *gc, int32_t partition);

static void group_on_reset(void *arg)
{
	group_unload(arg, -1);
}

/* ---- the coordinator ---- */

static void group_on_loader_timer(struct loop_timer *t);

static void group_on_expiry_timer(struct loop_timer *t)
{
	struct group_coord *gc = (struct group_coord *)((char *)t - offsetof(struct group_coord, expiry));

	group_coord_expire(gc, clock_wall_ms());
	loop_timer_set(gc->loop, t, group_now() + gc->cfg.retention_check_interval_ms);
}

int group_coord_new(struct loop *loop, const struct group_coord_cfg *cfg, const struct group_coord_ops *ops,
		    struct group_coord **out)
{
	struct group_coord *gc = calloc(1, sizeof(*gc));
	int err = -ENOMEM;

	if (!gc)
		return -ENOMEM;
	gc->loop = loop;
	gc->cfg = *cfg;
	gc->ops = *ops;
	gc->nbuckets = 64;
	gc->buckets = calloc(gc->nbuckets, sizeof(*gc->buckets));
	if (gc->buckets)
		err = group_store_new(&gc->store);
	if (err) {
		free(gc->buckets);
		free(gc);
		return err;
	}
	loop_timer_init(&gc->expiry, group_on_expiry_timer);
	loop_timer_init(&gc->loader, group_on_loader_timer);
	*out = gc;
	return 0;
}

int group_coord_attach(struct group_coord *gc, const struct coord_topic *ct)
{
	static const struct group_store_loader loader = { group_offsets_of, group_on_meta, group_on_marker,
							  group_on_reset };
	int64_t t0 = group_now();
	int err;

	group_store_attach(gc->store, ct);
	err = group_store_load(gc->store, &loader, gc);
	if (err)
		return err;
	log_info("group coordinator: loaded %zu groups from %d partitions of __consumer_offsets in %lld ms",
		 gc->ngroups, ct->nparts, (long long)(group_now() - t0));
	loop_timer_set(gc->loop, &gc->expiry, group_now() + gc->cfg.retention_check_interval_ms);
	return 0;
}

/* gc->loader: loads the partitions this broker came to lead, off the request that made it leader. */
static void group_on_loader_timer(struct loop_timer *t)
{
	static const struct group_store_loader loader = { group_offsets_of, group_on_meta, group_on_marker,
							  group_on_reset };
	struct group_coord *gc = (struct group_coord *)((char *)t - offsetof(struct group_coord, loader));

	for (int32_t p = 0; gc->owned && p < group_store_nparts(gc->store); p++) {
		int64_t t0 = group_now();
		size_t before = gc->ngroups;
		int err;

		if (gc->owned[p] != GROUP_PART_LOADING)
			continue;
		err = group_store_load_partition(gc->store, &loader, gc, p);
		if (err) {
			group_unload(gc, p); /* what was read so far; the next LeaderAndIsr tries again */
			gc->owned[p] = GROUP_PART_NOT_OWNED;
			continue;
		}
		gc->owned[p] = GROUP_PART_LOADED;
		log_info("group coordinator: __consumer_offsets-%d loaded, %zu groups, in %lld ms", p,
			 gc->ngroups - before, (long long)(group_now() - t0));
	}
}

int group_coord_attach_unowned(struct group_coord *gc, const struct coord_topic *ct)
{
	uint8_t *owned = calloc((size_t)ct->nparts, 1);

	if (!owned)
		return -ENOMEM;
	free(gc->owned);
	gc->owned = owned;
	group_store_attach(gc->store, ct);
	loop_timer_set(gc->loop, &gc->expiry, group_now() + gc->cfg.retention_check_interval_ms);
	return 0;
}

void group_coord_set_leader(struct group_coord *gc, int32_t partition, bool leader)
{
	size_t n;

	if (!gc->owned || partition < 0 || partition >= group_store_nparts(gc->store))
		return;
	if (leader && gc->owned[partition] == GROUP_PART_NOT_OWNED) {
		gc->owned[partition] = GROUP_PART_LOADING;
		loop_timer_set(gc->loop, &gc->loader, group_now());
	} else if (!leader && gc->owned[partition] != GROUP_PART_NOT_OWNED) {
		gc->owned[partition] = GROUP_PART_NOT_OWNED;
		n = group_unload(gc, partition);
		log_info("group coordinator: __consumer_offsets-%d no longer led here, %zu groups unloaded", partition,
			 n);
	}
}

int16_t group_coord_owner_kerr(const struct group_coord *gc, struct kstr group_id)
{
	if (!gc->owned || !group_id.p)
		return KERR_NONE;
	switch (gc->owned[group_store_partition_of(gc->store, group_id)]) {
	case GROUP_PART_LOADED:
		return KERR_NONE;
	case GROUP_PART_LOADING:
		return KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default:
		return KERR_NOT_COORDINATOR;
	}
}

bool group_coord_attached(const struct group_coord *gc)
{
	return group_store_attached(gc->store);
}

/* Forgets the groups of partition (-1: all); their waiting members get NOT_COORDINATOR. */
static size_t group_unload(struct group_coord *gc, int32_t partition)
{
	size_t n = 0;

	for (size_t b = 0; b < gc->nbuckets; b++)
		for (struct group *grp = gc->buckets[b], *next; grp; grp = next) {
			next = grp->hnext;
			if (partition >= 0 && group_store_partition_of(gc->store, grp->name) != partition)
				continue;
			for (struct group_member *m = grp->members; m; m = m->next)
				group_member_release(m, KERR_NOT_COORDINATOR);
			group_reset(grp);
			grp->nmembers = 0;
			group_kill(grp);
			n++;
		}
	return n;
}

void group_coord_free(struct group_coord *gc)
{
	if (!gc)
		return;
	group_unload(gc, -1);
	loop_timer_cancel(gc->loop, &gc->expiry);
	loop_timer_cancel(gc->loop, &gc->loader);
	free(gc->owned);
	group_store_free(gc->store);
	free(gc->list);
	free(gc->buckets);
	free(gc);
}

/* ---- read access ---- */

const struct group_offsets *group_offsets(const struct group *grp)
{
	return &grp->offsets;
}

enum group_state group_state(const struct group *grp)
{
	return grp->state;
}

struct kstr group_name(const struct group *grp)
{
	return grp->name;
}

const char *group_protocol_type(const struct group *grp)
{
	return grp->protocol_type;
}

const char *group_protocol_name(const struct group *grp)
{
	return grp->protocol_name;
}

int32_t group_generation(const struct group *grp)
{
	return grp->generation;
}

int32_t group_member_count(const struct group *grp)
{
	return grp->nmembers;
}

void group_members(const struct group *grp, struct group_member_info *out)
{
	int32_t n = 0;

	for (const struct group_member *m = grp->members; m; m = m->next)
		if (!m->pending)
			group_fill_info(m, &out[n++], grp->state == GROUP_STABLE);
}

struct group **group_coord_groups(struct group_coord *gc, int *n)
{
	free(gc->list);
	gc->list = group_xcalloc(gc->ngroups, sizeof(*gc->list));
	*n = 0;
	for (size_t b = 0; b < gc->nbuckets; b++)
		for (struct group *grp = gc->buckets[b]; grp; grp = grp->hnext)
			gc->list[(*n)++] = grp;
	return gc->list;
}

/* ---- transactions (coord/txn.c): TxnOffsetCommit persistence ---- */

int group_txn_commit(struct group_coord *gc, struct group *grp, int64_t producer_id, int16_t producer_epoch,
		     const struct group_offset *offs, int n, struct part **part_out)
{
	int err = group_store_write_txn(gc->store, grp->name, offs, n, producer_id, producer_epoch, clock_wall_ms(),
					part_out);

	return err ? err : group_txn_stage(gc, grp, producer_id, offs, n);
}

int32_t group_coord_partition(struct group_coord *gc, struct kstr group_id)
{
	return group_store_partition_of(gc->store, group_id);
}
