/*
 * fuzz_msgset.c - the legacy message formats (proto/msgset.c) as Produce
 * v0-v2 and Fetch v0-v3 use them.  Byte 0 of the input: bit 0 clear = the
 * rest is a Produce message set (outer CRCs fixed first when bit 1 is set,
 * to get past the CRC check) for msgset_to_batch(); bit 0 set = the rest is
 * a blob of v2 batches (CRCs fixed) each down-converted to magic 0 and 1,
 * from an offset taken from byte 0's upper bits.
 */
#include <isa-l/crc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "proto/msgset.h"
#include "proto/records.h"

/* Rewrites the CRC-32 of every top-level legacy message it can walk. */
static void fix_legacy_crcs(uint8_t *p, size_t len)
{
	size_t at = 0;

	while (len - at >= 17) {
		uint32_t size =
			(uint32_t)p[at + 8] << 24 | (uint32_t)p[at + 9] << 16 | (uint32_t)p[at + 10] << 8 | p[at + 11];
		uint32_t crc;

		if (size < 5 || size > len - at - 12)
			break;
		crc = crc32_gzip_refl(0, p + at + 16, size - 4);
		p[at + 12] = (uint8_t)(crc >> 24);
		p[at + 13] = (uint8_t)(crc >> 16);
		p[at + 14] = (uint8_t)(crc >> 8);
		p[at + 15] = (uint8_t)crc;
		at += 12 + size;
	}
}

static void down_convert(const uint8_t *p, size_t len, int64_t min_offset)
{
	size_t at = 0;

	while (at < len) {
		struct batch_hdr h;
		struct wr w;

		if (records_batch_parse(p + at, len - at, &h) < 0)
			break;
		for (int magic = 0; magic <= 1; magic++) {
			wr_init(&w);
			msgset_from_batch(p + at, &h, magic, h.base_offset + min_offset, &w);
			wr_release(&w);
		}
		at += (size_t)h.size;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p;
	size_t len;
	struct wr w;

	fuzz_quiet();
	if (size < 1)
		return 0;
	len = size - 1;
	p = fuzz_dup(data + 1, len);
	if (data[0] & 1) {
		fuzz_fix_crcs(p, len);
		down_convert(p, len, data[0] >> 4);
	} else {
		if (data[0] & 2)
			fix_legacy_crcs(p, len);
		wr_init(&w);
		msgset_to_batch(p, len, 1 << 20, &w);
		wr_release(&w);
	}
	free(p);
	return 0;
}
