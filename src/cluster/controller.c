/*
 * controller.c - who is controller (see controller.h for the states).
 *
 * Every step is one asynchronous ZooKeeper request whose reply, delivered
 * on the loop by zk.c, takes the next step.  Replies of a session that was
 * closed are never delivered, and a reconnect within the same session runs
 * controller_session_start() again, so a step lost to a connection loss is
 * simply taken again; each step is harmless to repeat.
 */
#include "cluster/controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/znode.h"
#include "util/clock.h"
#include "util/log.h"

static const char *const controller_state_names[] = { "idle", "watching", "electing", "active" };

static void controller_set_state(struct controller *ctl, enum controller_state to)
{
	if (ctl->state == to)
		return;
	log_debug(LOGC_CLUSTER, "cluster", "controller state %s -> %s", controller_state_names[ctl->state],
		  controller_state_names[to]);
	ctl->state = to;
	if (to == CONTROLLER_ACTIVE && ctl->on_active)
		ctl->on_active(ctl->on_active_arg);
}

/* A request that could not even be queued: the session is going away; its successor starts over. */
static void controller_submitted(int err, const char *what)
{
	if (err)
		log_debug(LOGC_CLUSTER, "cluster", "controller: %s not sent: %s", what, strerror(-err));
}

static void controller_watch(struct controller *ctl);

static void controller_set_active(struct controller *ctl, int32_t id)
{
	if (ctl->active_id != id) {
		if (ctl->state == CONTROLLER_ACTIVE && id != ctl->broker_id)
			log_info("resigned as controller: broker %d is controller now", id);
		else if (id >= 0 && id != ctl->broker_id)
			log_info("controller is broker %d", id);
	}
	ctl->active_id = id;
	controller_set_state(ctl, id == ctl->broker_id ? CONTROLLER_ACTIVE : CONTROLLER_WATCHING);
}

static void controller_on_multi(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;

	if (rep->rc == ZCLOSING)
		return; /* that session is gone: controller_session_lost() said so */
	if (rep->rc == ZOK) {
		ctl->epoch = ctl->next_epoch;
		ctl->epoch_version = ctl->next_version;
		ctl->active_id = ctl->broker_id;
		controller_set_state(ctl, CONTROLLER_ACTIVE);
		log_info("elected controller (controller epoch %d)", ctl->epoch);
		return;
	}
	controller_set_state(ctl, CONTROLLER_WATCHING);
	if (rep->rc == ZNODEEXISTS || rep->rc == ZBADVERSION) {
		/* another broker won (or took the epoch first): see who, watching for the next vacancy */
		controller_watch(ctl);
		return;
	}
	if (rep->rc != ZCONNECTIONLOSS && rep->rc != ZSESSIONEXPIRED)
		log_warn("controller election failed: %s", zerror(rep->rc));
}

/* Creates /controller and moves /controller_epoch from version to epoch+1, all or nothing. */
static void controller_claim(struct controller *ctl, int32_t epoch, int32_t version)
{
	char *doc = znode_controller_encode(ctl->broker_id, clock_wall_ms());
	char next[16];
	struct zk_op ops[2];

	if (!doc) {
		log_error("controller election: out of memory");
		return;
	}
	ctl->next_epoch = epoch + 1;
	ctl->next_version = version + 1;
	snprintf(next, sizeof(next), "%d", ctl->next_epoch);
	ops[0] = (struct zk_op){
		.type = ZK_OP_CREATE, .path = ZNODE_CONTROLLER, .data = doc, .len = (int)strlen(doc), .ephemeral = true
	};
	ops[1] = (struct zk_op){ .type = ZK_OP_SET,
				 .path = ZNODE_CONTROLLER_EPOCH,
				 .data = next,
				 .len = (int)strlen(next),
				 .version = version };
	controller_submitted(zk_multi(ctl->zk, ops, 2, controller_on_multi, ctl), "election");
	free(doc);
}

static void controller_elect(struct controller *ctl);

static void controller_on_epoch_created(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;

	if (rep->rc == ZOK || rep->rc == ZNODEEXISTS)
		controller_elect(ctl); /* read it back, with its version */
	else if (rep->rc != ZCONNECTIONLOSS && rep->rc != ZSESSIONEXPIRED && rep->rc != ZCLOSING)
		log_warn("cannot create %s: %s", ZNODE_CONTROLLER_EPOCH, zerror(rep->rc));
}

static void controller_on_epoch(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;
	int32_t epoch;

	if (rep->rc == ZNONODE) { /* the first election ever: the epoch starts at 0 */
		controller_submitted(
			zk_create(ctl->zk, ZNODE_CONTROLLER_EPOCH, "0", 1, false, controller_on_epoch_created, ctl),
			"controller epoch creation");
		return;
	}
	if (rep->rc != ZOK) {
		if (rep->rc != ZCONNECTIONLOSS && rep->rc != ZSESSIONEXPIRED && rep->rc != ZCLOSING)
			log_warn("cannot read %s: %s", ZNODE_CONTROLLER_EPOCH, zerror(rep->rc));
		return;
	}
	if (rep->data_len < 0 || znode_epoch_decode(rep->data, (size_t)rep->data_len, &epoch) || epoch == INT32_MAX) {
		log_error("%s holds '%.*s', not an epoch: no controller election until it is fixed",
			  ZNODE_CONTROLLER_EPOCH, rep->data_len < 0 ? 0 : rep->data_len, rep->data ? rep->data : "");
		controller_set_state(ctl, CONTROLLER_WATCHING);
		return;
	}
	ctl->epoch = epoch;
	controller_claim(ctl, epoch, rep->version);
}

