/*
 * coord_topic.h - how a coordinator reaches the partitions of its internal
 * topic (__consumer_offsets, __transaction_state).
 *
 * Coordinators never keep a pointer to a partition or to the topic's
 * partition array: the registry owns both and may reallocate the array
 * (topic changes), so every write and load looks its partition up by
 * index through part().  nparts is the partition count the coordinator
 * loaded with; hash % nparts picks a key's partition, so it must not change
 * while the broker runs (the broker refuses partition changes on internal
 * topics).
 */
#ifndef GREGOR_COORD_COORD_TOPIC_H
#define GREGOR_COORD_COORD_TOPIC_H

#include <stdint.h>

#include "util/buf.h"

struct part;

struct coord_topic {
	/* The open partition, or NULL when it is offline or the topic is gone. */
	struct part *(*part)(void *arg, int32_t partition);
	void *arg;
	int32_t nparts; /* > 0 once attached */
};

/* Java's String.hashCode of key (UTF-8 decoded to UTF-16 code units). */
int32_t coord_java_hash(struct kstr key);
/*
 * The partition of an internal topic of nparts partitions that
 * coordinates key (a group id or transactional.id), as Kafka picks it:
 * Utils.abs(hashCode) % nparts, where abs(INT_MIN) is 0.
 */
int32_t coord_partition_for(struct kstr key, int32_t nparts);

#endif
