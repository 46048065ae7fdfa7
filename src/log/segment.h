/*
 * segment.h - one log segment: <base>.log with its .index and .timeindex.
 *
 * <base> is the segment's base offset as 20 decimal digits, zero-padded
 * (Kafka's names, e.g. 00000000000000001234.log).  The .log file is the
 * concatenation of record batches v2 exactly as appended (layout in
 * proto/records.h) with baseOffset and partitionLeaderEpoch assigned by
 * the log; nothing else: no file header, no padding.  Batch offsets are
 * strictly increasing and every batch's offsets lie in [base, base +
 * INT32_MAX].  The segment's last offset + 1 is the next segment's base
 * offset (or the partition's log end offset for the active segment).
 * Index formats are in offidx.h and timeidx.h.
 *
 * The event-loop thread owns a segment; the flusher thread only takes
 * fdref references of its files (under the partition lock) to fdatasync
 * them.  Readers hold a reference on seg->log, so a segment deleted by
 * retention stays readable until the last reference goes.
 */
#ifndef GREGOR_LOG_SEGMENT_H
#define GREGOR_LOG_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log/offidx.h"
#include "log/timeidx.h"
#include "proto/records.h"
#include "util/fdref.h"

struct seg {
	int64_t base_offset;
	int64_t next_offset;       /* last offset + 1; base_offset when empty */
	int64_t size;              /* bytes of whole batches in .log */
	int64_t roll_ts;           /* broker time of the first append (segment.ms), -1 while empty */
	int64_t max_ts;            /* largest batch maxTimestamp, -1 if none */
	int64_t max_ts_offset;     /* last offset of the batch holding max_ts, -1 if none */
	bool ts_unknown;           /* may hold batches with maxTimestamp -1 (stored before Produce set it):
				      time lookups read this segment from its start, inside such batches */
	int64_t bytes_since_index; /* appended since the last offset-index entry */
	struct fdref *log;         /* the .log file */
	struct offidx oi;
	struct timeidx ti;
	char *path; /* "<dir>/<20 digits>" without extension */
};

/* Test hook: the write used for appends (fault injection of ENOSPC, EIO, short writes). */
extern ssize_t (*seg_pwrite_fn)(int fd, const void *buf, size_t n, off_t pos);

/*
 * Opens the segment with base offset base in dir; with create, creates (and
 * empties) its files.  Index entries are loaded but not checked (see
 * recover.c).  *out is freed with seg_close().
 */
int seg_open(const char *dir, int64_t base_offset, bool create, int32_t index_bytes, struct seg **out);
/*
 * seg_open() of the files <base>.log<suffix>, <base>.index<suffix> and
 * <base>.timeindex<suffix> (the cleaner's "<base>.log.cleaned").  seg->path
 * is still "<dir>/<base>": once the files are renamed to their plain names
 * the segment is like any other (its descriptors follow the renames).
 */
int seg_open_as(const char *dir, int64_t base_offset, const char *suffix, bool create, int32_t index_bytes,
		struct seg **out);
/* Truncates the index files to their entries, drops the file references, frees seg. */
void seg_close(struct seg *seg);
/* Unlinks the three files (open references keep the data readable). */
void seg_unlink(struct seg *seg);
/*
 * When segment.ms counts from for a segment found on disk: the .log file's
 * creation time (statx birth time) if the file system keeps one and it is
 * not in the future, else now_ms.
 */
int64_t seg_created_ms(const struct seg *seg, int64_t now_ms);
/* Appends the final time-index entry when the segment stops being active. */
void seg_seal(struct seg *seg);

/*
 * Appends len bytes of whole batches (offsets already assigned, starting at
 * seg->next_offset) at seg->size with one write.  On a failed or short write
 * the file is truncated back and -errno (-ENOSPC for short) returned: nothing
 * is left appended.  Index write failures are logged, not returned.
 */
int seg_append(struct seg *seg, const uint8_t *blob, size_t len, int32_t index_interval_bytes, int64_t now_ms);

/* Updates indexes and in-memory stats for one batch h at pos (append and rebuild). */
void seg_index_batch(struct seg *seg, const struct batch_hdr *h, int64_t pos, int32_t index_interval_bytes);

/* First window read of an iterator (see iter_window in segment.c). */
#define SEG_ITER_FIRST_READ 4096

/* Walks batch headers of a segment file from a position. */
struct seg_iter {
	struct seg *seg;
	int64_t pos;        /* position of the next batch */
	int64_t end;        /* stop here */
	int64_t min_offset; /* the next batch's base offset must be >= this */
	bool crc;           /* verify each batch's CRC (reads the whole batch) */
	const char *why;    /* what was wrong when -EBADMSG is returned */
	uint8_t *buf;       /* window, caller-provided */
	size_t cap;
	int64_t win_pos;
	size_t win_len;
	size_t win_want; /* next read size: starts small, doubles up to cap */
};

void seg_iter_init(struct seg_iter *it, struct seg *seg, int64_t pos, int64_t end, bool crc, uint8_t *buf, size_t cap);
/*
 * Reads the batch header at it->pos into *h.  Returns 1 (it->pos still at the
 * batch; call seg_iter_skip to pass it), 0 at it->end, -EBADMSG for a torn or
 * corrupt batch (it->why says what) or -errno.
 */
int seg_iter_next(struct seg_iter *it, struct batch_hdr *h);
static inline void seg_iter_skip(struct seg_iter *it, const struct batch_hdr *h)
{
	it->pos += h->size;
	it->min_offset = records_last_offset(h) + 1;
}

/*
 * Finds the first batch whose last offset >= offset (searching from the
 * offset index).  Returns 1 with the iterator positioned on it and *h set,
 * 0 if the segment has no such batch, or -errno / -EBADMSG.
 */
int seg_find(struct seg *seg, int64_t offset, struct seg_iter *it, struct batch_hdr *h, uint8_t *buf, size_t cap);

/* Truncates the .log file to pos (recovery of a torn tail). */
int seg_truncate_bytes(struct seg *seg, int64_t pos);

#endif
