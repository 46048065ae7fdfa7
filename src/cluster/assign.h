/*
 * assign.h - replica assignment of a new topic's partitions to brokers,
 * Kafka's algorithm (ZooKeeper mode, AdminUtils): round-robin from a
 * random start, each partition's followers shifted so that leaders and
 * followers spread evenly; when every broker has a rack, the broker list
 * is first rearranged to alternate racks and followers prefer racks that
 * hold no replica of the partition yet.  Pure: the caller draws the two
 * random numbers, so tests fix them.
 */
#ifndef GREGOR_CLUSTER_ASSIGN_H
#define GREGOR_CLUSTER_ASSIGN_H

#include <stdbool.h>
#include <stdint.h>

/* One live broker; rack NULL for none. */
struct assign_broker {
	int32_t id;
	const char *rack;
};

/*
 * Replicas of partitions first .. first+nparts-1: out[(p - first) * rf + r]
 * is replica r of partition p (r 0 the preferred leader).  brokers: any
 * order (sorted by id here, as Kafka does), ids unique; start and shift:
 * random numbers >= 0 (Kafka's random start index and replica shift,
 * taken modulo the broker count).  Returns 0, -EINVAL (rf < 1, rf larger
 * than the broker count, nparts < 1) or -EXDEV (some brokers have a rack
 * and some do not: Kafka refuses rack-aware assignment then).
 */
int assign_replicas(const struct assign_broker *brokers, int nbrokers, int32_t first, int32_t nparts, int32_t rf,
		    uint32_t start, uint32_t shift, int32_t *out);

#endif
