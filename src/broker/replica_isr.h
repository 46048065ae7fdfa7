/*
 * replica_isr.h - a leader's ISR shrink and expand, sent to the controller
 * with AlterPartition (replica_isr.c; docs/cluster.md, "Replication").
 * Loop thread only.
 */
#ifndef GREGOR_BROKER_REPLICA_ISR_H
#define GREGOR_BROKER_REPLICA_ISR_H

#include <stdbool.h>
#include <stdint.h>

struct part;
struct repl;
struct replica;
struct replica_follower;

/* True if id counts for r's high watermark: in the ISR, or in the one asked for (the maximal ISR). */
bool repl_isr_counts(const struct replica *r, int32_t id);
/* A LeaderAndIsr replaced r's state: a change under way is forgotten (its answer ignored). */
void repl_isr_reset(struct replica *r);
/* After follower f's fetch of r (led here): asks to add it to the ISR if it caught up. */
void repl_isr_maybe_expand(struct repl *rp, struct replica *r, struct part *part, const struct replica_follower *f);
/* Housekeeping: every replica.lag.time.max.ms / 2, asks to remove the followers out of sync. */
void repl_isr_check(struct repl *rp, int64_t now_ms);

#endif
