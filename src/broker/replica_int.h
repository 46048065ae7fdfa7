/*
 * replica_int.h - struct repl, shared by replica.c (partition roles, the
 * leader's side, acks=all waits), replica_table.c (the states' hash),
 * replica_isr.c (the ISR and the high watermark over it), replica_fetch.c
 * (the followers' fetchers) and replica_stats.c (counts for /metrics) only.
 */
#ifndef GREGOR_BROKER_REPLICA_INT_H
#define GREGOR_BROKER_REPLICA_INT_H

#include "broker/ckpt.h"
#include "broker/replica.h"
#include "net/loop.h"

#define REPL_BUCKETS 1024

struct replica_leader_ep {
	int32_t id;
	char host[256];
	int32_t port;
};

struct repl_fetcher;
struct repl_wait_set;

struct repl {
	struct broker *b;
	struct replica *buckets[REPL_BUCKETS];
	struct replica_leader_ep *leaders; /* the last LeaderAndIsr's LiveLeaders */
	int32_t nleaders;
	struct repl_fetcher *fetchers; /* one per leader broker this broker follows */
	struct repl_wait_set *waits;   /* parked acks=all produces */
	int32_t nwaits;                /* how many */
	bool waits_dirty;              /* a high watermark moved: check the waits */
	bool unapplied;                /* a role waits for its partition's log to be made (replica_on_made) */
	int64_t hw_ckpt_ms;            /* last replication-offset-checkpoint */
	int64_t isr_check_ms;          /* last ISR check (replica_isr.c) */
	struct ckpt_map *hw_start;     /* the checkpoint found at start-up (NULL: none) */
};

static inline bool repl_ids_has(const struct replica_ids *ids, int32_t id)
{
	for (int32_t i = 0; i < ids->n; i++)
		if (ids->v[i] == id)
			return true;
	return false;
}

/* replica_table.c: the state's slot in the hash (*slot NULL: none yet). */
struct replica **repl_slot(struct repl *rp, const char *topic, int32_t len, int32_t partition);
/* Calls fn for every partition state. */
void repl_foreach(struct repl *rp, void (*fn)(struct repl *rp, struct replica *r, void *arg), void *arg);
/* The partition's log here, or NULL (not made yet, or offline). */
struct part *repl_part(struct repl *rp, const struct replica *r);

/* replica_isr.c: leader: bounds the high watermark by the ISR's durable ends; wakes whoever waits if it moved. */
void repl_update_hw(struct repl *rp, struct replica *r, struct part *part);
/* Copies in into ids.  0 or -ENOMEM (ids unchanged). */
int repl_ids_set(struct replica_ids *ids, const struct int32_array *in);

/* replica_fetch.c: starts and stops fetchers so that there is one per leader followed. */
void repl_fetchers_sync(struct repl *rp);
void repl_fetchers_free(struct repl *rp);
/* Sends a Fetch from every idle fetcher (a partition joined one). */
void repl_fetchers_kick(struct repl *rp);
/* Sends the fetches that waited for a sync round now done. */
void repl_fetchers_on_synced(struct repl *rp);

#endif
