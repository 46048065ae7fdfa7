/*
 * send.h - writing one response to a socket without copying record data.
 *
 * A response (struct wr) is memory bytes with file slices inserted at
 * known points: memory piece 0, file 0, memory piece 1, file 1, ...,
 * memory piece n.  Memory pieces go out with writev (gathered across
 * consecutive responses by the caller), file slices with sendfile(2)
 * straight from the page cache.
 */
#ifndef GREGOR_NET_SEND_H
#define GREGOR_NET_SEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "util/buf.h"

struct send_pos {
	int phase;   /* even: memory piece phase/2; odd: file (phase-1)/2 */
	int64_t off; /* bytes already sent of the current piece */
};

bool send_done(const struct wr *w, const struct send_pos *pos);
/* True when pos is at a file slice. */
bool send_at_file(const struct wr *w, const struct send_pos *pos);
/*
 * Adds iovecs for w's memory bytes from pos up to its next file slice (or
 * its end); returns how many were added (at most max).
 */
int send_iov_fill(const struct wr *w, const struct send_pos *pos, struct iovec *iov, int max);
/* Advances pos over n memory bytes; returns the part of n beyond w's current memory run. */
size_t send_advance(const struct wr *w, struct send_pos *pos, size_t n);
/*
 * Record bytes sent so far with sendfile (zero copy) and copied through a
 * buffer by send_file_copy (TLS); any thread (/metrics).
 */
uint64_t send_sendfile_bytes(void);
uint64_t send_copied_bytes(void);
/* sendfile()s the file slice at pos; returns bytes sent, or -errno (-EAGAIN: socket full). */
ssize_t send_file(int sock, const struct wr *w, struct send_pos *pos);
/*
 * Copies up to cap bytes of the file slice at pos into buf with pread
 * (for a transport that cannot sendfile, TLS) without advancing pos;
 * returns bytes copied or -errno (-EIO if the file shrank).
 */
ssize_t send_file_copy(const struct wr *w, const struct send_pos *pos, uint8_t *buf, size_t cap);
/* Advances pos over n bytes of the file slice it is at. */
void send_file_advance(const struct wr *w, struct send_pos *pos, size_t n);

#endif
