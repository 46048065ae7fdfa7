/* uuid.c - Kafka's Uuids (see uuid.h). */
#include "util/uuid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void uuid_to_b64(const struct kuuid *u, char out[UUID_B64_LEN + 1])
{
	int bits = 0, o = 0;
	uint32_t acc = 0;

	for (int i = 0; i < 16; i++) {
		acc = (acc << 8) | u->b[i];
		bits += 8;
		while (bits >= 6) {
			out[o++] = b64url[(acc >> (bits - 6)) & 63];
			bits -= 6;
		}
	}
	if (bits)
		out[o++] = b64url[(acc << (6 - bits)) & 63];
	out[o] = '\0';
}

int uuid_from_b64(const char *s, struct kuuid *u)
{
	int bits = 0, o = 0;
	uint32_t acc = 0;

	for (int i = 0; s[i] && o < 16; i++) {
		const char *p = strchr(b64url, s[i]);

		if (!p || !s[i])
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(p - b64url);
		bits += 6;
		if (bits >= 8) {
			u->b[o++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	return o == 16 ? 0 : -EINVAL;
}

void uuid_random(struct kuuid *u)
{
	do {
		if (getrandom(u->b, sizeof(u->b), 0) != (ssize_t)sizeof(u->b))
			for (size_t i = 0; i < sizeof(u->b); i++)
				u->b[i] = (uint8_t)rand();
		u->b[6] = (u->b[6] & 0x0f) | 0x40; /* version 4 */
		u->b[8] = (u->b[8] & 0x3f) | 0x80;
	} while (u->b[0] == 0); /* never the zero uuid or Kafka's reserved ids */
}
