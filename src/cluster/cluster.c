/*
 * cluster.c - session lifecycle, registration and the live-broker cache
 * (see cluster.h for the sequence and the failure policy).
 *
 * Session states (cluster_set_state() logs each change at debug level):
 *
 *   DOWN --cluster_connect(): handle made--> CONNECTING
 *   DOWN --handle refused (unresolvable)--> DOWN, reconnect timer (backoff)
 *   CONNECTING --ZK_EV_CONNECTED--> REGISTERING --broker znode created--> REGISTERED
 *   CONNECTING --connection timer--> DOWN (handle given up, session kept to resume)
 *   REGISTERING/REGISTERED --ZK_EV_CONNECTING--> CONNECTING (the client reconnects)
 *   any --ZK_EV_EXPIRED--> DOWN --> CONNECTING (a new session at once)
 *   REGISTERING --broker.id owned by another session--> FATAL (on_fatal(arg, 2))
 *
 * The cache of live brokers is replaced whole when a listing of
 * /brokers/ids and every registration in it has been read; a listing
 * started later supersedes an earlier one still under way (list_seq).
 */
#include "cluster/cluster.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/controller.h"
#include "cluster/deleter.h"
#include "cluster/reassign.h"
#include "cluster/alterpart.h"
#include "cluster/change.h"
#include "cluster/channel.h"
#include "cluster/confchange.h"
#include "cluster/leaders.h"
#include "cluster/notify.h"
#include "cluster/pidblock.h"
#include "cluster/topics.h"
#include "cluster/zk.h"
#include "net/loop.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/uuid.h"

#define CLUSTER_BACKOFF_MS_MIN 1000
#define CLUSTER_BACKOFF_MS_MAX 30000
#define CLUSTER_RETRY_MS 5000 /* a registration step failed for another reason than the connection */

enum cluster_state { CL_DOWN, CL_CONNECTING, CL_REGISTERING, CL_REGISTERED, CL_FATAL };
static const char *const cluster_state_names[] = { "down", "connecting", "registering", "registered", "fatal" };

#define CLUSTER_SHUTTING_MAX 64

/* A broker in controlled shutdown, by the registration it asked with. */
struct cluster_broker_epoch {
	int32_t id;
	int64_t epoch;
};

struct cluster {
	struct cluster_cfg cfg;
	struct loop *loop;
	struct zk *zk;
	struct controller ctl;
	enum cluster_state state;
	char *registration;            /* our /brokers/ids/<id> document */
	char broker_path[64];          /* /brokers/ids/<id> */
	char cluster_id[64];           /* "" until read */
	int64_t session_id;            /* of the session events last came from */
	int64_t broker_epoch;          /* czxid of our registration, -1 until registered */
	struct loop_timer conn_timer;  /* CONNECTING: give the handle up when it fires */
	struct loop_timer retry_timer; /* DOWN: make a new handle; REGISTERING: run the sequence again */
	int32_t backoff_ms;
	int64_t down_since_ms;          /* when the connection was lost (for log lines) */
	struct cluster_broker *brokers; /* the cache, sorted by id */
	int nbrokers;
	unsigned list_seq;        /* the latest listing of /brokers/ids */
	bool listed;              /* brokers holds a listing read in this process */
	struct leaders leaders;   /* as controller: the partition states (leaders.h) */
	struct deleter deleter;   /* as controller: topics marked for deletion (deleter.h) */
	struct reassign reassign; /* as controller: partition reassignments (reassign.h) */
	int32_t *broker_ids;      /* the ids of brokers, for reassign.brokers */
	struct channel *channel;  /* as controller: the requests to every broker (channel.h) */
	struct pidblock pids;     /* producer ids from /latest_producer_id_block (pidblock.h) */
	struct confchange confs;  /* /config/changes followed (confchange.h) */
	struct aclzk acls;        /* /kafka-acl* followed, with an authorizer (aclzk.h) */
	struct cluster_broker_epoch shutting[CLUSTER_SHUTTING_MAX]; /* as controller: in controlled shutdown */
	int nshutting;
	struct loop_timer rebalance_timer; /* as controller: leader.imbalance.check.interval.seconds */
	bool rebalancing;                  /* a rebalance's elections are under way */
	struct alterpart *alters;          /* as a leader: ISR changes sent to the controller (alterpart.h) */
};

/* A request's state changes under way (change.h), for the caller's done. */
struct cluster_change {
	struct cluster *cl;
	cluster_change_fn *done;
	void *arg;
};

/* One listing of /brokers/ids under way: the registrations read so far. */
struct cluster_listing {
	struct cluster *cl;
	unsigned seq;
	int pending;
	int n;
	bool failed; /* a read failed (connection lost): the cache keeps what it had */
	struct cluster_broker *brokers;
};

static void cluster_set_state(struct cluster *cl, enum cluster_state to)
{
	if (cl->state == to)
		return;
	log_debug(LOGC_CLUSTER, "cluster", "zookeeper state %s -> %s", cluster_state_names[cl->state],
		  cluster_state_names[to]);
	cl->state = to;
}

/* A step's request could not be queued: the session is going; the next one starts over. */
static void cluster_submitted(int err, const char *what)
{
	if (err)
		log_debug(LOGC_CLUSTER, "cluster", "%s not sent: %s", what, strerror(-err));
}

/* An unexpected reply of a registration step: connection trouble is handled by the session events. */
static void cluster_step_failed(struct cluster *cl, const char *what, int rc)
{
	if (rc == ZCONNECTIONLOSS || rc == ZSESSIONEXPIRED || rc == ZOPERATIONTIMEOUT || rc == ZCLOSING)
		return;
	log_warn("zookeeper: %s failed: %s; trying again in %d ms", what, zerror(rc), CLUSTER_RETRY_MS);
	loop_timer_set(cl->loop, &cl->retry_timer, clock_mono_ms() + CLUSTER_RETRY_MS);
}

