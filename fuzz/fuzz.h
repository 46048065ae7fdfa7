/*
 * fuzz.h - helpers shared by the libFuzzer targets (header only: each
 * target is one translation unit linked against build-fuzz/libgregor.a).
 */
#ifndef GREGOR_FUZZ_H
#define GREGOR_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_msgs.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/crc32c.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The broker logs every rejected input; the fuzzer does not need to see it. */
static inline void fuzz_quiet(void)
{
	if (!getenv("FUZZ_VERBOSE"))
		log_level_cur = -1;
}

/*
 * Decodes a request body of (key, version) from r as the broker does; if
 * it decodes, encodes it again and requires that the encoding decodes
 * (and re-encodes to the same bytes).
 */
static inline void fuzz_decode_roundtrip(int16_t key, int16_t version, struct rd *r)
{
	const struct proto_api *pa = &proto_apis[key];
	struct arena a, a2;
	void *in, *in2;
	struct wr w, w2;
	struct rd r2;

	arena_init(&a, 64 << 20);
	in = arena_calloc(&a, 1, pa->req_size);
	if (!in || pa->req_decode(r, &a, version, in) < 0) {
		arena_release(&a);
		return;
	}
	wr_init(&w);
	pa->req_encode(&w, version, in);
	if (!w.err) {
		arena_init(&a2, 64 << 20);
		in2 = arena_calloc(&a2, 1, pa->req_size);
		rd_init(&r2, w.len ? w.buf : (const uint8_t *)"", w.len);
		if (!in2 || pa->req_decode(&r2, &a2, version, in2) < 0) {
			fprintf(stderr, "%s v%d: re-encoded request does not decode\n", pa->name, version);
			abort();
		}
		wr_init(&w2);
		pa->req_encode(&w2, version, in2);
		if (!w2.err && (w2.len != w.len || (w.len && memcmp(w2.buf, w.buf, w.len)))) {
			fprintf(stderr, "%s v%d: encode(decode(encode(x))) != encode(x)\n", pa->name, version);
			abort();
		}
		wr_release(&w2);
		arena_release(&a2);
	}
	wr_release(&w);
	arena_release(&a);
}

/*
 * A writable copy of the len bytes at p (the fuzzer's input is read-only;
 * targets rewrite CRCs in place). Never NULL for len 0. Caller frees it.
 */
static inline uint8_t *fuzz_dup(const uint8_t *p, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	memcpy(copy, p, len);
	return copy;
}

/*
 * Rewrites the CRC of every whole v2 batch in the blob p (len bytes), so
 * the fuzzer reaches the code behind the CRC check.  Stops at the first
 * batch whose header does not fit.
 */
static inline void fuzz_fix_crcs(uint8_t *p, size_t len)
{
	size_t at = 0;

	while (len - at >= 61) {
		uint8_t *b = p + at;
		int32_t blen = (int32_t)((uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11]);
		uint32_t crc;

		if (blen < 49 || (size_t)blen > len - at - 12)
			break;
		crc = crc32c(b + 21, (size_t)blen + 12 - 21);
		b[17] = (uint8_t)(crc >> 24);
		b[18] = (uint8_t)(crc >> 16);
		b[19] = (uint8_t)(crc >> 8);
		b[20] = (uint8_t)crc;
		at += 12 + (size_t)blen;
	}
}

#endif
