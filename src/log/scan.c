/* scan.c - replaying a partition batch by batch (see scan.h). */
#include "log/scan.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "log/partition.h"

#define SCAN_CHUNK_BYTES (1 << 20)

/* Hands every whole batch in buf at or past offset to fn; returns the next offset. */
static int64_t scan_chunk(const uint8_t *buf, size_t len, int64_t offset, part_scan_fn *fn, void *arg)
{
	size_t pos = 0;
	struct batch_hdr h;

	while (pos < len && records_batch_parse(buf + pos, len - pos, &h) == 0) {
		if (records_last_offset(&h) >= offset)
			fn(arg, buf + pos, &h);
		offset = records_last_offset(&h) + 1;
		pos += (size_t)h.size;
	}
	return offset;
}

int part_scan(struct part *part, part_scan_fn *fn, void *arg)
{
	return part_scan_to(part, part_high_watermark(part), fn, arg);
}

int part_scan_to(struct part *part, int64_t hw, part_scan_fn *fn, void *arg)
{
	int64_t offset = part_log_start_offset(part);
	uint8_t *buf = NULL;
	int err = 0;

	while (!err && offset < hw) {
		struct fslice s = { 0 };
		int64_t next = offset;
		uint8_t *nb;

		err = part_read(part, offset, hw, SCAN_CHUNK_BYTES, true, &s);
		if (err || !s.ref || s.len == 0) {
			fdref_put(s.ref);
			break;
		}
		nb = realloc(buf, (size_t)s.len);
		if (!nb)
			err = -ENOMEM;
		else if (pread(s.ref->fd, nb, (size_t)s.len, s.pos) != s.len)
			err = -EIO;
		buf = nb ? nb : buf;
		fdref_put(s.ref);
		if (!err)
			next = scan_chunk(buf, (size_t)s.len, offset, fn, arg);
		if (!err && next <= offset)
			err = -EBADMSG; /* not even one whole batch: a corrupt log */
		offset = next;
	}
	free(buf);
	return err;
}
