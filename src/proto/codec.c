/*
 * codec.c - gzip (ISA-L), snappy (libsnappy + xerial framing), lz4
 * (lz4frame) and zstd for record batch bodies (formats in codec.h).
 *
 * Every decoder writes straight into the caller's writer in growing
 * chunks, never past max_out, and is a loop over the library's streaming
 * call so that several concatenated frames/members decode as one body, as
 * the Java and librdkafka readers accept them.
 */
#include "proto/codec.h"

#include <errno.h>
#include <isa-l/igzip_lib.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define CODEC_CHUNK_MIN (16u << 10)
#define XERIAL_HDR_SIZE 16
#define XERIAL_BLOCK (32u << 10)

static const uint8_t xerial_magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };

const char *codec_name(int codec)
{
	static const char *const names[] = { "none", "gzip", "snappy", "lz4", "zstd" };

	return codec >= 0 && codec <= CODEC_MAX ? names[codec] : "?";
}

/*
 * Output window of a decoder: bytes [start, w->len) are decoded so far.
 * room() extends w by the next chunk (doubling) and returns it; the window
 * holds at most max_out + 1 bytes, one of slack so that a stream of exactly
 * max_out bytes can still finish (trailers, end marks) and one that goes
 * past is caught by sink_over().  give_back() returns what the library did
 * not fill.
 */
struct sink {
	struct wr *w;
	size_t start, max_out;
};

static uint8_t *sink_room(struct sink *s, size_t *n)
{
	size_t have = s->w->len - s->start;
	size_t want = have > CODEC_CHUNK_MIN ? have : CODEC_CHUNK_MIN;

	if (have > s->max_out)
		return NULL;
	if (want > s->max_out + 1 - have)
		want = s->max_out + 1 - have;
	*n = want;
	return wr_reserve(s->w, want);
}

static void sink_give_back(struct sink *s, size_t unused)
{
	s->w->len -= unused;
}

static bool sink_over(const struct sink *s)
{
	return s->w->len - s->start > s->max_out;
}

/*
 * The next chunk for a streaming decoder (its size in *room), or NULL with
 * *err set: -EBADMSG if truncated (the decoder stopped short of filling its
 * last chunk and no input is left, so a frame ends early), -EFBIG if the
 * window is full, -ENOMEM if wr_reserve failed.
 */
static uint8_t *sink_next(struct sink *s, bool truncated, size_t *room, int *err)
{
	uint8_t *p;

	if (truncated) {
		*err = -EBADMSG;
		return NULL;
	}
	p = sink_room(s, room);
	if (!p)
		*err = s->w->err ? -ENOMEM : -EFBIG;
	return p;
}

/* ---- gzip ---- */

static int gzip_decompress(const uint8_t *in, size_t len, struct sink *s)
{
	struct inflate_state *st = malloc(sizeof(*st));
	bool starved = false;
	int err = 0;

	if (!st)
		return -ENOMEM;
	isal_inflate_init(st);
	st->crc_flag = ISAL_GZIP;
	st->next_in = (uint8_t *)in;
	st->avail_in = (uint32_t)len;
	while (!err) {
		size_t room = 0;
		uint8_t *p;

		if (st->block_state == ISAL_BLOCK_FINISH) {
			if (st->avail_in == 0)
				break;
			isal_inflate_reset(st); /* the next member */
			st->crc_flag = ISAL_GZIP;
		}
		p = sink_next(s, starved && st->avail_in == 0, &room, &err);
		if (!p)
			break;
		st->next_out = p;
		st->avail_out = (uint32_t)room;
		if (isal_inflate(st) != ISAL_DECOMP_OK)
			err = -EBADMSG;
		starved = st->avail_out > 0;
		sink_give_back(s, st->avail_out);
	}
	free(st);
	return err;
}

static int gzip_level(int level)
{
	if (level < 0)
		return 1;
	if (level <= 1)
		return level;
	return level <= 5 ? 1 : level <= 8 ? 2 : ISAL_DEF_MAX_LEVEL;
}

