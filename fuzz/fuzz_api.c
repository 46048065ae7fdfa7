/*
 * fuzz_api.c - every API's request decoder at every version, through the
 * generated proto_apis[] table.  Input: byte 0 picks the API (modulo the
 * known keys), byte 1 the version (modulo its range), the rest is the body.
 */
#include <stdint.h>

#include "fuzz/fuzz.h"
#include "proto_msgs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int16_t keys[API_COUNT];
	static int nkeys;
	const struct proto_api *pa;
	int16_t key, version;
	struct rd r;

	fuzz_quiet();
	if (!nkeys)
		for (int16_t k = 0; k < API_COUNT; k++)
			if (proto_apis[k].name)
				keys[nkeys++] = k;
	if (size < 2)
		return 0;
	key = keys[data[0] % nkeys];
	pa = &proto_apis[key];
	version = (int16_t)(pa->min + data[1] % (pa->max - pa->min + 1));
	rd_init(&r, data + 2, size - 2);
	fuzz_decode_roundtrip(key, version, &r);
	return 0;
}
