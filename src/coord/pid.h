/*
 * pid.h - producer id allocation, unique across restarts.
 *
 * Ids are handed out from blocks of PID_BLOCK_SIZE.  Before the first id of
 * a block is used, the block's end is written to <log dir>/producer-id-block
 * (checkpoint.h: tmp file, fsync, rename, directory fsync), so after any
 * crash the next broker starts at or above every id ever handed out; a crash
 * wastes at most the rest of one block.  File format (text, like Kafka's
 * checkpoint files):
 *
 *   "0\n"            format version
 *   "<block_end>\n"  decimal: every id below it may have been handed out
 *
 * Kafka keeps the same information as {block_start, block_end} in ZooKeeper
 * (/latest_producer_id_block) or the KRaft controller; a single node keeps
 * it next to its data.  Threading: the event-loop thread only.
 *
 * Idempotent (non-transactional) producers may ask for an epoch bump
 * (KIP-360) with their current id and epoch.  The allocator remembers the
 * current epoch of the last PID_EPOCHS idempotent ids it handed out (in
 * memory, slot id % PID_EPOCHS, so the newest ids never collide); only a
 * request naming an id and its current epoch is a bump, anything else gets
 * a new id, so no client can bump, and so fence, another's producer id.
 * After a restart or an eviction the bump is answered with a new id, which
 * is also a valid KIP-360 answer (Kafka always gives one).
 */
#ifndef GREGOR_COORD_PID_H
#define GREGOR_COORD_PID_H

#include <stdbool.h>
#include <stdint.h>

#define PID_BLOCK_SIZE 1000
#define PID_FILE "producer-id-block"

struct pid_alloc;

/*
 * Opens the allocator for log directory dir (which must exist); reads the
 * block file if present.  No block is reserved until pid_next.  Returns 0,
 * -EBADMSG if the file is malformed (named in a log line), or -errno.
 */
int pid_open(const char *dir, struct pid_alloc **out);
void pid_close(struct pid_alloc *pa);

/* A new producer id (OUT *id), reserving a new block on disk first when needed.  0 or -errno. */
int pid_next(struct pid_alloc *pa, int64_t *id);

#define PID_EPOCHS 16384

/* True if id may have been handed out by this broker (0 <= id < next). */
bool pid_issued(const struct pid_alloc *pa, int64_t id);
/* Records epoch as the current epoch of idempotent producer id. */
void pid_epoch_set(struct pid_alloc *pa, int64_t id, int16_t epoch);
/* True if id is a remembered idempotent producer id whose current epoch is epoch. */
bool pid_epoch_current(const struct pid_alloc *pa, int64_t id, int16_t epoch);

#endif
