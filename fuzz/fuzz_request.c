/*
 * fuzz_request.c - a request frame as it arrives on a socket: the 4-byte
 * size (checked as net/conn.c checks it), the request header
 * (proto/header.c), then the generated body decoder the broker would pick
 * (broker/api.c's path).  Whatever decodes is re-encoded and must decode
 * again: a generated encoder that cannot read back its own output is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "proto/header.h"
#include "proto_msgs.h"
#include "util/arena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct req_header h;
	struct rd r;
	int32_t len;

	fuzz_quiet();
	if (size < 4)
		return 0;
	len = (int32_t)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3]);
	if (len < 8 || (size_t)len > size - 4)
		return 0; /* conn.c closes (bad size) or waits for more bytes */
	rd_init(&r, data + 4, (size_t)len);
	if (header_decode(&r, &h) < 0)
		return 0;
	if (h.api_key < 0 || h.api_key >= API_COUNT || !proto_apis[h.api_key].name ||
	    h.api_version < proto_apis[h.api_key].min || h.api_version > proto_apis[h.api_key].max)
		return 0;
	fuzz_decode_roundtrip(h.api_key, h.api_version, &r);
	return 0;
}
