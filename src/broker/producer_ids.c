/*
 * producer_ids.c - where new producer ids come from, for idempotent
 * producers (h_idem.c) and transactional ones (h_txn.c) alike: in cluster
 * mode the cluster's blocks in ZooKeeper (cluster.h), so that no two
 * brokers hand out the same id; on a single node the allocator persisted
 * in the first log dir (coord/pid.h).
 */
#include "broker/producer_ids.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/cluster.h"
#include "coord/pid.h"
#include "util/log.h"

static struct pid_alloc *producer_ids_pids; /* opened on first use, lives as long as the process */

struct pid_alloc *producer_ids_local(struct broker *b)
{
	char dir[PATH_MAX];
	int rc;

	if (producer_ids_pids)
		return producer_ids_pids;
	if (config_first_log_dir(&b->cfg, dir, sizeof(dir)))
		return NULL;
	rc = pid_open(dir, &producer_ids_pids);
	if (rc) {
		log_error("cannot open the producer id allocator in '%s': %s", dir, strerror(-rc));
		producer_ids_pids = NULL;
	}
	return producer_ids_pids;
}

int producer_ids_next(struct broker *b, int64_t *id)
{
	struct pid_alloc *pa;

	if (b->cluster)
		return cluster_producer_id(b->cluster, id);
	pa = producer_ids_local(b);
	return pa ? pid_next(pa, id) : -EIO;
}