static void controller_elect(struct controller *ctl)
{
	controller_set_state(ctl, CONTROLLER_ELECTING);
	controller_submitted(zk_get(ctl->zk, ZNODE_CONTROLLER_EPOCH, false, controller_on_epoch, ctl),
			     "controller epoch read");
}

/* We hold /controller without having seen our election's reply (lost with a connection): read the epoch. */
static void controller_on_own_epoch(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;
	int32_t epoch;

	if (rep->rc == ZOK && rep->data_len >= 0 && !znode_epoch_decode(rep->data, (size_t)rep->data_len, &epoch) &&
	    (epoch != ctl->epoch || rep->version != ctl->epoch_version)) {
		ctl->epoch = epoch;
		ctl->epoch_version = rep->version;
		log_info("controller epoch %d", epoch);
		if (ctl->state == CONTROLLER_ACTIVE && ctl->on_active)
			ctl->on_active(ctl->on_active_arg); /* what it did with the epoch unknown was refused */
	}
}

static void controller_on_get(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;
	int32_t id;

	if (rep->rc == ZNONODE)
		return; /* gone again: the exists-watch fires and we elect */
	if (rep->rc != ZOK)
		return;
	if (rep->data_len < 0 || znode_controller_decode(rep->data, (size_t)rep->data_len, &id)) {
		log_warn("%s holds '%.*s', not a controller registration", ZNODE_CONTROLLER,
			 rep->data_len < 0 ? 0 : rep->data_len, rep->data ? rep->data : "");
		controller_set_active(ctl, -1);
		return;
	}
	if (id == ctl->broker_id && rep->ephemeral_owner != ctl->session_id) {
		/* ours, from an earlier session that has not expired yet: it goes, the watch fires */
		controller_set_active(ctl, -1);
		return;
	}
	if (id == ctl->broker_id && ctl->state != CONTROLLER_ACTIVE)
		controller_submitted(zk_get(ctl->zk, ZNODE_CONTROLLER_EPOCH, false, controller_on_own_epoch, ctl),
				     "controller epoch read");
	controller_set_active(ctl, id);
}

static void controller_on_exists(void *arg, const struct zk_reply *rep)
{
	struct controller *ctl = arg;

	if (rep->rc == ZOK)
		controller_submitted(zk_get(ctl->zk, ZNODE_CONTROLLER, false, controller_on_get, ctl),
				     "controller read");
	else if (rep->rc == ZNONODE)
		controller_elect(ctl);
}

/* Arms the exists-watch on /controller and acts on what is there. */
static void controller_watch(struct controller *ctl)
{
	controller_submitted(zk_exists(ctl->zk, ZNODE_CONTROLLER, true, controller_on_exists, ctl), "controller watch");
}

void controller_init(struct controller *ctl, struct zk *zk, int32_t broker_id)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->zk = zk;
	ctl->broker_id = broker_id;
	ctl->active_id = -1;
	ctl->epoch = -1;
	ctl->epoch_version = -2; /* never matches: no write before the epoch is known */
	ctl->state = CONTROLLER_IDLE;
}

void controller_session_start(struct controller *ctl, int64_t session_id)
{
	ctl->session_id = session_id;
	if (ctl->state == CONTROLLER_IDLE)
		controller_set_state(ctl, CONTROLLER_WATCHING);
	controller_watch(ctl);
}

void controller_session_lost(struct controller *ctl)
{
	if (ctl->state == CONTROLLER_ACTIVE)
		log_warn("resigned as controller: the zookeeper session that held %s is gone", ZNODE_CONTROLLER);
	ctl->active_id = -1;
	controller_set_state(ctl, CONTROLLER_IDLE);
}

bool controller_on_event(struct controller *ctl, enum zk_event ev, const char *path)
{
	if (!path || strcmp(path, ZNODE_CONTROLLER))
		return false;
	if (ev == ZK_EV_DELETED && ctl->active_id >= 0) {
		log_info("controller broker %d went away; electing a new one", ctl->active_id);
		if (ctl->state == CONTROLLER_ACTIVE)
			log_warn("resigned as controller: %s was deleted", ZNODE_CONTROLLER);
		ctl->active_id = -1;
		controller_set_state(ctl, CONTROLLER_WATCHING);
	}
	if (ctl->state != CONTROLLER_IDLE)
		controller_watch(ctl);
	return true;
}

bool controller_is_active(const struct controller *ctl)
{
	return ctl->state == CONTROLLER_ACTIVE;
}
