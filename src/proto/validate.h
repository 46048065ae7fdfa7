/*
 * validate.h - what Produce checks in a partition's records before they are
 * stored, as Kafka's log validator does for record batches v2.
 *
 * Every batch, compressed or not, is read down to its records:
 *
 *   batch   whole, magic 2 (0/1: UNSUPPORTED_FOR_MESSAGE_FORMAT), a known
 *           codec, CRC-32C correct, not larger than max.message.bytes
 *           (MESSAGE_TOO_LARGE); otherwise CORRUPT_MESSAGE.  Not a control
 *           batch, recordCount >= 1 and lastOffsetDelta = recordCount - 1
 *           (INVALID_RECORD).  A compressed body must decompress
 *           (CORRUPT_MESSAGE) to at most VALIDATE_INFLATE_MAX(max.message.bytes)
 *           bytes (MESSAGE_TOO_LARGE).
 *   record  each one's length covers exactly its fields (attributes,
 *           timestampDelta, offsetDelta, key, value, headers with non-null
 *           keys), the records fill the body exactly: INVALID_RECORD.
 *           offsetDelta must be the record's index (INVALID_RECORD for that
 *           record), a compacted topic's records need a key (INVALID_RECORD
 *           for that record), and on a CreateTime topic a timestamp other
 *           than -1 must lie within [now - before.max, now + after.max]
 *           (INVALID_TIMESTAMP for that record).
 *
 * The batch header's maxTimestamp is then set to the largest record
 * timestamp (-1 if none) with a new CRC when the producer wrote another
 * value (some write -1), as Kafka does, so the time index and ListOffsets
 * see the records' real times.  Uncompressed batches are read in one pass
 * over their record headers; compressed ones are decompressed into a
 * scratch buffer that is freed before returning.
 */
#ifndef GREGOR_PROTO_VALIDATE_H
#define GREGOR_PROTO_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest decompressed body accepted for a batch under max.message.bytes m. */
#define VALIDATE_INFLATE_MAX(m) ((size_t)(m) < (4u << 20) ? (size_t)64 << 20 : (size_t)(m)*16)

/* Record errors reported per partition (Produce v8 RecordErrors); more are counted, not listed. */
#define VALIDATE_MAX_RECORD_ERRORS 16

struct validate_cfg {
	int32_t max_message_bytes; /* max.message.bytes: largest batch */
	bool create_time;          /* message.timestamp.type=CreateTime: the bounds apply */
	int64_t now_ms;            /* the broker's clock */
	int64_t before_max_ms;     /* message.timestamp.before.max.ms (INT64_MAX: no bound) */
	int64_t after_max_ms;      /* message.timestamp.after.max.ms (INT64_MAX: no bound) */
	bool keys_required;        /* cleanup.policy=compact */
};

struct validate_result {
	int32_t records;                                 /* records in all batches */
	const char *why;                                 /* what failed (static text), NULL if nothing */
	int n_errors;                                    /* entries in batch_index[] */
	int32_t batch_index[VALIDATE_MAX_RECORD_ERRORS]; /* record index within its batch */
	bool rewritten;                                  /* a maxTimestamp was corrected */
};

/*
 * Validates a Produce request's records blob (len > 0) of one partition
 * and corrects maxTimestamp in place (the caller's mutable buffer).
 * Returns KERR_NONE or the Kafka error for the whole partition, with res
 * saying why and, for record-level errors, which records.  Batches before
 * a failing one may have had their maxTimestamp corrected already; the
 * request is refused as a whole then, so that does not matter.
 */
int16_t validate_records(uint8_t *blob, size_t len, const struct validate_cfg *cfg, struct validate_result *res);

#endif