static int gzip_compress(int level, const uint8_t *in, size_t len, struct wr *out)
{
	static const uint32_t lvl_buf[] = { 0, ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT };
	struct isal_zstream *zs = calloc(1, sizeof(*zs));
	int lvl = gzip_level(level), err = 0;
	uint8_t *lbuf = NULL, *p;
	size_t cap = len + len / 16 + 64 + 18, start = out->len;

	if (!zs)
		return -ENOMEM;
	isal_deflate_init(zs);
	zs->gzip_flag = IGZIP_GZIP;
	zs->level = (uint32_t)lvl;
	zs->end_of_stream = 1;
	zs->flush = NO_FLUSH;
	if (lvl > 0) {
		zs->level_buf_size = lvl_buf[lvl];
		lbuf = malloc(zs->level_buf_size);
		zs->level_buf = lbuf;
	}
	p = wr_reserve(out, cap);
	if (!p || (lvl > 0 && !lbuf)) {
		err = -ENOMEM;
		goto out_free;
	}
	zs->next_in = (uint8_t *)in;
	zs->avail_in = (uint32_t)len;
	zs->next_out = p;
	zs->avail_out = (uint32_t)cap;
	if (isal_deflate(zs) != COMP_OK || zs->internal_state.state != ZSTATE_END)
		err = -EIO;
	out->len = err ? start : start + zs->total_out;
out_free:
	free(lbuf);
	free(zs);
	return err;
}

/* ---- snappy ---- */

static int snappy_block(const uint8_t *in, size_t len, struct sink *s)
{
	size_t n = 0, have = s->w->len - s->start;
	uint8_t *p;

	if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
		return -EBADMSG;
	if (n > s->max_out - have)
		return -EFBIG;
	if (n == 0) /* nothing to write, and no zero-length reserve on an empty writer */
		return snappy_validate_compressed_buffer((const char *)in, len) == SNAPPY_OK ? 0 : -EBADMSG;
	p = wr_reserve(s->w, n);
	if (!p)
		return -ENOMEM;
	if (snappy_uncompress((const char *)in, len, (char *)p, &n) != SNAPPY_OK)
		return -EBADMSG;
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int snappy_decompress(const uint8_t *in, size_t len, struct sink *s)
{
	size_t off = XERIAL_HDR_SIZE;
	int err = 0;

	if (len < XERIAL_HDR_SIZE || memcmp(in, xerial_magic, sizeof(xerial_magic)) != 0)
		return snappy_block(in, len, s);
	while (!err && off < len) {
		uint32_t n;

		if (len - off < 4)
			return -EBADMSG;
		n = be32(in + off);
		off += 4;
		if (n > len - off)
			return -EBADMSG;
		err = snappy_block(in + off, n, s);
		off += n;
	}
	return err;
}

static int snappy_compress_x(const uint8_t *in, size_t len, struct wr *out)
{
	uint8_t *hdr = wr_reserve(out, XERIAL_HDR_SIZE);
	size_t off = 0;

	if (!hdr)
		return -ENOMEM;
	memcpy(hdr, xerial_magic, sizeof(xerial_magic));
	be32_put(hdr + 8, 1);  /* version */
	be32_put(hdr + 12, 1); /* compatible version */
	while (off < len) {
		size_t n = len - off < XERIAL_BLOCK ? len - off : XERIAL_BLOCK;
		size_t clen = snappy_max_compressed_length(n);
		uint8_t *p = wr_reserve(out, 4 + clen);

		if (!p)
			return -ENOMEM;
		if (snappy_compress((const char *)in + off, n, (char *)p + 4, &clen) != SNAPPY_OK)
			return -EIO;
		be32_put(p, (uint32_t)clen);
		out->len -= snappy_max_compressed_length(n) - clen;
		off += n;
	}
	return 0;
}

/* ---- lz4 ---- */

static int lz4_decompress(const uint8_t *in, size_t len, struct sink *s)
{
	LZ4F_dctx *dctx = NULL;
	size_t off = 0, hint = 1;
	bool starved = false;
	int err = 0;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return -ENOMEM;
	/* hint 0: a frame ended; the context is ready for the next one */
	while (!err && (off < len || hint != 0)) {
		size_t room = 0, n, src = len - off;
		uint8_t *p;

		p = sink_next(s, starved && src == 0, &room, &err);
		if (!p)
			break;
		n = room;
		hint = LZ4F_decompress(dctx, p, &n, in + off, &src, NULL);
		if (LZ4F_isError(hint)) {
			sink_give_back(s, room);
			err = -EBADMSG;
			break;
		}
		starved = n < room;
		sink_give_back(s, room - n);
		off += src;
	}
	LZ4F_freeDecompressionContext(dctx);
	return err;
}

static int lz4_compress(int level, const uint8_t *in, size_t len, struct wr *out)
{
	LZ4F_preferences_t prefs;
	size_t cap, n;
	uint8_t *p;

	memset(&prefs, 0, sizeof(prefs));
	prefs.compressionLevel = level < 0 ? 9 : level; /* Kafka's compression.lz4.level default */
	prefs.frameInfo.blockSizeID = LZ4F_max64KB;
	prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
	cap = LZ4F_compressFrameBound(len, &prefs);
	p = wr_reserve(out, cap);
	if (!p)
		return -ENOMEM;
	n = LZ4F_compressFrame(p, cap, in, len, &prefs);
	if (LZ4F_isError(n)) {
		out->len -= cap;
		return -EIO;
	}
	out->len -= cap - n;
	return 0;
}

/* ---- zstd ---- */

static int zstd_decompress(const uint8_t *in, size_t len, struct sink *s)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer ib = { in, len, 0 };
	size_t hint = 1;
	bool starved = false;
	int err = 0;

	if (!ds)
		return -ENOMEM;
	/* hint 0: a frame ended; the stream is ready for the next one */
	while (!err && (ib.pos < ib.size || hint != 0)) {
		size_t room = 0;
		uint8_t *p;
		ZSTD_outBuffer ob;

		p = sink_next(s, starved && ib.pos == ib.size, &room, &err);
		if (!p)
			break;
		ob = (ZSTD_outBuffer){ p, room, 0 };
		hint = ZSTD_decompressStream(ds, &ob, &ib);
		sink_give_back(s, room - ob.pos);
		if (ZSTD_isError(hint))
			err = -EBADMSG;
		starved = ob.pos < room;
	}
	ZSTD_freeDStream(ds);
	return err;
}

