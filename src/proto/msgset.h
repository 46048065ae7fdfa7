/*
 * msgset.h - Kafka's legacy message sets (message formats v0 and v1,
 * "magic" 0 and 1) and their conversion to and from record batches v2.
 *
 * Gregor stores only record batches v2 (records.h).  Clients older than
 * Kafka 0.11 speak the legacy formats: Produce v0-v2 may carry message
 * sets, and Fetch v0-v3 responses must carry them (v0-v1: magic 0, v2-v3:
 * magic 1).  As Kafka 3.x does, a produced message set becomes one v2
 * batch on append, and fetched v2 batches are converted back on the way
 * out - the one place where record bytes are copied through user space.
 *
 * One message (all integers big-endian), in a set one after another:
 *
 *   off len field
 *     0   8 offset       i64  absolute; inside a compressed wrapper:
 *                             magic 0 absolute, magic 1 relative (0..n-1)
 *                             and the wrapper holds the last inner offset
 *     8   4 messageSize  i32  bytes after this field
 *    12   4 crc          u32  CRC-32 (IEEE, zlib's) of bytes 16 .. end
 *    16   1 magic        i8   0 or 1
 *    17   1 attributes   i8   bits 0-2 codec, bit 3 LogAppendTime (magic 1)
 *    18   8 timestamp    i64  magic 1 only (ms; -1 none)
 *     .   4 keyLength    i32  -1 = null, then the key
 *     .   4 valueLength  i32  -1 = null, then the value
 *
 * A compressed message (the "wrapper") has a null key and, as its value,
 * the compressed bytes of an inner message set of uncompressed messages.
 * LZ4 with magic 0 carries a frame whose header checksum was computed over
 * the frame's magic number too (old Kafka's framing bug); it is read and
 * written that way for magic 0 only, as Kafka does.
 */
#ifndef GREGOR_PROTO_MSGSET_H
#define GREGOR_PROTO_MSGSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/records.h"
#include "util/buf.h"

#define MSGSET_OVERHEAD_V0 26 /* offset, size, crc, magic, attributes, key and value lengths */
#define MSGSET_OVERHEAD_V1 34 /* v0 plus the timestamp */

/* True if the first entry of the blob is a legacy message (magic 0 or 1). */
bool msgset_is_legacy(const uint8_t *p, size_t len);

/*
 * Converts a Produce request's message set (legacy messages, compressed or
 * not) into one v2 batch appended to w: baseOffset 0, offsets 0..n-1 in
 * message order, each message's timestamp (magic 0: -1), producerId -1,
 * compressed with the codec of the set's compressed messages (none if it
 * has none).  Decompressed data is capped at max_bytes.  Returns 0,
 * -EBADMSG (truncated, bad CRC, unknown codec or magic: CORRUPT_MESSAGE),
 * -EINVAL (a compressed inner message, a v2 batch in the set or no message
 * at all: INVALID_RECORD), -ENOTSUP (zstd: UNSUPPORTED_COMPRESSION_TYPE),
 * -EMSGSIZE (past max_bytes) or -ENOMEM.  On error w is left as it was.
 */
int msgset_to_batch(const uint8_t *p, size_t len, size_t max_bytes, struct wr *w);

/*
 * Appends the records of the whole v2 batch p (header h) whose offsets are
 * >= min_offset to w as legacy messages of format magic (0 or 1), keeping
 * their offsets: uncompressed messages for an uncompressed batch, else one
 * wrapper compressed with the batch's codec.  Headers are dropped (the
 * legacy formats have none); a LogAppendTime batch gives every message its
 * max timestamp; a control batch appends nothing.  Returns the number of
 * messages appended, -ENOTSUP (zstd: UNSUPPORTED_COMPRESSION_TYPE),
 * -EBADMSG (a corrupt batch) or -ENOMEM.
 */
int msgset_from_batch(const uint8_t *p, const struct batch_hdr *h, int magic, int64_t min_offset, struct wr *w);

#endif
