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
 * A segment is held in one of two ways:
 *
 *   writable  (seg_open, seg_open_as)  the active segment, one being
 *             recovered at start-up, the cleaner's output: its .log open,
 *             its indexes mapped read-write with no descriptor (idxfile.h);
 *   sealed    (seg_open_sealed, seg_retire)  every other segment: nothing
 *             open while nobody reads it, only this struct.  A read calls
 *             seg_use(), which opens the .log read-only and maps both
 *             indexes read-only; the segment then sits in the bounded
 *             descriptor cache (segcache.h, log.segment.fd.cache.size) until
 *             it is evicted, least recently used first.  seg->log and the
 *             index entries of a sealed segment are valid until the next
 *             seg_use() of another segment; whoever keeps the .log longer
 *             (a sendfile slice, a cleaner pass) takes an fdref with
 *             seg_ref(), which an eviction does not close.
 *
 * The event-loop thread owns a segment and is the only user of the cache;
 * the flusher thread only takes an fdref of the active segment's .log
 * (under the partition lock) and syncs every other file by name.  Readers hold a
 * reference on the .log, so a segment deleted by retention stays readable
 * until the last reference goes.
 */
#ifndef GREGOR_LOG_SEGMENT_H
#define GREGOR_LOG_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log/offidx.h"
#include "log/segcache.h"
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
	struct fdref *log;         /* the .log file; NULL while a sealed segment is not open */
	struct offidx oi;          /* writable: heap; sealed: mapped while open, else empty */
	struct timeidx ti;
	char *path;               /* "<dir>/<20 digits>" without extension */
	bool sealed;              /* opened on demand through the descriptor cache */
	bool preallocated;        /* the .log extends past size (seg_preallocate): seg_trim cuts it back */
	bool stats_known;         /* max_ts, max_ts_offset, ts_unknown valid (seg_load_stats) */
	struct segcache_node lru; /* place in the descriptor cache while a sealed segment is open */
};

/* The descriptor cache's capacity, log.segment.fd.cache.size (at least 1). */
#define SEG_CACHE_DEFAULT 1024
void seg_cache_resize(int cap);
/* The cache itself, for statistics and tests (read-only). */
const struct segcache *seg_cache(void);

/* seg_iter's why at a batch header of zeros: the end of what was written into a preallocated .log. */
extern const char seg_zero_tail[];

/*
 * preallocate: allocates the writable .log to bytes (fallocate), so that
 * appends and their fdatasyncs find the blocks allocated and i_size set;
 * the space past size reads as zeros, which recovery takes for the end of
 * the log.  Best effort: without support or space the file just grows.
 */
void seg_preallocate(struct seg *seg, int64_t bytes);
/* Cuts a preallocated .log back to size (roll, close): 1 if it did, 0 if there was nothing to cut, or -errno. */
int seg_trim(struct seg *seg);

/* Test hook: the write used for appends (fault injection of ENOSPC, EIO, short writes). */
extern ssize_t (*seg_pwrite_fn)(int fd, const void *buf, size_t n, off_t pos);

/*
 * Opens the segment with base offset base in dir; with create, creates (and
 * empties) its files.  The index files are made by their first entry, not
 * here (idxfile_open, lazy): a missing one reads as no entries, which
 * recovery rebuilds and reads scan past.  Index entries are loaded but not
 * checked (see recover.c).  *out is freed with seg_close().
 */
int seg_open(const char *dir, int64_t base_offset, bool create, int32_t index_bytes, struct seg **out);
/*
 * seg_open() of the files <base>.log<suffix>, <base>.index<suffix> and
 * <base>.timeindex<suffix> (the cleaner's "<base>.log.cleaned"); with a
 * suffix the index files are made at once, as the cleaner renames them.  seg->path
 * is still "<dir>/<base>": once the files are renamed to their plain names
 * the segment is like any other (its descriptors follow the renames).
 */
int seg_open_as(const char *dir, int64_t base_offset, const char *suffix, bool create, int32_t index_bytes,
		struct seg **out);
/*
 * A sealed segment spanning [base_offset, end_offset) whose files are
 * trusted (below the recovery point): one statx for its size and creation
 * time, nothing opened.  next_offset is end_offset (as for a cleaned
 * segment, it spans up to the next segment's base).  Its max timestamp is
 * learnt at first use (seg_load_stats).  *out is freed with seg_close().
 */
int seg_open_sealed(const char *dir, int64_t base_offset, int64_t end_offset, int64_t now_ms, struct seg **out);
/*
 * A writable segment stops being written (after seg_seal): its index
 * mappings are dropped (the files are already exactly their entries), its
 * .log reference dropped, and from then on it is a sealed segment opened on
 * demand.
 */
void seg_retire(struct seg *seg);
/*
 * Makes a sealed segment readable: opens its .log and maps its indexes if
 * they are not (and learns its statistics the first time), and marks it
 * most recently used in the cache, which may evict another segment.  For a
 * writable segment, maps its indexes again if they were parked.  0 or
 * -errno.
 */
int seg_use(struct seg *seg);
/*
 * A writable segment that may stay idle (the active segment of a partition
 * just opened) drops its index mappings; seg_use() or the next append maps
 * them again.
 */
void seg_park(struct seg *seg);
/* seg_use(), then a reference to the .log for the caller to keep (fdref_put it). 0 or -errno. */
int seg_ref(struct seg *seg, struct fdref **out);
/* pread(2) of the .log through seg_use(): bytes read or -errno. */
ssize_t seg_pread(struct seg *seg, void *buf, size_t n, int64_t pos);
/* Makes max_ts, max_ts_offset and ts_unknown valid (seg_use at the first call of a segment found sealed). */
int seg_load_stats(struct seg *seg);
/* The .log file's modification time in ms, 0 if unknown. */
int64_t seg_mtime_ms(const struct seg *seg);
/* Drops what seg holds (the .log reference, index mappings), frees seg. */
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
