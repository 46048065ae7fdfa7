/*
 * codec.h - the four compression codecs of Kafka record batches, in the
 * formats Kafka clients write and read, with bounded output.
 *
 * The codec number is the one in a batch's attributes (bits 0-2):
 *
 *   1 gzip    one or more gzip members (RFC 1952); ISA-L igzip both ways.
 *   2 snappy  either the xerial "snappy-java" stream that the Java client
 *             writes (8-byte magic 82 'S' 'N' 'A' 'P' 'P' 'Y' 00, i32
 *             version, i32 compatible version, then blocks of i32 length +
 *             raw snappy) or one raw snappy block (librdkafka, kafkajs).
 *             codec_compress() writes the xerial stream, 32 KiB blocks, as
 *             the Java client does; every client reads it.
 *   3 lz4     LZ4 frames (lz4frame.h), one or more; the header-checksum
 *             quirk of the old magic 0 format does not apply to batches v2.
 *   4 zstd    zstd frames, one or more, streaming (no content size needed).
 *
 * Decompression is capped: a stream that would inflate past max_out fails
 * with -EFBIG before more than max_out bytes are written, so a small
 * request cannot become a large allocation.  Nothing here knows of
 * records; callers hand in a batch's body (the bytes after its 61-byte
 * header) and get the record bytes back.
 */
#ifndef GREGOR_PROTO_CODEC_H
#define GREGOR_PROTO_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

enum codec_id {
	CODEC_NONE = 0,
	CODEC_GZIP = 1,
	CODEC_SNAPPY = 2,
	CODEC_LZ4 = 3,
	CODEC_ZSTD = 4,
};

#define CODEC_MAX CODEC_ZSTD
#define CODEC_LEVEL_DEFAULT (-1)

/* Kafka's name of a codec ("none", "gzip", "snappy", "lz4", "zstd"); "?" if unknown. */
const char *codec_name(int codec);

/*
 * Decompresses in[0..len) of the given codec and appends the result to out
 * (out->len grows by the decompressed size; on error out->len is restored).
 * Returns 0, -EBADMSG for corrupt or truncated input, -EFBIG if the output
 * would exceed max_out bytes, -ENOMEM, or -EINVAL for an unknown codec or
 * CODEC_NONE.
 */
int codec_decompress(int codec, const uint8_t *in, size_t len, struct wr *out, size_t max_out);

/*
 * Compresses in[0..len) with the codec and appends the result to out.
 * level is the codec's own level (Kafka's compression.<codec>.level) or
 * CODEC_LEVEL_DEFAULT; snappy has none, gzip levels 1-9 are mapped onto
 * igzip's 0-3.  Returns 0, -ENOMEM, -EINVAL (unknown codec or CODEC_NONE)
 * or -EIO if the library fails.  On error out->len is restored.
 */
int codec_compress(int codec, int level, const uint8_t *in, size_t len, struct wr *out);

#endif
