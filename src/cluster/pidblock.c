/*
 * pidblock.c - blocks of producer ids from /latest_producer_id_block
 * (pidblock.h): read the znode, write the following block conditional on
 * the version read, retry on a conflict.
 */
#include "cluster/pidblock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/zk.h"
#include "cluster/znode.h"
#include "util/log.h"

#define PIDBLOCK_TRIES 10 /* conflicts in a row before waiting for the next fill */

static void pidblock_read(struct pidblock *pb);

void pidblock_init(struct pidblock *pb, struct zk *zk, int32_t broker_id)
{
	memset(pb, 0, sizeof(*pb));
	pb->zk = zk;
	pb->broker_id = broker_id;
}

void pidblock_stop(struct pidblock *pb)
{
	pb->stopped = true;
}

static void pidblock_failed(struct pidblock *pb, const char *what, int rc)
{
	pb->taking = false;
	if (rc != ZCLOSING)
		log_warn("cannot take a block of producer ids from %s (%s): %s", ZNODE_PID_BLOCK, what, zerror(rc));
}

/* The set came back: the block in the document is ours, or another broker took it first. */
static void pidblock_on_set(void *arg, const struct zk_reply *rep)
{
	struct pidblock *pb = arg;

	if (pb->stopped || rep->rc == ZCLOSING) {
		pb->taking = false;
		return;
	}
	if (rep->rc == ZBADVERSION && ++pb->tries < PIDBLOCK_TRIES) {
		pidblock_read(pb);
		return;
	}
	if (rep->rc != ZOK) {
		pidblock_failed(pb, "write", rep->rc);
		return;
	}
	pb->taking = false;
	log_info("took producer ids %" PRId64 "..%" PRId64 " from %s", pb->take_start,
		 pb->take_start + ZNODE_PID_BLOCK_SIZE - 1, ZNODE_PID_BLOCK);
	if (pb->next == pb->end) {
		pb->next = pb->take_start;
		pb->end = pb->take_start + ZNODE_PID_BLOCK_SIZE;
	} else {
		pb->ahead_start = pb->take_start;
		pb->ahead_end = pb->take_start + ZNODE_PID_BLOCK_SIZE;
	}
}

static void pidblock_on_get(void *arg, const struct zk_reply *rep)
{
	struct pidblock *pb = arg;
	int64_t start = 0, last = -1;
	char *doc;
	struct zk_op op = { .type = ZK_OP_SET, .path = ZNODE_PID_BLOCK };

	if (pb->stopped || rep->rc != ZOK) {
		pidblock_failed(pb, "read", pb->stopped ? ZCLOSING : rep->rc);
		return;
	}
	if (rep->data && rep->data_len > 0 && znode_pid_block_decode(rep->data, (size_t)rep->data_len, &start, &last)) {
		log_error("%s is not Kafka's producer id block: no producer ids are handed out", ZNODE_PID_BLOCK);
		pb->taking = false;
		return;
	}
	if (last > INT64_MAX - ZNODE_PID_BLOCK_SIZE - 1) {
		log_error("producer ids are exhausted (%s ends at %" PRId64 ")", ZNODE_PID_BLOCK, last);
		pb->taking = false;
		return;
	}
	pb->take_start = last + 1;
	doc = znode_pid_block_encode(pb->broker_id, last + 1, last + ZNODE_PID_BLOCK_SIZE);
	op.data = doc;
	op.len = doc ? (int)strlen(doc) : 0;
	op.version = rep->version;
	if (!doc || zk_multi(pb->zk, &op, 1, pidblock_on_set, pb))
		pidblock_failed(pb, "write", ZCONNECTIONLOSS);
	free(doc);
}

static void pidblock_read(struct pidblock *pb)
{
	if (zk_get(pb->zk, ZNODE_PID_BLOCK, false, pidblock_on_get, pb))
		pidblock_failed(pb, "read", ZCONNECTIONLOSS);
}

void pidblock_fill(struct pidblock *pb)
{
	if (pb->taking || pb->stopped || pb->ahead_start != pb->ahead_end)
		return;
	pb->taking = true;
	pb->tries = 0;
	pidblock_read(pb);
}

int pidblock_next(struct pidblock *pb, int64_t *id)
{
	if (pb->next == pb->end && pb->ahead_start != pb->ahead_end) {
		pb->next = pb->ahead_start;
		pb->end = pb->ahead_end;
		pb->ahead_start = pb->ahead_end = 0;
	}
	if (pb->next == pb->end) {
		pidblock_fill(pb);
		return -EAGAIN;
	}
	*id = pb->next++;
	if (pb->end - pb->next <= ZNODE_PID_BLOCK_SIZE / 2)
		pidblock_fill(pb);
	return 0;
}
