/*
 * mcache.h - a broker's metadata cache in cluster mode: the live brokers
 * and every partition's leader, leader epoch, replicas, ISR and offline
 * replicas, as the controller's last UpdateMetadata gave them.  Metadata
 * answers from it and Produce, Fetch and the other partition requests
 * ask it which broker leads a partition.
 *
 * The controller sends the whole cluster in every UpdateMetadata, so an
 * update replaces the cache; one from an older controller epoch than the
 * cache holds is refused (STALE_CONTROLLER_EPOCH).
 */
#ifndef GREGOR_CLUSTER_MCACHE_H
#define GREGOR_CLUSTER_MCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/cluster.h"
#include "proto_msgs.h"

struct mcache_ids {
	int32_t n;
	int32_t *v;
};

struct mcache_part {
	int32_t leader; /* -1: none */
	int32_t leader_epoch;
	struct mcache_ids replicas, isr, offline;
};

struct mcache_topic {
	char *name;
	struct kuuid id;
	int32_t nparts;
	struct mcache_part *parts; /* [nparts]; index = partition */
};

struct mcache {
	int32_t controller_epoch;    /* highest seen (UpdateMetadata and LeaderAndIsr), -1 before any */
	bool filled;                 /* an UpdateMetadata was applied */
	struct mcache_topic *topics; /* sorted by name */
	int ntopics;
	struct cluster_broker *brokers; /* sorted by id */
	int nbrokers;
};

void mcache_init(struct mcache *mc);
void mcache_free(struct mcache *mc);
/* Replaces the cache with in (version 5+).  0, or -ENOMEM (the cache is unchanged). */
int mcache_update(struct mcache *mc, const struct UpdateMetadataRequest *in);
/* The topic named name (len bytes), or NULL. */
const struct mcache_topic *mcache_topic(const struct mcache *mc, const char *name, int32_t len);
/* The partition, or NULL if the cache has no such topic or partition. */
const struct mcache_part *mcache_part(const struct mcache *mc, const char *name, int32_t len, int32_t partition);

#endif
