/*
 * creator.h - topics and partitions made off the event loop, in rounds.
 *
 * Making a partition costs file work and, done alone, two or more fsyncs;
 * on the event loop that stalled every client while a big CreateTopics or
 * the first group's __consumer_offsets was made.  Here the loop thread
 * begins a build (registry.h: registry_create_begin / registry_grow_begin)
 * and hands it over; one worker thread takes every build queued since its
 * last round and makes their files together (registry_build_round: one
 * syncfs and one fsync of the log dir per round, however many topics), so
 * all the requests that arrive while a round runs share the next one:
 *
 *   loop thread                           worker thread
 *   registry_create_begin(), creator_add  take the queue at creator_kick
 *   ... the request waits (b->done)       registry_build_round(all of them)
 *   on wake: registry_build_end(), done <- loop_wake()
 *
 * Builds end in the order they were added.  At creator_stop() a round
 * under way is finished and the builds not started are ended with
 * -ECANCELED (nothing of them was made).
 */
#ifndef GREGOR_BROKER_CREATOR_H
#define GREGOR_BROKER_CREATOR_H

#include "broker/registry.h"
#include "net/loop.h"

struct creator;

int creator_start(struct loop *loop, struct registry *reg, struct creator **out);
/* Finishes the round under way, ends every build (b->done told) and frees c. */
void creator_stop(struct creator *c);
/*
 * registry_create_begin() / registry_grow_begin() and creator_add(): OUT
 * the build, whose done, waiter and slot the caller may set until it
 * returns to the loop.  0 or their -errno.
 */
int creator_create(struct creator *c, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
		   struct reg_build **out);
int creator_grow(struct creator *c, struct topic *t, int32_t total, struct reg_build **out);
/*
 * Queues b for the next round; b->done (if set) is called with
 * b->waiter, b->slot and the outcome (0 or -errno) once it has ended,
 * on the loop thread.
 */
void creator_add(struct creator *c, struct reg_build *b);
/* Wakes the worker if anything was added since the last call (end of each loop pass). */
void creator_kick(struct creator *c);
/* Ends the builds of the rounds finished since the last call (the loop's wake-up). */
void creator_on_wake(struct creator *c);

#endif
