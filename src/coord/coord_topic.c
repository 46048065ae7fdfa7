/*
 * coord_topic.c - which partition of an internal topic coordinates a key
 * (coord_topic.h).
 *
 * Kafka picks Utils.abs(key.hashCode()) % partitions, where hashCode is
 * Java's String.hashCode: h = 31 * h + c over the string's UTF-16 code
 * units, and Utils.abs maps INT_MIN to 0.  Keys arrive as UTF-8, so they
 * are decoded to code points and those above U+FFFF hashed as their two
 * surrogates.  Bytes that are not UTF-8 are hashed as U+FFFD, as Java's
 * decoder replaces them.  Every broker and client implementation of this
 * must agree, or members of one group would meet at different brokers.
 */
#include "coord/coord_topic.h"

#include <stddef.h>

/* Decodes one code point at p[0..n); OUT *used (>= 1).  Malformed input gives U+FFFD. */
static uint32_t coord_utf8_next(const uint8_t *p, size_t n, size_t *used)
{
	static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
	uint32_t cp;
	size_t len;

	*used = 1;
	if (p[0] < 0x80)
		return p[0];
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0xfffd;
	}
	if (len > n)
		return 0xfffd;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0xfffd;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min[len - 1] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0xfffd;
	*used = len;
	return cp;
}

int32_t coord_java_hash(struct kstr key)
{
	const uint8_t *p = (const uint8_t *)key.p;
	size_t n = key.p && key.len > 0 ? (size_t)key.len : 0, used;
	uint32_t h = 0;

	for (size_t i = 0; i < n; i += used) {
		uint32_t cp = coord_utf8_next(p + i, n - i, &used);

		if (cp > 0xffff) {
			cp -= 0x10000;
			h = 31u * h + (0xd800 + (cp >> 10));
			cp = 0xdc00 + (cp & 0x3ff);
		}
		h = 31u * h + cp;
	}
	return (int32_t)h;
}

int32_t coord_partition_for(struct kstr key, int32_t nparts)
{
	int32_t h = coord_java_hash(key);
	int32_t a = h == INT32_MIN ? 0 : h < 0 ? -h : h;

	return nparts > 0 ? a % nparts : 0;
}
