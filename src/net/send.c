/*
 * send.c - writev for memory, sendfile for record data (see send.h).
 * The broker never reads record bytes into user space to serve a fetch.
 */
#include "net/send.h"

#include <errno.h>
#include <sys/sendfile.h>
#include <unistd.h>

/* Bounds of memory piece k. */
static void mem_piece(const struct wr *w, int k, size_t *from, size_t *to)
{
	*from = k == 0 ? 0 : w->files[k - 1].at;
	*to = k < w->nfiles ? w->files[k].at : w->len;
}

/* Skips empty pieces so pos always points at something to send, or the end. */
static void settle(const struct wr *w, struct send_pos *pos)
{
	while (pos->phase <= 2 * w->nfiles) {
		int64_t size;

		if (pos->phase % 2 == 0) {
			size_t from, to;

			mem_piece(w, pos->phase / 2, &from, &to);
			size = (int64_t)(to - from);
		} else {
			size = w->files[(pos->phase - 1) / 2].s.len;
		}
		if (pos->off < size)
			return;
		pos->phase++;
		pos->off = 0;
	}
}

bool send_done(const struct wr *w, const struct send_pos *pos)
{
	struct send_pos p = *pos;

	settle(w, &p);
	return p.phase > 2 * w->nfiles;
}

bool send_at_file(const struct wr *w, const struct send_pos *pos)
{
	struct send_pos p = *pos;

	settle(w, &p);
	return p.phase <= 2 * w->nfiles && p.phase % 2 == 1;
}

int send_iov_fill(const struct wr *w, const struct send_pos *pos, struct iovec *iov, int max)
{
	struct send_pos p = *pos;
	size_t from, to;

	settle(w, &p);
	if (max < 1 || p.phase > 2 * w->nfiles || p.phase % 2 == 1)
		return 0;
	mem_piece(w, p.phase / 2, &from, &to);
	iov[0].iov_base = w->buf + from + p.off;
	iov[0].iov_len = to - from - (size_t)p.off;
	return 1;
}

size_t send_advance(const struct wr *w, struct send_pos *pos, size_t n)
{
	size_t from, to, left;

	settle(w, pos);
	if (pos->phase > 2 * w->nfiles || pos->phase % 2 == 1)
		return n;
	mem_piece(w, pos->phase / 2, &from, &to);
	left = to - from - (size_t)pos->off;
	if (n < left) {
		pos->off += (int64_t)n;
		return 0;
	}
	pos->off += (int64_t)left;
	settle(w, pos);
	return n - left;
}

/* Record bytes sent with sendfile and copied through a buffer (relaxed atomics: the loop adds, /metrics reads). */
static uint64_t send_zero_copy_bytes, send_copy_bytes;

uint64_t send_sendfile_bytes(void)
{
	return __atomic_load_n(&send_zero_copy_bytes, __ATOMIC_RELAXED);
}

uint64_t send_copied_bytes(void)
{
	return __atomic_load_n(&send_copy_bytes, __ATOMIC_RELAXED);
}

ssize_t send_file(int sock, const struct wr *w, struct send_pos *pos)
{
	const struct fslice *s;
	off_t off;
	ssize_t n;

	settle(w, pos);
	if (pos->phase > 2 * w->nfiles || pos->phase % 2 == 0)
		return 0;
	s = &w->files[(pos->phase - 1) / 2].s;
	off = (off_t)(s->pos + pos->off);
	n = sendfile(sock, s->ref->fd, &off, (size_t)(s->len - pos->off));
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO; /* the file shrank under us: never send short data silently */
	__atomic_fetch_add(&send_zero_copy_bytes, (uint64_t)n, __ATOMIC_RELAXED);
	pos->off += n;
	settle(w, pos);
	return n;
}

ssize_t send_file_copy(const struct wr *w, const struct send_pos *pos, uint8_t *buf, size_t cap)
{
	struct send_pos p = *pos;
	const struct fslice *s;
	size_t n;
	ssize_t got;

	settle(w, &p);
	if (p.phase > 2 * w->nfiles || p.phase % 2 == 0)
		return 0;
	s = &w->files[(p.phase - 1) / 2].s;
	n = (size_t)(s->len - p.off) < cap ? (size_t)(s->len - p.off) : cap;
	got = pread(s->ref->fd, buf, n, (off_t)(s->pos + p.off));
	if (got < 0)
		return -errno;
	if (got > 0)
		__atomic_fetch_add(&send_copy_bytes, (uint64_t)got, __ATOMIC_RELAXED);
	return got == 0 ? -EIO : got;
}

void send_file_advance(const struct wr *w, struct send_pos *pos, size_t n)
{
	settle(w, pos);
	pos->off += (int64_t)n;
	settle(w, pos);
}
