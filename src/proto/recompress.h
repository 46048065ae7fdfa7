/*
 * recompress.h - re-encodes record batches v2 with another codec, as Kafka
 * does on append when a topic's compression.type is not "producer".
 *
 * Only the records section and the fields that describe it change: the
 * codec bits of attributes (bits 0-2), batchLength and the CRC.  Offsets,
 * timestamps, producer id/epoch/sequence, the transactional bit and the
 * record count stay as sent, so idempotence and transactions see the
 * same batch.  Control batches are copied unchanged (Kafka never
 * recompresses them).
 */
#ifndef GREGOR_PROTO_RECOMPRESS_H
#define GREGOR_PROTO_RECOMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Whether any batch of the validated blob p[0..len) is not in codec. */
bool recompress_needed(const uint8_t *p, size_t len, int codec);

/*
 * Appends to out the blob p[0..len) (whole, already validated v2 batches)
 * with every non-control batch in codec (CODEC_*; CODEC_NONE stores the
 * records uncompressed).  A batch's records may decompress to at most
 * max_records_bytes and a re-encoded batch may be at most max_batch_bytes
 * long.  Returns 0, -EBADMSG (a batch does not parse or decompress),
 * -EMSGSIZE (past either bound), -ENOMEM or -EIO; on error out->len is
 * restored.
 */
int recompress_blob(const uint8_t *p, size_t len, int codec, size_t max_records_bytes, size_t max_batch_bytes,
		    struct wr *out);

#endif
