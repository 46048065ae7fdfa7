/*
 * records.h - Kafka record batch v2 (magic 2): header parsing, validation,
 * the in-place patches the log applies on append, and builders.
 *
 * Batches are stored and served exactly as the producer sent them; the
 * broker only rewrites baseOffset and partitionLeaderEpoch (neither is
 * covered by the CRC), maxTimestamp when it is not the largest record
 * timestamp (proto/validate.h) and, for LogAppendTime topics, the
 * timestamp-type attribute bit and maxTimestamp (then the CRC is
 * recomputed).
 *
 * Batch header, all integers big-endian (61 bytes):
 *
 *   off len field
 *     0   8 baseOffset            i64  offset of the first record
 *     8   4 batchLength           i32  bytes after this field (>= 49)
 *    12   4 partitionLeaderEpoch  i32
 *    16   1 magic                 i8   2 (0/1 are the legacy formats)
 *    17   4 crc                   u32  CRC-32C of bytes 21 .. end of batch
 *    21   2 attributes            i16  bits 0-2 codec, 3 LogAppendTime,
 *                                      4 transactional, 5 control
 *    23   4 lastOffsetDelta       i32
 *    27   8 baseTimestamp         i64
 *    35   8 maxTimestamp          i64
 *    43   8 producerId            i64
 *    51   2 producerEpoch         i16
 *    53   4 baseSequence          i32
 *    57   4 recordCount           i32
 *    61   . records
 *
 * Each record: length varint, attributes i8, timestampDelta varlong,
 * offsetDelta varint, keyLength varint (-1 null), key, valueLength varint,
 * value, headerCount varint, headers (varint-length key and value each).
 * Varints are zigzag.
 */
#ifndef GREGOR_PROTO_RECORDS_H
#define GREGOR_PROTO_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define RECORDS_HDR_SIZE 61     /* whole v2 batch header */
#define RECORDS_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define RECORDS_MAGIC_OFF 16
#define RECORDS_CRC_OFF 17
#define RECORDS_ATTR_OFF 21 /* the CRC covers from here to the end */
#define RECORDS_MIN_BATCH_LENGTH (RECORDS_HDR_SIZE - RECORDS_LOG_OVERHEAD)

#define RECORDS_ATTR_CODEC_MASK 0x07
#define RECORDS_ATTR_LOG_APPEND_TIME 0x08
#define RECORDS_ATTR_TRANSACTIONAL 0x10
#define RECORDS_ATTR_CONTROL 0x20

struct batch_hdr {
	int64_t base_offset;
	int32_t batch_length; /* bytes after the batchLength field */
	int32_t leader_epoch; /* partitionLeaderEpoch */
	int8_t magic;
	uint32_t crc;
	int16_t attributes;
	int32_t last_offset_delta;
	int64_t base_timestamp;
	int64_t max_timestamp;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t record_count;
	int64_t size; /* whole batch in bytes: 12 + batch_length */
};

static inline int64_t records_last_offset(const struct batch_hdr *h)
{
	return h->base_offset + h->last_offset_delta;
}

static inline bool records_is_control(const struct batch_hdr *h)
{
	return (h->attributes & RECORDS_ATTR_CONTROL) != 0;
}

static inline bool records_is_transactional(const struct batch_hdr *h)
{
	return (h->attributes & RECORDS_ATTR_TRANSACTIONAL) != 0;
}

/*
 * Parses only the 61-byte header at p (the batch body need not be present).
 * Returns 0, -EAGAIN if len < 61, -EPROTO for magic 0 or 1, -EBADMSG for any
 * other invalid header (magic, batchLength < 49, negative lastOffsetDelta or
 * recordCount).
 */
int records_hdr_parse(const uint8_t *p, size_t len, struct batch_hdr *out);

/*
 * Parses the header of the batch at p and checks that the whole declared
 * batch lies within len.  Returns 0, -EAGAIN if len is too short for the
 * header or the declared batch (a partial batch), -EBADMSG if invalid
 * (including magic != 2).
 */
int records_batch_parse(const uint8_t *p, size_t len, struct batch_hdr *out);

/* True if the CRC in h matches the bytes of the whole batch at p. */
bool records_batch_crc_ok(const uint8_t *p, const struct batch_hdr *h);

/* In-place patches of one batch header at p (not covered by the CRC). */
void records_set_base_offset(uint8_t *p, int64_t base_offset);
void records_set_leader_epoch(uint8_t *p, int32_t leader_epoch);
/*
 * Marks the batch at p (len bytes, the whole batch) LogAppendTime with
 * maxTimestamp = ts and recomputes its CRC.
 */
