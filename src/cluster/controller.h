/*
 * controller.h - controller election through ZooKeeper, Kafka's way.
 *
 * One live broker is the controller: the one whose ephemeral /controller
 * node exists ({"version":1,"brokerid":N,...}).  Winning an election
 * creates /controller and sets /controller_epoch to the epoch read plus one
 * in one multi-op, conditional on the epoch's znode version, so two
 * brokers can never both take the same epoch.  Every broker keeps an
 * exists-watch on /controller; when the node goes away (its broker's
 * session ended) each one tries again and one wins.
 *
 * States (controller_set_state() logs each change):
 *
 *   IDLE --controller_session_start()--> WATCHING --/controller absent--> ELECTING
 *   ELECTING --multi ok--> ACTIVE          (this broker is the controller)
 *   ELECTING --NODEEXISTS / BADVERSION--> WATCHING   (read who won, or try again)
 *   WATCHING/ACTIVE --watch fired--> WATCHING         (read /controller again)
 *   any --controller_session_lost()--> IDLE           (an expired session resigned us)
 *
 * This module only decides who it is; on becoming controller it calls
 * on_active, and what the controller then does is in leaders.h.
 */
#ifndef GREGOR_CLUSTER_CONTROLLER_H
#define GREGOR_CLUSTER_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/zk.h"

enum controller_state { CONTROLLER_IDLE, CONTROLLER_WATCHING, CONTROLLER_ELECTING, CONTROLLER_ACTIVE };

struct controller {
	struct zk *zk;
	int32_t broker_id;     /* this broker */
	int32_t active_id;     /* the controller's broker id, -1 unknown or none */
	int32_t epoch;         /* last /controller_epoch seen or written, -1 unknown */
	int32_t next_epoch;    /* ELECTING: the epoch being written */
	int32_t epoch_version; /* /controller_epoch's znode version holding epoch, -2 unknown */
	int32_t next_version;  /* ELECTING: the version it will have */
	int64_t session_id;    /* of the registered session: /controller is ours only if this session owns it */
	enum controller_state state;
	/* called on becoming controller, and again when its epoch was read back (set by the owner) */
	void (*on_active)(void *arg);
	void *on_active_arg;
};

void controller_init(struct controller *ctl, struct zk *zk, int32_t broker_id);
/* The session (session_id) is registered: watch /controller and elect if there is none. */
void controller_session_start(struct controller *ctl, int64_t session_id);
/* The session expired or was given up: no longer controller, controller unknown. */
void controller_session_lost(struct controller *ctl);
/* A watch event; true if it was about /controller. */
bool controller_on_event(struct controller *ctl, enum zk_event ev, const char *path);
bool controller_is_active(const struct controller *ctl);

#endif
