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

/* True if id may have been handed out by this broker (0 <= id < next). */
bool pid_issued(const struct pid_alloc *pa, int64_t id);

#endif
