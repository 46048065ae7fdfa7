/*
 * syncer.h - fsync group commit.
 *
 * acks=all is answered only once the data is on stable storage.  The
 * event-loop thread marks partitions dirty and gets a ticket; a flusher
 * thread takes every dirty partition at once, fdatasyncs them, and
 * publishes the round it finished.  Every request that arrived while a
 * sync was running shares the next one: one fdatasync per partition per
 * round, however many producers wait on it.
 *
 *   loop thread                      flusher thread
 *   t = syncer_want(s, part)  --->   take dirty set, round = t
 *   ... park request with t          part_sync() each partition
 *   on wake: syncer_done(s) >= t <-- done = round; loop_wake()
 *
 * Rounds follow each other without a pause: the next one starts as soon
 * as one finishes and takes every partition marked dirty meanwhile, so
 * whatever is appended is synced within about two rounds.  An idle
 * flusher is woken by syncer_kick() at the end of an event-loop pass, not
 * by each syncer_want(): every request read in one pass (from all
 * connections) shares the round that pass starts.
 *
 * A failed sync is final: on_fail(arg, -errno) runs once, on the flusher
 * thread, and that round and every later one fail without syncing
 * anything (docs/durability.md, "When a sync fails").
 */
#ifndef GREGOR_BROKER_SYNCER_H
#define GREGOR_BROKER_SYNCER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/loop.h"

struct part;
struct syncer;

typedef void syncer_fail_fn(void *arg, int err);

int syncer_start(struct loop *loop, syncer_fail_fn *on_fail, void *fail_arg, struct syncer **out);
/* Syncs what is still dirty, stops the thread and frees s. */
void syncer_stop(struct syncer *s);
/*
 * Marks part dirty; returns the ticket of the round that will sync what
 * was appended to it so far: the running round if it has yet to reach
 * part, else the next one.
 */
uint64_t syncer_want(struct syncer *s, struct part *part);
/* Wakes an idle flusher if anything was marked dirty since the last call (end of each loop pass). */
void syncer_kick(struct syncer *s);
/* The loop noticed the thread's wake-up: counts how long after the newest round's end (stats). */
void syncer_note_wake(struct syncer *s);
/* The last round completed; rounds complete in order. */
uint64_t syncer_done(struct syncer *s);
/* True if round ticket failed: a sync failed in it or in an earlier round (the data may not be durable). */
bool syncer_failed(struct syncer *s, uint64_t ticket);
/*
 * Calls fn (on the loop thread) for every partition synced by the rounds
 * completed since the last call, so that only the fetches parked on them
 * are woken when their high watermark moves.
 */
void syncer_take_synced(struct syncer *s, void (*fn)(const struct part *part));
/* What the flusher did since it started (the shutdown log line, bench/compare). */
struct syncer_stats {
	uint64_t rounds;      /* rounds completed */
	uint64_t part_syncs;  /* partitions synced, over all rounds */
	uint64_t busy_us;     /* time spent in rounds */
	uint64_t max_parts;   /* the largest round, in partitions */
	uint64_t wakes;       /* rounds that began by waking the sleeping thread */
	uint64_t wake_us;     /* from syncer_kick to the thread running, summed over wakes */
	uint64_t handbacks;   /* syncer_note_wake calls that found a newer round */
	uint64_t handback_us; /* from that round's end to the call, summed */
};
void syncer_stats(struct syncer *s, struct syncer_stats *out);
/* Forgets part (it is being closed or deleted); waits if it is being synced. */
void syncer_forget(struct syncer *s, struct part *part);

#endif
