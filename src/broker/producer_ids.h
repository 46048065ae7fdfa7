/*
 * producer_ids.h - new producer ids for idempotent and transactional
 * producers (producer_ids.c).  Loop thread.
 */
#ifndef GREGOR_BROKER_PRODUCER_IDS_H
#define GREGOR_BROKER_PRODUCER_IDS_H

#include <stdint.h>

struct broker;
struct pid_alloc;

/* The allocator of b's first log dir (also the epochs of idempotent ids, pid.h); NULL if it cannot be opened. */
struct pid_alloc *producer_ids_local(struct broker *b);
/* A new producer id: cluster mode from the cluster's blocks (-EAGAIN while none is in hand), else from
 * producer_ids_local().  0 or -errno. */
int producer_ids_next(struct broker *b, int64_t *id);

#endif
