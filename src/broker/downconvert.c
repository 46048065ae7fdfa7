/*
 * downconvert.c - Fetch for clients older than record batches v2 (see
 * downconvert.h): file slices read into memory and converted batch by
 * batch, and the zstd check of Fetch below v10.
 */
#include "broker/downconvert.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "proto/codec.h"
#include "proto/msgset.h"
#include "proto/records.h"

#define DOWNCONVERT_WINDOW (64 * 1024) /* header reads of the zstd check */

int downconvert_magic(int16_t fetch_version)
{
	return fetch_version <= 1 ? 0 : fetch_version <= 3 ? 1 : 2;
}

/* Reads len bytes at pos of the slice's file into buf; 0 or -errno (-EIO if short). */
static int slice_pread(const struct fslice *s, uint8_t *buf, size_t len, int64_t pos)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(s->ref->fd, buf + done, len - done, (off_t)(pos + (int64_t)done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int downconvert_slice(const struct fslice *s, int magic, int64_t min_offset, int64_t max_bytes, bool min_one,
		      struct wr *out)
{
	uint8_t *buf = malloc(s->len > 0 ? (size_t)s->len : 1);
	size_t start = out->len, off = 0;
	struct batch_hdr h;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = slice_pread(s, buf, (size_t)s->len, s->pos);
	while (!rc && off < (size_t)s->len) {
		size_t before = out->len;

		rc = records_batch_parse(buf + off, (size_t)s->len - off, &h);
		if (rc == -EAGAIN && off > 0) {
			rc = 0; /* a batch cut by max_bytes ends the set (the first one is whole) */
			break;
		}
		if (rc)
			break;
		rc = msgset_from_batch(buf + off, &h, magic, min_offset, out);
		if (rc < 0)
			break;
		rc = 0;
		if ((int64_t)(out->len - start) > max_bytes && !(min_one && before == start)) {
			out->len = before; /* this batch does not fit */
			break;
		}
		off += (size_t)h.size;
	}
	free(buf);
	if (rc == -EAGAIN)
		rc = -EBADMSG;
	if (rc)
		out->len = start;
	return rc;
}

bool downconvert_has_zstd(const struct fslice *s)
{
	uint8_t *win = malloc(DOWNCONVERT_WINDOW);
	int64_t pos = 0, win_pos = 0, win_len = 0;
	struct batch_hdr h;
	bool zstd = false;

	while (win && !zstd && pos < s->len) {
		if (pos + RECORDS_HDR_SIZE > win_pos + win_len) {
			/* past a batch larger than the window, read its successor's header alone */
			int64_t want = pos - win_pos > DOWNCONVERT_WINDOW ? RECORDS_HDR_SIZE : DOWNCONVERT_WINDOW;

			win_pos = pos;
			win_len = s->len - pos < want ? s->len - pos : want;
			if (win_len < RECORDS_HDR_SIZE || slice_pread(s, win, (size_t)win_len, s->pos + win_pos))
				break;
		}
		if (records_hdr_parse(win + (pos - win_pos), RECORDS_HDR_SIZE, &h))
			break;
		zstd = (h.attributes & RECORDS_ATTR_CODEC_MASK) == CODEC_ZSTD;
		pos += h.size;
	}
	free(win);
	return zstd;
}
