/*
 * recompress.c - re-encoding record batches v2 with another codec (see
 * recompress.h).  Each batch is rebuilt as: its 61-byte header copied,
 * the records (decompressed if needed, then compressed with the target
 * codec) appended, and batchLength, the codec bits and the CRC-32C over
 * bytes 21 .. end patched.
 */
#include "proto/recompress.h"

#include <errno.h>

#include "proto/codec.h"
#include "proto/records.h"
#include "util/crc32c.h"

static int batch_codec(const struct batch_hdr *h)
{
	return h->attributes & RECORDS_ATTR_CODEC_MASK;
}

bool recompress_needed(const uint8_t *p, size_t len, int codec)
{
	struct batch_hdr h;

	for (size_t off = 0; off < len; off += (size_t)h.size) {
		if (records_batch_parse(p + off, len - off, &h))
			return false; /* validated earlier: cannot happen */
		if (!records_is_control(&h) && batch_codec(&h) != codec)
			return true;
	}
	return false;
}

/* The records of batch p (header h), uncompressed, appended to plain. */
static int batch_records(const uint8_t *p, const struct batch_hdr *h, size_t max_bytes, struct wr *plain)
{
	const uint8_t *body = p + RECORDS_HDR_SIZE;
	size_t n = (size_t)h->size - RECORDS_HDR_SIZE;

	if (batch_codec(h) == CODEC_NONE) {
		if (n > max_bytes)
			return -EFBIG;
		wr_raw(plain, body, n);
		return plain->err;
	}
	return codec_decompress(batch_codec(h), body, n, plain, max_bytes);
}

/* Appends batch p (header h) re-encoded in codec to out. */
static int batch_recompress(const uint8_t *p, const struct batch_hdr *h, int codec, size_t max_bytes,
			    size_t max_batch_bytes, struct wr *out)
{
	struct wr plain;
	size_t start = out->len;
	int16_t attrs = (int16_t)((h->attributes & ~RECORDS_ATTR_CODEC_MASK) | codec);
	int rc;

	wr_init(&plain);
	rc = batch_records(p, h, max_bytes, &plain);
	if (rc)
		goto out_release;
	wr_raw(out, p, RECORDS_HDR_SIZE);
	if (codec == CODEC_NONE)
		wr_raw(out, plain.buf, plain.len);
	else
		rc = codec_compress(codec, CODEC_LEVEL_DEFAULT, plain.buf, plain.len, out);
	if (!rc)
		rc = out->err;
	if (!rc && (out->len - start > max_batch_bytes || out->len - start - RECORDS_LOG_OVERHEAD > INT32_MAX))
		rc = -EMSGSIZE;
	if (rc == -EFBIG)
		rc = -EMSGSIZE;
	if (rc) {
		out->len = start;
		goto out_release;
	}
	wr_patch_i32(out, start + 8, (int32_t)(out->len - start - RECORDS_LOG_OVERHEAD));
	out->buf[start + RECORDS_ATTR_OFF] = (uint8_t)((uint16_t)attrs >> 8);
	out->buf[start + RECORDS_ATTR_OFF + 1] = (uint8_t)attrs;
	wr_patch_u32(out, start + RECORDS_CRC_OFF,
		     crc32c(out->buf + start + RECORDS_ATTR_OFF, out->len - start - RECORDS_ATTR_OFF));
out_release:
	wr_release(&plain);
	return rc;
}

int recompress_blob(const uint8_t *p, size_t len, int codec, size_t max_records_bytes, size_t max_batch_bytes,
		    struct wr *out)
{
	size_t start = out->len;
	struct batch_hdr h;
	int rc = 0;

	for (size_t off = 0; !rc && off < len; off += (size_t)h.size) {
		rc = records_batch_parse(p + off, len - off, &h);
		if (rc) {
			rc = -EBADMSG;
			break;
		}
		if (records_is_control(&h) || batch_codec(&h) == codec) {
			wr_raw(out, p + off, (size_t)h.size);
			rc = out->err;
		} else {
			rc = batch_recompress(p + off, &h, codec, max_records_bytes, max_batch_bytes, out);
		}
	}
	if (rc)
		out->len = start;
	return rc;
}
