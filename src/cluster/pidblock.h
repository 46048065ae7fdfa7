/*
 * pidblock.h - producer ids unique across the cluster, taken in blocks
 * from /latest_producer_id_block as Kafka's ZooKeeper-mode
 * ProducerIdManager does.
 *
 * A block is the ZNODE_PID_BLOCK_SIZE ids after the block_end the znode
 * holds (0 .. 999 when it holds none); it is ours once the znode is set to
 * it conditional on the version read (a conflict: read and try again).  So
 * no two brokers ever hand out the same id, and a restarted broker takes
 * a new block (the rest of its old one is wasted, as in Kafka).
 *
 * Taking a block needs ZooKeeper round trips while InitProducerId must be
 * answered from the loop at once, so the next block is taken ahead: once
 * a session is registered, and whenever the current block is half used.
 * pidblock_next() is -EAGAIN only when both are used up (the first
 * request after start-up, or ZooKeeper unreachable); the broker answers
 * that with a retriable error.  Loop thread only.
 */
#ifndef GREGOR_CLUSTER_PIDBLOCK_H
#define GREGOR_CLUSTER_PIDBLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct zk;

struct pidblock {
	struct zk *zk;
	int32_t broker_id;
	int64_t next, end;              /* the current block: next .. end-1 left; empty when equal */
	int64_t ahead_start, ahead_end; /* the block taken ahead; empty when equal */
	int64_t take_start;             /* the block being written */
	int tries;                      /* conflicting writes of this take */
	bool taking;                    /* a take is under way */
	bool stopped;
};

void pidblock_init(struct pidblock *pb, struct zk *zk, int32_t broker_id);
/* Takes the next block from ZooKeeper unless one is in hand already or being taken. */
void pidblock_fill(struct pidblock *pb);
/* OUT *id: a producer id no other broker hands out.  0, or -EAGAIN (no block yet: one is being taken). */
int pidblock_next(struct pidblock *pb, int64_t *id);
/* Replies still to come are ignored. */
void pidblock_stop(struct pidblock *pb);

#endif