static int zstd_compress(int level, const uint8_t *in, size_t len, struct wr *out)
{
	size_t cap = ZSTD_compressBound(len), n;
	uint8_t *p = wr_reserve(out, cap);

	if (!p)
		return -ENOMEM;
	n = ZSTD_compress(p, cap, in, len, level < 0 ? ZSTD_CLEVEL_DEFAULT : level);
	if (ZSTD_isError(n)) {
		out->len -= cap;
		return -EIO;
	}
	out->len -= cap - n;
	return 0;
}

/* ---- dispatch ---- */

int codec_decompress(int codec, const uint8_t *in, size_t len, struct wr *out, size_t max_out)
{
	struct sink s = { out, out->len, max_out };
	int err;

	if (out->err)
		return -ENOMEM;
	switch (codec) {
	case CODEC_GZIP:
		err = gzip_decompress(in, len, &s);
		break;
	case CODEC_SNAPPY:
		err = snappy_decompress(in, len, &s);
		break;
	case CODEC_LZ4:
		err = lz4_decompress(in, len, &s);
		break;
	case CODEC_ZSTD:
		err = zstd_decompress(in, len, &s);
		break;
	default:
		return -EINVAL;
	}
	if (!err && sink_over(&s))
		err = -EFBIG;
	if (err) {
		out->len = s.start;
		out->err = 0;
	}
	return err;
}

int codec_compress(int codec, int level, const uint8_t *in, size_t len, struct wr *out)
{
	size_t start = out->len;
	int err;

	if (out->err)
		return -ENOMEM;
	switch (codec) {
	case CODEC_GZIP:
		err = gzip_compress(level, in, len, out);
		break;
	case CODEC_SNAPPY:
		err = snappy_compress_x(in, len, out);
		break;
	case CODEC_LZ4:
		err = lz4_compress(level, in, len, out);
		break;
	case CODEC_ZSTD:
		err = zstd_compress(level, in, len, out);
		break;
	default:
		return -EINVAL;
	}
	if (err) {
		out->len = start;
		out->err = 0;
	}
	return err;
}
