/* gunzip.c - gzip through ISA-L igzip (see gunzip.h). */
#include "util/gunzip.h"

#include <errno.h>
#include <isa-l/igzip_lib.h>
#include <stdlib.h>

int gunzip(const uint8_t *in, size_t in_len, size_t out_max, uint8_t **out, size_t *out_len)
{
	struct inflate_state *st = malloc(sizeof(*st));
	size_t cap = in_len * 4 + 1024;
	uint8_t *buf = NULL;
	int err = 0;

	if (!st)
		return -ENOMEM;
	isal_inflate_init(st);
	st->crc_flag = ISAL_GZIP;
	st->next_in = (uint8_t *)in;
	st->avail_in = (uint32_t)in_len;
	for (;;) {
		uint8_t *nb;
		size_t used = buf ? (size_t)(st->next_out - buf) : 0;

		if (cap > out_max)
			cap = out_max;
		nb = realloc(buf, cap + 1);
		if (!nb) {
			err = -ENOMEM;
			break;
		}
		buf = nb;
		st->next_out = buf + used;
		st->avail_out = (uint32_t)(cap - used);
		if (isal_inflate(st) != ISAL_DECOMP_OK) {
			err = -EBADMSG;
			break;
		}
		if (st->block_state == ISAL_BLOCK_FINISH)
			break;
		if (st->avail_out == 0 && cap == out_max) {
			err = -EFBIG;
			break;
		}
		if (st->avail_out == 0) {
			cap *= 2;
			continue;
		}
		if (st->avail_in == 0) {
			err = -EBADMSG; /* truncated stream */
			break;
		}
	}
	if (!err) {
		*out = buf;
		*out_len = (size_t)(st->next_out - buf);
	} else {
		free(buf);
	}
	free(st);
	return err;
}
