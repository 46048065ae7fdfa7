/*
 * fuzz_records.c - record batch v2 parsing and validation (proto/records.c,
 * proto/validate.c) as the produce path and the log use it.  Byte 0 of the
 * input: bit 0 set = fix every batch CRC first (to get past the CRC check),
 * bit 1 = keys required, bits 2-4 = the codec valid batches are re-encoded
 * with (proto/recompress.c); the rest is a records blob as found in a
 * Produce request or a segment file.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "proto/codec.h"
#include "proto/kerr.h"
#include "proto/recompress.h"
#include "proto/records.h"
#include "proto/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p;
	size_t len, at = 0;
	struct validate_cfg vc = { 1 << 20, true, 1700000000000LL, 86400000LL, 3600000LL, false };
	struct validate_result res;

	fuzz_quiet();
	if (size < 1)
		return 0;
	len = size - 1;
	p = fuzz_dup(data + 1, len);
	if (data[0] & 1)
		fuzz_fix_crcs(p, len);
	vc.keys_required = data[0] & 2;
	if (validate_records(p, len, &vc, &res) == KERR_NONE) {
		struct wr w; /* compression.type: re-encode as Produce would (bits 2-4 pick the codec) */

		wr_init(&w);
		if (recompress_needed(p, len, (data[0] >> 2) % (CODEC_MAX + 1)))
			recompress_blob(p, len, (data[0] >> 2) % (CODEC_MAX + 1), 64 << 20, 1 << 20, &w);
		wr_release(&w);
	}
	while (at < len) {
		struct batch_hdr h;
		int64_t off, ts;
		bool commit;
		int32_t epoch;

		if (records_batch_parse(p + at, len - at, &h) < 0)
			break;
		if (records_batch_crc_ok(p + at, &h)) {
			records_find_time(p + at, &h, (int64_t)data[0] << 8, &off, &ts);
			records_find_time(p + at, &h, h.base_timestamp, &off, &ts);
			if (records_is_control(&h))
				records_control_parse(p + at, &h, &commit, &epoch);
			records_set_base_offset(p + at, 42);
			records_set_leader_epoch(p + at, 7);
			if (data[0] & 2)
				records_set_log_append_time(p + at, (size_t)h.size, 1234567);
		}
		at += (size_t)h.size;
	}
	free(p);
	return 0;
}
