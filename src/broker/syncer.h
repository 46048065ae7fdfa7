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
 */
#ifndef GREGOR_BROKER_SYNCER_H
#define GREGOR_BROKER_SYNCER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/loop.h"

struct part;
struct syncer;

int syncer_start(struct loop *loop, struct syncer **out);
/* Syncs what is still dirty, stops the thread and frees s. */
void syncer_stop(struct syncer *s);
/* Marks part dirty; returns the ticket of the round that will sync it. */
uint64_t syncer_want(struct syncer *s, struct part *part);
/* The last round completed; rounds complete in order. */
uint64_t syncer_done(struct syncer *s);
/* True if any sync in rounds up to ticket failed (the data may not be durable). */
bool syncer_failed(struct syncer *s, uint64_t ticket);
/* Forgets part (it is being closed or deleted); waits if it is being synced. */
void syncer_forget(struct syncer *s, struct part *part);

#endif
