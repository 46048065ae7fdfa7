/*
 * produce_check.h - Produce's validation of one partition's records under
 * its topic's settings (the rules are proto/validate.h), and the answer
 * Kafka gives when they fail: the error code, an ErrorMessage and, from
 * Produce v8, one RecordErrors entry per offending record.
 */
#ifndef GREGOR_BROKER_PRODUCE_CHECK_H
#define GREGOR_BROKER_PRODUCE_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/api.h"
#include "broker/registry.h"

/*
 * message.timestamp.before.max.ms / after.max.ms of a topic, with the
 * deprecated message.timestamp.difference.max.ms standing in for either
 * that is left at its default, as Kafka 3.6+ resolves them.
 */
void produce_ts_bounds(const struct topic_cfg *tc, int64_t *before_max_ms, int64_t *after_max_ms);

/*
 * Validates records (len bytes, the request's mutable frame) for topic t
 * at the broker time now_ms, correcting batch maxTimestamps in place.
 * Returns true if they may be appended; false with out's ErrorCode,
 * ErrorMessage and RecordErrors filled in (allocated from rq).
 */
bool produce_check(struct req *rq, const struct topic *t, uint8_t *records, size_t len, int64_t now_ms,
		   struct ProduceResponsePartition *out);

#endif