void records_set_log_append_time(uint8_t *p, size_t len, int64_t ts);
/* Sets maxTimestamp of the batch at p (len bytes, whole) to ts and recomputes its CRC. */
void records_set_max_timestamp(uint8_t *p, size_t len, int64_t ts);

/* One record for records_build(); a length of -1 means null. */
struct rec_kv {
	const void *key;
	int32_t key_len;
	const void *value;
	int32_t value_len;
};

/*
 * Appends one uncompressed, non-transactional batch of n records (offsets
 * base_offset.., all timestamps ts_ms, producerId -1) to w.  Returns 0 or
 * -ENOMEM / -EINVAL (n < 1).
 */
int records_build(struct wr *w, int64_t base_offset, int64_t ts_ms, const struct rec_kv *recs, int n);

/*
 * Appends one non-transactional batch of n records (baseOffset 0, offsets
 * 0..n-1, producerId -1) with their own timestamps ts_ms[i] (-1 = none),
 * its body compressed with codec (proto/codec.h).  The message format
 * conversion of legacy Produce requests builds its batch with this.
 * Returns 0 or -ENOMEM / -EINVAL (n < 1 or an unknown codec) / -EIO.
 */
int records_build_ts(struct wr *w, const struct rec_kv *recs, const int64_t *ts_ms, int n, int codec);

/*
 * Transactions: like records_build() (baseOffset 0) but transactional, of
 * producer_id/producer_epoch, baseSequence -1 (the transaction coordinator's
 * TxnOffsetCommit batches).  Returns 0 or -ENOMEM / -EINVAL (n < 1).
 */
int records_build_txn(struct wr *w, int64_t ts_ms, int64_t producer_id, int16_t producer_epoch,
		      const struct rec_kv *recs, int n);

/*
 * Appends a transactional control batch (baseOffset 0) holding one
 * COMMIT (commit) or ABORT marker: key = {version 0, type 1|0},
 * value = {version 0, coordinatorEpoch}.  Returns 0 or -ENOMEM.
 */
int records_build_control(struct wr *w, int64_t producer_id, int16_t producer_epoch, bool commit,
			  int32_t coordinator_epoch, int64_t ts_ms);

/* One record of an uncompressed batch, as records_foreach() hands it out. */
struct record {
	int64_t offset;
	int64_t timestamp;
	struct bytes key;     /* len -1 = null */
	struct bytes value;   /* len -1 = null (a tombstone) */
	int32_t header_count; /* as the record declares it */
	struct bytes headers; /* the headers' bytes: read them with records_header_next() */
};

/*
 * The next header of a record (start with rd_init(r, rec->headers)): OUT
 * key and value (value len -1 = null).  Returns false at the end of the
 * bytes or when they do not parse (r->err set).
 */
bool records_header_next(struct rd *r, struct kstr *key, struct bytes *value);

typedef int records_fn(void *arg, const struct record *rec);

/*
 * Calls fn for each record of the whole batch p (header h) until fn returns
 * non-zero, which is then returned.  Returns 0, -EPROTO for a compressed
 * batch (the broker does not decompress) or -EBADMSG for a malformed one.
 */
int records_foreach(const uint8_t *p, const struct batch_hdr *h, records_fn *fn, void *arg);
/*
 * Like records_foreach() over the records of batch h held in body
 * (h's body, already decompressed by the caller).  Returns 0, fn's
 * non-zero value or -EBADMSG.
 */
int records_foreach_body(const uint8_t *body, size_t body_len, const struct batch_hdr *h, records_fn *fn, void *arg);

/* True if any batch header in the blob p..len names codec (the walk stops at the first bad header). */
bool records_has_codec(const uint8_t *p, size_t len, int codec);

/*
 * ListOffsets by timestamp inside one whole batch p (header h): the first
 * record whose timestamp >= ts.  Records are read one by one, a compressed
 * batch after decompressing it (proto/codec.h); a LogAppendTime batch, or
 * one that does not decompress, answers with its base offset and max
 * timestamp.  A batch with maxTimestamp -1 (stored before Produce set it)
 * is searched record by record.  Returns 1 found, 0 none, -EBADMSG.
 */
int records_find_time(const uint8_t *p, const struct batch_hdr *h, int64_t ts, int64_t *offset_out, int64_t *ts_out);

/*
 * Reads the marker of a control batch (p, h from records_batch_parse):
 * OUT *commit.  Returns 0 or -EBADMSG if it is not a well-formed marker.
 */
int records_control_parse(const uint8_t *p, const struct batch_hdr *h, bool *commit, int32_t *coordinator_epoch);

#endif