/* ---- the live-broker cache ---- */

static int cluster_broker_cmp(const void *a, const void *b)
{
	const struct cluster_broker *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* True if broker id asked for a controlled shutdown: the leadership pass counts it as not live. */
static bool cluster_shutting(const struct cluster *cl, int32_t id)
{
	for (int i = 0; i < cl->nshutting; i++)
		if (cl->shutting[i].id == id)
			return true;
	return false;
}

/* A broker leaves the shutting-down set when its registration goes or a new one (another epoch) appears. */
static void cluster_prune_shutting(struct cluster *cl)
{
	int k = 0;

	for (int i = 0; i < cl->nshutting; i++) {
		const struct cluster_broker_epoch *s = &cl->shutting[i];
		bool keep = false;

		for (int j = 0; j < cl->nbrokers && !keep; j++)
			keep = cl->brokers[j].id == s->id && cl->brokers[j].epoch == s->epoch;
		if (keep)
			cl->shutting[k++] = *s;
	}
	cl->nshutting = k;
}

/* As controller, once the live brokers are known: bring the partition states in line with them. */
static void cluster_run_leaders_bounced(struct cluster *cl, const int32_t *bounced, int nbounced);

static void cluster_run_leaders(struct cluster *cl)
{
	cluster_run_leaders_bounced(cl, NULL, 0);
}

/* bounced: brokers that registered again since the last listing (leaders_run_bounced). */
static void cluster_run_leaders_bounced(struct cluster *cl, const int32_t *bounced, int nbounced)
{
	int32_t *ids;
	int n = 0;

	if (!controller_is_active(&cl->ctl)) {
		channel_reset(cl->channel); /* not controller (any more): nothing to tell the brokers */
		return;
	}
	if (!cl->listed)
		return;
	channel_set_brokers(cl->channel, cl->brokers, cl->nbrokers);
	ids = malloc(sizeof(*ids) * (size_t)(cl->nbrokers > 0 ? cl->nbrokers : 1));
	if (!ids) {
		log_error("controller: out of memory");
		return;
	}
	for (int i = 0; i < cl->nbrokers; i++)
		if (!cluster_shutting(cl, cl->brokers[i].id))
			ids[n++] = cl->brokers[i].id;
	leaders_run_bounced(&cl->leaders, ids, n, bounced, nbounced, cl->ctl.epoch, cl->ctl.epoch_version);
	free(ids);
}

/* The context of what the controller sends now. */
static struct notify_ctx cluster_notify_ctx(struct cluster *cl)
{
	return (struct notify_ctx){ .ch = cl->channel,
				    .controller_id = cl->cfg.broker_id,
				    .epoch = cl->ctl.epoch,
				    .brokers = cl->brokers,
				    .nbrokers = cl->nbrokers };
}

/* leaders_pass_fn: the brokers are told the states the pass left. */
static void cluster_on_pass(void *arg, const struct leaders_state *parts, int n, const int32_t *live, int nlive,
			    int32_t epoch)
{
	struct cluster *cl = arg;
	struct notify_ctx nc = cluster_notify_ctx(cl);

	if (!controller_is_active(&cl->ctl) || epoch != cl->ctl.epoch)
		return;
	notify_pass(&nc, parts, n);
	reassign_on_pass(&cl->reassign, parts, n, live, nlive);
}

/* reassign_stop_fn: a removed replica deletes its copies. */
static void cluster_on_reassign_stop(void *arg, int32_t broker, const struct reassign_stop *v, int n)
{
	struct cluster *cl = arg;
	struct notify_ctx nc = cluster_notify_ctx(cl);
	struct notify_part *parts = malloc(sizeof(*parts) * (size_t)(n ? n : 1));

	if (!parts)
		return;
	for (int i = 0; i < n; i++)
		parts[i] = (struct notify_part){ .topic = v[i].topic, .partition = v[i].partition };
	if (controller_is_active(&cl->ctl))
		notify_stop(&nc, broker, parts, n);
	free(parts);
}

/* The registered broker ids (reassign.brokers). */
static const int32_t *cluster_broker_ids(void *arg, int *n)
{
	struct cluster *cl = arg;
	int32_t *ids = realloc(cl->broker_ids, sizeof(*ids) * (size_t)(cl->nbrokers ? cl->nbrokers : 1));

	*n = 0;
	if (!ids)
		return NULL;
	cl->broker_ids = ids;
	for (int i = 0; i < cl->nbrokers; i++)
		ids[(*n)++] = cl->brokers[i].id;
	return ids;
}

/* deleter_topic_fn: every live broker drops the topic's partitions. */
static void cluster_on_delete(void *arg, const char *topic, int32_t nparts)
{
	struct cluster *cl = arg;
	struct notify_ctx nc = cluster_notify_ctx(cl);

	if (controller_is_active(&cl->ctl))
		notify_delete(&nc, topic, nparts);
}

static void cluster_arm_rebalance(struct cluster *cl)
{
	if (cl->cfg.auto_leader_rebalance_enable && cl->cfg.leader_imbalance_check_interval_ms > 0)
		loop_timer_set(cl->loop, &cl->rebalance_timer,
			       clock_mono_ms() + cl->cfg.leader_imbalance_check_interval_ms);
}

static void cluster_on_active(void *arg)
{
	struct cluster *cl = arg;

	deleter_run(&cl->deleter);
	cluster_run_leaders(cl);
	reassign_run_znode(&cl->reassign);
	cluster_arm_rebalance(cl);
}

/*
 * The brokers of the listing ls that were listed before under another
 * registration (broker epoch): each died and registered again between two
 * listings.  Logged; *n of them in out (room for ls->n).
 */
static void cluster_bounced(const struct cluster *cl, const struct cluster_listing *ls, int32_t *out, int *n)
{
	*n = 0;
	for (int i = 0; i < ls->n; i++)
		for (int j = 0; j < cl->nbrokers; j++)
			if (cl->brokers[j].id == ls->brokers[i].id && cl->brokers[j].epoch != ls->brokers[i].epoch) {
				log_info("broker %d bounced: registered again (broker epoch %lld, was %lld) since the "
					 "brokers were last listed; handled as a failure followed by a start-up",
					 ls->brokers[i].id, (long long)ls->brokers[i].epoch,
					 (long long)cl->brokers[j].epoch);
				out[(*n)++] = ls->brokers[i].id;
			}
}

/* Logs the membership when it changed, then installs the listing's brokers. */
static void cluster_publish(struct cluster *cl, struct cluster_listing *ls)
{
	bool same = ls->n == cl->nbrokers;
	int32_t *bounced = malloc(sizeof(*bounced) * (size_t)(ls->n > 0 ? ls->n : 1));
	int nbounced = 0;
	char ids[512];
	size_t o = 0;

	qsort(ls->brokers, (size_t)ls->n, sizeof(*ls->brokers), cluster_broker_cmp);
	for (int i = 0; same && i < ls->n; i++)
		same = !memcmp(&ls->brokers[i], &cl->brokers[i], sizeof(*ls->brokers));
	if (bounced && cl->listed && controller_is_active(&cl->ctl))
		cluster_bounced(cl, ls, bounced, &nbounced);
	free(cl->brokers);
	cl->brokers = ls->brokers;
	cl->nbrokers = ls->n;
	ls->brokers = NULL;
	cl->listed = true;
	cluster_prune_shutting(cl);
	cluster_run_leaders_bounced(cl, bounced, nbounced);
	free(bounced);
	if (same)
		return;
	ids[0] = '\0';
	for (int i = 0; i < cl->nbrokers && o < sizeof(ids) - 16; i++)
		o += (size_t)snprintf(ids + o, sizeof(ids) - o, "%s%d", i ? "," : "", cl->brokers[i].id);
	log_info("live brokers: %s", cl->nbrokers ? ids : "none");
}

static void cluster_listing_end(struct cluster_listing *ls)
{
	if (--ls->pending)
		return;
	if (ls->seq == ls->cl->list_seq && !ls->failed)
		cluster_publish(ls->cl, ls);
	free(ls->brokers);
	free(ls);
}

/*
 * Reply to the read of one registration: a vanished one is left out, a
 * malformed one logged and left out; any other failure voids the listing
 * (the next connection lists again).
 */
struct cluster_broker_read {
	struct cluster_listing *ls;
	int32_t id;
};

/*
 * The endpoint other brokers connect to: that of the inter-broker
 * listener, never another (a broker without one cannot be reached, as in
 * Kafka; said in the log each time the brokers are read).
 */
static void cluster_broker_inter(const struct cluster *cl, const struct znode_broker *zb, struct cluster_broker *b)
{
	const char *name = cl->cfg.inter_listener ? cl->cfg.inter_listener : cl->cfg.client_listener;
	const struct znode_endpoint *ep = NULL;

	for (int i = 0; i < zb->nendpoints && !ep; i++) /* znode_broker_endpoint() would fall back to the first */
		if (!strcmp(zb->endpoints[i].listener, name))
			ep = &zb->endpoints[i];
	if (!ep) {
		log_warn("broker %d registered no endpoint of the inter-broker listener %s: no inter-broker "
			 "connection to it until it does",
			 b->id, name);
		return;
	}
	snprintf(b->inter_host, sizeof(b->inter_host), "%s", ep->host);
	b->inter_port = ep->port;
}

static void cluster_on_broker(void *arg, const struct zk_reply *rep)
{
	struct cluster_broker_read *rd = arg;
	struct cluster_listing *ls = rd->ls;
	struct znode_broker zb;
	const struct znode_endpoint *ep;

	if (rep->rc == ZOK && rep->data_len >= 0 &&
	    !znode_broker_decode(rep->data, (size_t)rep->data_len, rd->id, &zb) &&
	    (ep = znode_broker_endpoint(&zb, ls->cl->cfg.client_listener))) {
		struct cluster_broker *b = &ls->brokers[ls->n++];

		memset(b, 0, sizeof(*b));
		b->id = rd->id;
		snprintf(b->host, sizeof(b->host), "%s", ep->host);
		b->port = ep->port;
		cluster_broker_inter(ls->cl, &zb, b);
		memcpy(b->endpoints, zb.endpoints, sizeof(b->endpoints));
		b->nendpoints = zb.nendpoints;
		b->has_rack = zb.has_rack;
		b->epoch = rep->czxid;
		snprintf(b->rack, sizeof(b->rack), "%s", zb.rack);
	} else if (rep->rc == ZOK) {
		log_warn("%s/%d: not a broker registration with an endpoint; broker left out of Metadata",
			 ZNODE_BROKER_IDS, rd->id);
	} else if (rep->rc != ZNONODE) { /* ZNONODE: that broker left meanwhile */
		ls->failed = true;
	}
	free(rd);
	cluster_listing_end(ls);
}

/* Starts reading each child's registration. */
static void cluster_listing_read(struct cluster_listing *ls, char **children, int n)
{
	for (int i = 0; i < n; i++) {
		struct cluster_broker_read *rd = malloc(sizeof(*rd));
		char path[128];
		int err;

		if (!rd || znode_broker_id_parse(children[i], &rd->id)) {
			free(rd);
			continue;
		}
		rd->ls = ls;
		snprintf(path, sizeof(path), "%s/%d", ZNODE_BROKER_IDS, rd->id);
		ls->pending++;
		err = zk_get(ls->cl->zk, path, false, cluster_on_broker, rd);
		if (err) {
			free(rd);
			ls->pending--;
		}
	}
}

static void cluster_on_children(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;
	struct cluster_listing *ls;

	if (rep->rc != ZOK) {
		cluster_step_failed(cl, "listing " ZNODE_BROKER_IDS, rep->rc);
		return;
	}
	ls = calloc(1, sizeof(*ls));
	if (ls)
		ls->brokers = calloc((size_t)rep->nchildren + 1, sizeof(*ls->brokers));
	if (!ls || !ls->brokers) {
		free(ls);
		log_error("listing %s: out of memory", ZNODE_BROKER_IDS);
		return;
	}
	ls->cl = cl;
	ls->seq = ++cl->list_seq;
	ls->pending = 1; /* held until every read is queued */
	cluster_listing_read(ls, rep->children, rep->nchildren);
	cluster_listing_end(ls);
}

/* Lists /brokers/ids and leaves a child watch for the next change. */
static void cluster_watch_brokers(struct cluster *cl)
{
	cluster_submitted(zk_children(cl->zk, ZNODE_BROKER_IDS, true, cluster_on_children, cl), "broker listing");
}

/* ---- registration ---- */

static void cluster_registered_now(struct cluster *cl)
{
	if (cl->state != CL_REGISTERED)
		log_info("registered as broker %d at %s in zookeeper %s (session 0x%llx, broker epoch %lld)",
			 cl->cfg.broker_id, cl->cfg.endpoints, zk_hosts(cl->zk), (unsigned long long)cl->session_id,
			 (long long)cl->broker_epoch);
	cluster_set_state(cl, CL_REGISTERED);
	controller_session_start(&cl->ctl, cl->session_id);
	cluster_watch_brokers(cl);
	pidblock_fill(&cl->pids);
	if (cl->cfg.on_topic_config || cl->cfg.on_user_config || cl->cfg.on_quota_config)
		confchange_run(&cl->confs);
	aclzk_run(&cl->acls);
	confchange_load_users(&cl->confs);
}

static void cluster_fatal(struct cluster *cl, int code)
{
	cluster_set_state(cl, CL_FATAL);
	loop_timer_cancel(cl->loop, &cl->conn_timer);
	loop_timer_cancel(cl->loop, &cl->retry_timer);
	cl->cfg.on_fatal(cl->cfg.fatal_arg, code);
}

static void cluster_register(struct cluster *cl);

/* Our registration already exists: ours from this session (a repeated step), or another broker's. */
static void cluster_on_owner(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;

	if (rep->rc == ZNONODE) { /* its session just ended: try again */
		cluster_register(cl);
		return;
	}
	if (rep->rc != ZOK) {
		cluster_step_failed(cl, "reading the broker registration", rep->rc);
		return;
	}
	if (rep->ephemeral_owner == cl->session_id) {
		cl->broker_epoch = rep->czxid;
		cluster_registered_now(cl);
		return;
	}
	log_error("broker.id %d is already registered in zookeeper %s by another live broker (%s held by session "
		  "0x%llx, ours is 0x%llx): give each broker its own broker.id",
		  cl->cfg.broker_id, zk_hosts(cl->zk), cl->broker_path, (unsigned long long)rep->ephemeral_owner,
		  (unsigned long long)cl->session_id);
	cluster_fatal(cl, 2);
}

static void cluster_on_registered(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;

	if (rep->rc == ZOK) {
		cl->broker_epoch = rep->czxid;
		cluster_registered_now(cl);
	} else if (rep->rc == ZNODEEXISTS)
		cluster_submitted(zk_get(cl->zk, cl->broker_path, false, cluster_on_owner, cl), "registration read");
	else
		cluster_step_failed(cl, "creating the broker registration", rep->rc);
}

static void cluster_register(struct cluster *cl)
{
	cluster_submitted(zk_create(cl->zk, cl->broker_path, cl->registration, (int)strlen(cl->registration), true,
				    cluster_on_registered, cl),
			  "broker registration");
}

static void cluster_read_id(struct cluster *cl);

static void cluster_on_id_created(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;

	if (rep->rc == ZOK || rep->rc == ZNODEEXISTS)
		cluster_read_id(cl); /* ours or the one another broker made first */
	else
		cluster_step_failed(cl, "creating " ZNODE_CLUSTER_ID, rep->rc);
}

/* /cluster/id is missing: the first broker of the cluster makes it. */
static void cluster_create_id(struct cluster *cl)
{
	char id[UUID_B64_LEN + 1], *doc;
	struct kuuid u;

	uuid_random(&u);
	uuid_to_b64(&u, id);
	doc = znode_cluster_id_encode(id);
	if (!doc) {
		log_error("creating %s: out of memory", ZNODE_CLUSTER_ID);
		return;
	}
	cluster_submitted(zk_create(cl->zk, ZNODE_CLUSTER_ID, doc, (int)strlen(doc), false, cluster_on_id_created, cl),
			  "cluster id creation");
	free(doc);
}

static void cluster_on_id(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;
	char id[sizeof(cl->cluster_id)];

	if (rep->rc == ZNONODE) {
		cluster_create_id(cl);
		return;
	}
	if (rep->rc != ZOK) {
		cluster_step_failed(cl, "reading " ZNODE_CLUSTER_ID, rep->rc);
		return;
	}
	if (rep->data_len < 0 || znode_cluster_id_decode(rep->data, (size_t)rep->data_len, id, sizeof(id))) {
		log_error("%s holds '%.*s', not Kafka's cluster id document; not registering", ZNODE_CLUSTER_ID,
			  rep->data_len < 0 ? 0 : rep->data_len, rep->data ? rep->data : "");
		cluster_fatal(cl, 1);
		return;
	}
	if (cl->cfg.on_cluster_id && cl->cfg.on_cluster_id(cl->cfg.fatal_arg, id)) {
		cluster_fatal(cl, 2); /* logged by the broker */
		return;
	}
	if (strcmp(id, cl->cluster_id))
		log_info("cluster id %s (from zookeeper %s)", id, zk_hosts(cl->zk));
	snprintf(cl->cluster_id, sizeof(cl->cluster_id), "%s", id);
	cluster_register(cl);
}

static void cluster_read_id(struct cluster *cl)
{
	cluster_submitted(zk_get(cl->zk, ZNODE_CLUSTER_ID, false, cluster_on_id, cl), "cluster id read");
}

static void cluster_on_paths(void *arg, const struct zk_reply *rep)
{
	struct cluster *cl = arg;

	if (rep->rc != ZOK) {
		cluster_step_failed(cl, "creating Kafka's persistent paths", rep->rc);
		return;
	}
	cluster_read_id(cl);
}

/*
 * The whole sequence, from the persistent paths on.  Requests of one
 * session are answered in order, so only the last path's reply is waited
 * for.  Every step may run again (a reconnect repeats it): each one is
 * harmless to repeat.
 */
static void cluster_ignore(void *arg, const struct zk_reply *rep)
{
	(void)arg;
	if (rep->rc != ZOK)
		log_debug(LOGC_CLUSTER, "cluster", "persistent path: %s", zerror(rep->rc));
}

static void cluster_sequence(struct cluster *cl)
{
	int err = 0;

	cluster_set_state(cl, cl->state == CL_REGISTERED ? CL_REGISTERED : CL_REGISTERING);
	for (int i = 0; !err && znode_persistent_paths[i]; i++)
		err = zk_ensure_path(cl->zk, znode_persistent_paths[i], cluster_ignore, cl);
	if (!err)
		err = zk_ensure_path(cl->zk, "/cluster", cluster_on_paths, cl);
	cluster_submitted(err, "persistent paths");
}

/* ---- the session ---- */

static void cluster_connect(struct cluster *cl);

/* Gives the handle up (its session id is kept to resume) and tries again after the backoff. */
static void cluster_retry_later(struct cluster *cl, const char *why)
{
	log_warn("%s; retrying in %d ms", why, cl->backoff_ms);
	zk_close(cl->zk); /* the session may live on: the next handle resumes it, or learns it expired */
	cluster_set_state(cl, CL_DOWN);
	loop_timer_cancel(cl->loop, &cl->conn_timer);
	loop_timer_set(cl->loop, &cl->retry_timer, clock_mono_ms() + cl->backoff_ms);
	cl->backoff_ms = cl->backoff_ms * 2 > CLUSTER_BACKOFF_MS_MAX ? CLUSTER_BACKOFF_MS_MAX : cl->backoff_ms * 2;
}

static void cluster_on_conn_timer(struct loop_timer *t)
{
	struct cluster *cl = (struct cluster *)((char *)t - offsetof(struct cluster, conn_timer));
	char why[512];

	snprintf(why, sizeof(why), "cannot reach zookeeper at %s: no connection for %lld ms", zk_hosts(cl->zk),
		 (long long)(clock_mono_ms() - cl->down_since_ms));
	cluster_retry_later(cl, why);
}

static void cluster_on_retry_timer(struct loop_timer *t)
{
	struct cluster *cl = (struct cluster *)((char *)t - offsetof(struct cluster, retry_timer));

	if (cl->state == CL_DOWN)
		cluster_connect(cl);
	else if (cl->state == CL_REGISTERING || cl->state == CL_REGISTERED)
		cluster_sequence(cl);
}

/* Makes a handle (resuming the last session if there was one) and waits for it to connect. */
static void cluster_connect(struct cluster *cl)
{
	char why[512];
	int err = zk_open(cl->zk, true);

	if (err) {
		snprintf(why, sizeof(why), "cannot start a zookeeper session with %s: %s", zk_hosts(cl->zk),
			 strerror(-err));
		cluster_retry_later(cl, why);
		return;
	}
	cluster_set_state(cl, CL_CONNECTING);
	loop_timer_set(cl->loop, &cl->conn_timer, clock_mono_ms() + cl->cfg.connection_timeout_ms);
}

static void cluster_on_connected(struct cluster *cl, int64_t session_id)
{
	bool new_session = session_id != cl->session_id;

	loop_timer_cancel(cl->loop, &cl->conn_timer);
	loop_timer_cancel(cl->loop, &cl->retry_timer);
	cl->backoff_ms = CLUSTER_BACKOFF_MS_MIN;
	if (new_session)
		log_info("connected to zookeeper %s (new session 0x%llx, timeout %d ms, asked %d)", zk_hosts(cl->zk),
			 (unsigned long long)session_id, zk_session_timeout_ms(cl->zk), cl->cfg.session_timeout_ms);
	else
		log_info("reconnected to zookeeper %s after %lld ms (session 0x%llx)", zk_hosts(cl->zk),
			 (long long)(clock_mono_ms() - cl->down_since_ms), (unsigned long long)session_id);
	cl->session_id = session_id;
	if (new_session && cl->state == CL_REGISTERED)
		cluster_set_state(cl, CL_REGISTERING);
	cluster_sequence(cl); /* also re-arms the watches and re-reads what may have changed meanwhile */
}

static void cluster_on_expired(struct cluster *cl)
{
	log_warn("zookeeper session 0x%llx expired (its registration and watches are gone); starting a new "
		 "session and registering again",
		 (unsigned long long)cl->session_id);
	controller_session_lost(&cl->ctl);
	zk_close(cl->zk);
	zk_forget_session(cl->zk);
	cluster_set_state(cl, CL_DOWN);
	cl->down_since_ms = clock_mono_ms();
	cluster_connect(cl);
}

static void cluster_on_event(void *arg, enum zk_event ev, const char *path, int64_t session_id)
{
	struct cluster *cl = arg;

	if (cl->state == CL_FATAL)
		return;
	if (reassign_watches(path)) { /* created, changed or deleted: read (and watched) again */
		if (controller_is_active(&cl->ctl))
			reassign_run_znode(&cl->reassign);
		return;
	}
	switch (ev) {
	case ZK_EV_CONNECTED:
		cluster_on_connected(cl, session_id);
		break;
	case ZK_EV_CONNECTING:
		if (cl->state == CL_CONNECTING)
			break; /* still trying: the connection timer is armed */
		log_warn("lost the connection to zookeeper %s; reconnecting (session 0x%llx)", zk_hosts(cl->zk),
			 (unsigned long long)cl->session_id);
		cluster_set_state(cl, CL_CONNECTING);
		cl->down_since_ms = clock_mono_ms();
		loop_timer_set(cl->loop, &cl->conn_timer, clock_mono_ms() + cl->cfg.connection_timeout_ms);
		break;
	case ZK_EV_EXPIRED:
		cluster_on_expired(cl);
		break;
	case ZK_EV_AUTH_FAILED:
		cluster_retry_later(cl, "zookeeper authentication failed");
		break;
	case ZK_EV_CHILD:
		if (path && !strcmp(path, ZNODE_BROKER_IDS))
			cluster_watch_brokers(cl);
		else if (leaders_watches(path))
			cluster_run_leaders(cl);
		else if (deleter_watches(path) && controller_is_active(&cl->ctl))
			deleter_run(&cl->deleter);
		else if (confchange_watches(path) &&
			 (cl->cfg.on_topic_config || cl->cfg.on_user_config || cl->cfg.on_quota_config))
			confchange_run(&cl->confs);
		else if (aclzk_watches(path))
			aclzk_run(&cl->acls);
		break;
	case ZK_EV_CHANGED:
	case ZK_EV_CREATED:
		if (ev == ZK_EV_CHANGED && leaders_watches(path)) {
			cluster_run_leaders(cl);
			break;
		}
		__attribute__((fallthrough)); /* a data change or creation of /controller */
	case ZK_EV_DELETED:
		controller_on_event(&cl->ctl, ev, path);
		break;
	}
}

/* Our registration document, from the broker's endpoints. */
static int cluster_registration(struct cluster *cl)
{
	struct znode_broker zb;

	memset(&zb, 0, sizeof(zb));
	zb.id = cl->cfg.broker_id;
	zb.timestamp_ms = clock_wall_ms();
	if (znode_endpoints_parse(&zb, cl->cfg.endpoints, cl->cfg.protocol_map) || !zb.nendpoints) {
		log_error("cluster: cannot register the endpoints '%s' (expected NAME://host:port,...)",
			  cl->cfg.endpoints);
		return -EINVAL;
	}
	if (cl->cfg.rack && *cl->cfg.rack) {
		if (strlen(cl->cfg.rack) >= sizeof(zb.rack)) {
			log_error("broker.rack '%s' is too long (%zu characters at most)", cl->cfg.rack,
				  sizeof(zb.rack) - 1);
			return -EINVAL;
		}
		snprintf(zb.rack, sizeof(zb.rack), "%s", cl->cfg.rack);
		zb.has_rack = true;
	}
	cl->registration = znode_broker_encode(&zb);
	return cl->registration ? 0 : -ENOMEM;
}

/* ---- state changes on request (change.h) ---- */

/* change_done_fn: the brokers hear of what was written through the next pass. */
static void cluster_on_changed(void *arg, struct change_item *items, int n, int written)
{
	struct cluster_change *cc = arg;
	struct cluster *cl = cc->cl;

	if (written && !cl->leaders.stopping)
		cluster_run_leaders(cl);
	if (cc->done) {
		cc->done(cc->arg, items, n);
	} else { /* the leader rebalance: items are its own */
		cl->rebalancing = false;
		free(cc->arg);
	}
	free(cc);
}

static int16_t cluster_change(struct cluster *cl, enum change_kind kind, int32_t broker_id, struct change_item *items,
			      int n, cluster_change_fn *done, void *arg)
{
	struct cluster_change *cc = malloc(sizeof(*cc));

	if (!cc)
		return KERR_UNKNOWN_SERVER_ERROR;
	*cc = (struct cluster_change){ .cl = cl, .done = done, .arg = arg };
	if (change_run(&cl->leaders, kind, broker_id, items, n, cluster_on_changed, cc)) {
		free(cc);
		return KERR_UNKNOWN_SERVER_ERROR;
	}
	return KERR_NONE;
}

static void cluster_on_rebalance_timer(struct loop_timer *t)
{
	struct cluster *cl = (struct cluster *)((char *)t - offsetof(struct cluster, rebalance_timer));
	struct change_item *items;
	int n;

	if (!controller_is_active(&cl->ctl))
		return; /* armed again on becoming controller */
	cluster_arm_rebalance(cl);
	if (cl->rebalancing || cl->leaders.running)
		return;
	n = change_rebalance_items(&cl->leaders, cl->cfg.leader_imbalance_per_broker_percentage, &items);
	if (n <= 0) {
		free(items);
		return;
	}
	log_info("controller: leader imbalance: moving %d partitions back to their preferred replica", n);
	cl->rebalancing = true;
	if (cluster_change(cl, CHANGE_PREFERRED, -1, items, n, NULL, items)) {
		cl->rebalancing = false; /* done never runs */
		free(items);
	}
}

int16_t cluster_elect(struct cluster *cl, bool unclean, struct change_item *items, int n, cluster_change_fn *done,
		      void *arg)
{
	if (!controller_is_active(&cl->ctl) || !cl->listed)
		return KERR_NOT_CONTROLLER;
	return cluster_change(cl, unclean ? CHANGE_UNCLEAN : CHANGE_PREFERRED, -1, items, n, done, arg);
}

int16_t cluster_isr_change(struct cluster *cl, int32_t broker_id, int64_t broker_epoch, struct change_item *items,
			   int n, cluster_change_fn *done, void *arg)
{
	const struct cluster_broker *b = NULL;

	if (!controller_is_active(&cl->ctl) || !cl->listed)
		return KERR_NOT_CONTROLLER;
	for (int i = 0; i < cl->nbrokers && !b; i++)
		if (cl->brokers[i].id == broker_id)
			b = &cl->brokers[i];
	if (!b || (broker_epoch != -1 && broker_epoch != b->epoch))
		return KERR_STALE_BROKER_EPOCH;
	return cluster_change(cl, CHANGE_ISR, broker_id, items, n, done, arg);
}

int cluster_start(struct loop *loop, const struct cluster_cfg *cfg, struct cluster **out)
{
	struct cluster *cl = calloc(1, sizeof(*cl));
	int err;

	if (!cl)
		return -ENOMEM;
	cl->cfg = *cfg;
	cl->loop = loop;
	cl->backoff_ms = CLUSTER_BACKOFF_MS_MIN;
	cl->broker_epoch = -1;
	cl->down_since_ms = clock_mono_ms();
	snprintf(cl->broker_path, sizeof(cl->broker_path), "%s/%d", ZNODE_BROKER_IDS, cfg->broker_id);
	loop_timer_init(&cl->conn_timer, cluster_on_conn_timer);
	loop_timer_init(&cl->retry_timer, cluster_on_retry_timer);
	loop_timer_init(&cl->rebalance_timer, cluster_on_rebalance_timer);
	err = cluster_registration(cl);
	if (!err)
		err = channel_new(loop, cfg->broker_id, cfg->inter_sec, &cl->channel);
	if (!err) {
		err = zk_new(loop, cfg->zookeeper_connect, cfg->session_timeout_ms, cluster_on_event, cl, &cl->zk);
		if (err)
			log_error("zookeeper.connect '%s': %s", cfg->zookeeper_connect,
				  err == -EINVAL ? "expected host:port[,host:port...][/chroot]" : strerror(-err));
	}
	if (err) {
		channel_free(cl->channel);
		free(cl->registration);
		free(cl);
		return err;
	}
	controller_init(&cl->ctl, cl->zk, cfg->broker_id);
	cl->ctl.on_active = cluster_on_active;
	cl->ctl.on_active_arg = cl;
	leaders_init(&cl->leaders, cl->zk);
	cl->leaders.unclean_default = cfg->unclean_leader_election_enable;
	cl->leaders.on_pass = cluster_on_pass;
	cl->leaders.on_pass_arg = cl;
	deleter_init(&cl->deleter, cl->zk);
	reassign_init(&cl->reassign, cl->zk, &cl->leaders);
	cl->reassign.on_stop = cluster_on_reassign_stop;
	cl->reassign.on_stop_arg = cl;
	cl->reassign.brokers = cluster_broker_ids;
	cl->reassign.brokers_arg = cl;
	pidblock_init(&cl->pids, cl->zk, cfg->broker_id);
	confchange_init(&cl->confs, cl->zk, cfg->on_topic_config, cfg->topic_config_arg);
	aclzk_init(&cl->acls, cl->zk, cfg->on_acls, cfg->acls_arg);
	confchange_on_user(&cl->confs, cfg->on_user_config, cfg->user_config_arg);
	confchange_on_quota(&cl->confs, cfg->on_quota_config, cfg->quota_config_arg);
	cl->deleter.on_delete = cluster_on_delete;
	cl->deleter.on_delete_arg = cl;
	log_info("cluster mode: broker %d joining through zookeeper %s", cfg->broker_id, cfg->zookeeper_connect);
	cluster_connect(cl);
	*out = cl;
	return 0;
}

void cluster_stop(struct cluster *cl)
{
	if (!cl)
		return;
	loop_timer_cancel(cl->loop, &cl->conn_timer);
	loop_timer_cancel(cl->loop, &cl->retry_timer);
	loop_timer_cancel(cl->loop, &cl->rebalance_timer);
	while (cl->alters)
		alterpart_cancel(cl->alters);
	leaders_stop(&cl->leaders);
	deleter_stop(&cl->deleter);
	reassign_stop(&cl->reassign);
	pidblock_stop(&cl->pids);
	confchange_stop(&cl->confs);
	aclzk_stop(&cl->acls);
	zk_free(cl->zk); /* closes the session: our registration and /controller go at once */
	channel_free(cl->channel);
	free(cl->registration);
	free(cl->brokers);
	free(cl->broker_ids);
	free(cl);
}

int cluster_brokers(const struct cluster *cl, const struct cluster_broker **out)
{
	*out = cl->brokers;
	return cl->nbrokers;
}

int cluster_producer_id(struct cluster *cl, int64_t *id)
{
	return pidblock_next(&cl->pids, id);
}

int16_t cluster_controlled_shutdown(struct cluster *cl, int32_t id, int64_t epoch)
{
	const struct cluster_broker *b = NULL;

	if (!controller_is_active(&cl->ctl) || !cl->listed)
		return KERR_NOT_CONTROLLER;
	for (int i = 0; i < cl->nbrokers && !b; i++)
		if (cl->brokers[i].id == id)
			b = &cl->brokers[i];
	if (!b)
		return KERR_BROKER_NOT_AVAILABLE;
	if (epoch != -1 && epoch < b->epoch)
		return KERR_STALE_BROKER_EPOCH;
	if (!cluster_shutting(cl, id)) {
		if (cl->nshutting == CLUSTER_SHUTTING_MAX)
			return KERR_UNKNOWN_SERVER_ERROR;
		cl->shutting[cl->nshutting++] = (struct cluster_broker_epoch){ .id = id, .epoch = b->epoch };
		log_info("controller: controlled shutdown of broker %d (broker epoch %lld): its partitions go offline",
			 id, (long long)b->epoch);
	}
	cluster_run_leaders(cl);
	return 0;
}

/* alterpart_controller_fn: the controller's registration, if it is known and live. */
static const struct cluster_broker *cluster_controller(void *arg)
{
	struct cluster *cl = arg;

	for (int i = 0; i < cl->nbrokers && cl->ctl.active_id >= 0; i++)
		if (cl->brokers[i].id == cl->ctl.active_id)
			return &cl->brokers[i];
	return NULL;
}

int cluster_alter_partition(struct cluster *cl, const char *topic, int32_t partition, int32_t leader_epoch,
			    int32_t partition_epoch, const int32_t *isr, int n, cluster_alter_partition_fn *done,
			    void *arg)
{
	struct alterpart_cfg cfg = { .loop = cl->loop,
				     .broker_id = cl->cfg.broker_id,
				     .broker_epoch = cl->broker_epoch,
				     .controller = cluster_controller,
				     .controller_arg = cl,
				     .sec = cl->cfg.inter_sec };

	if (cl->state != CL_REGISTERED)
		return -ENOTCONN;
	return alterpart_start(&cfg, topic, partition, leader_epoch, partition_epoch, isr, n, done, arg, &cl->alters);
}

int64_t cluster_broker_epoch(const struct cluster *cl)
{
	return cl->broker_epoch;
}

int32_t cluster_controller_id(const struct cluster *cl)
{
	return cl->ctl.active_id;
}

const char *cluster_id(const struct cluster *cl)
{
	return cl->cluster_id;
}

bool cluster_registered(const struct cluster *cl)
{
	return cl->state == CL_REGISTERED;
}

bool cluster_is_controller(const struct cluster *cl)
{
	return controller_is_active(&cl->ctl);
}

int32_t cluster_offline_partitions(const struct cluster *cl)
{
	int32_t n = 0;

	if (!controller_is_active(&cl->ctl))
		return 0;
	for (int i = 0; i < cl->leaders.nlast; i++)
		n += cl->leaders.last[i].has_state && cl->leaders.last[i].st.leader < 0;
	return n;
}

/* ---- topics (topics.h), through this broker's session ---- */

static bool cluster_ready(const struct cluster *cl)
{
	return cl->state == CL_REGISTERED && zk_is_open(cl->zk);
}

int cluster_topic_create(struct cluster *cl, const char *name, const char *assignment, const char *config,
			 cluster_done_fn *done, void *arg)
{
	return cluster_ready(cl) ? topics_create(cl->zk, name, assignment, config, done, arg) : -ENOTCONN;
}

int cluster_topic_config(struct cluster *cl, const char *name, cluster_config_fn *done, void *arg)
{
	return cluster_ready(cl) ? topics_read_config(cl->zk, name, done, arg) : -ENOTCONN;
}

void cluster_topic_delete(struct cluster *cl, const char *name)
{
	topics_mark_deleted(cl->zk, name);
}

int cluster_topic_grow(struct cluster *cl, const char *name, int32_t nparts, int32_t total, const int32_t *manual,
		       cluster_done_fn *done, void *arg)
{
	return cluster_ready(cl)
		       ? topics_grow(cl->zk, cl->brokers, cl->nbrokers, name, nparts, total, manual, done, arg)
		       : -ENOTCONN;
}

int cluster_topic_config_write(struct cluster *cl, const char *name, const char *config, cluster_done_fn *done,
			       void *arg)
{
	return cluster_ready(cl) ? confchange_write(cl->zk, name, config, done, arg) : -ENOTCONN;
}

int cluster_acls_write(struct cluster *cl, const struct acl_set *prev, const struct acl_set *next, aclzk_done_fn *done,
		       void *arg)
{
	return cluster_ready(cl) ? aclzk_write(&cl->acls, prev, next, done, arg) : -ENOTCONN;
}

int cluster_entity_config_update(struct cluster *cl, const char *entity, const char *const *names,
				 const char *const *values, int n, cluster_done_fn *done, void *arg)
{
	return cluster_ready(cl) ? confchange_update(cl->zk, entity, names, values, n, done, arg) : -ENOTCONN;
}

int cluster_entity_config(struct cluster *cl, const char *entity, cluster_config_fn *done, void *arg)
{
	return cluster_ready(cl) ? confchange_read(cl->zk, entity, done, arg) : -ENOTCONN;
}

int16_t cluster_reassign(struct cluster *cl, struct reassign_item *items, int n, cluster_reassign_fn *done, void *arg)
{
	if (!controller_is_active(&cl->ctl) || !cl->listed)
		return KERR_NOT_CONTROLLER;
	return reassign_alter(&cl->reassign, items, n, done, arg) ? KERR_UNKNOWN_SERVER_ERROR : KERR_NONE;
}

int16_t cluster_reassign_states(const struct cluster *cl, const struct leaders_state **out, int *n)
{
	if (!controller_is_active(&cl->ctl) || !cl->listed)
		return KERR_NOT_CONTROLLER;
	*out = cl->leaders.last;
	*n = cl->leaders.nlast;
	return KERR_NONE;
}
