/*
 * server.h - bringing the broker up and down: listener, registry, syncer,
 * signals and periodic housekeeping (retention, checkpoints, time-based
 * flushes).
 */
#ifndef GREGOR_BROKER_SERVER_H
#define GREGOR_BROKER_SERVER_H

#include "broker/broker.h"

/* Takes ownership of cfg's contents.  Returns 0 or -errno (logged). */
int server_start(struct broker *b);
/* Runs until SIGTERM/SIGINT, then shuts down cleanly. */
int server_run(struct broker *b);
void server_stop(struct broker *b);

#endif
