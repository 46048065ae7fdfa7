/*
 * broker.h - the broker process: configuration, event loop, listener,
 * topic registry, the fsync group-commit thread and the parked requests.
 * One struct broker per process; handlers reach it through rq->b.
 */
#ifndef GREGOR_BROKER_BROKER_H
#define GREGOR_BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/config.h"
#include "net/loop.h"

struct registry;
struct syncer;
struct cleaner;
struct req;
struct group_coord;
struct txn_coord;

struct broker {
	struct broker_cfg cfg;
	struct loop *loop;
	struct registry *reg;
	struct syncer *syncer;
	struct cleaner *cleaner; /* NULL when log.cleaner.enable is false */
	struct loop_io listen_io;
	struct loop_timer accept_pause; /* listener not polled until it fires (fd limit) */
	bool accept_paused;             /* since the last successful accept */
	char host[256];                 /* advertised host */
	int32_t port;                   /* advertised port */
	char cluster_id[64];
	int32_t node_id;
	struct loop_timer housekeeping;
	struct group_coord *groups; /* the group coordinator (h_group.c) */
	struct txn_coord *txns;     /* the transaction coordinator (h_txn.c) */
	/* what a SIGHUP reload re-reads (main.c; borrowed from main's argv) */
	const char *config_path; /* server.properties, NULL = defaults only */
	int argc;                /* the command line, for its --override values */
	char **argv;
};

/* Wakes parked fetches after appends; called at the end of each loop iteration. */
void broker_after_events(void *arg);

#endif
