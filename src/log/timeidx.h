/*
 * timeidx.h - a segment's sparse time index (<base>.timeindex).
 *
 * File format, Kafka's: a packed array of 12-byte entries, big-endian,
 * no header, file size = 12 * entries:
 *
 *   off len field
 *     0   8 timestamp       i64  largest batch maxTimestamp so far in the segment
 *     8   4 relativeOffset  i32  last offset of the batch that has it - segment base
 *
 * An entry is added at each offset-index point and when the segment stops
 * being active, only if the timestamp grew: timestamps strictly increase,
 * offsets do not decrease.  Lookup for time T returns the offset of the
 * last entry with timestamp <= T (every batch before it has a smaller max
 * timestamp), from which batch headers are scanned.  Held like offidx.
 */
#ifndef GREGOR_LOG_TIMEIDX_H
#define GREGOR_LOG_TIMEIDX_H

#include <stdbool.h>
#include <stdint.h>

#include "log/idxfile.h"

#define TIMEIDX_ENTRY_SIZE 12

struct timeidx_ent {
	int64_t ts;
	int32_t rel;
};

struct timeidx {
	struct idxfile f; /* the .timeindex file, entries ascending */
};

/* As offidx_open, offidx_map and offidx_close. */
int timeidx_open(struct timeidx *ti, const char *path, int32_t max_n, bool trunc, bool lazy);
int timeidx_map(struct timeidx *ti, const char *path);
void timeidx_close(struct timeidx *ti);
/* True if timestamps strictly increase and offsets are in [0, max_rel]. */
bool timeidx_valid(const struct timeidx *ti, int64_t max_rel);
/* Adds (ts, rel) if ts exceeds the last entry's; 0 or -errno (kept in memory anyway). */
int timeidx_maybe_append(struct timeidx *ti, int64_t ts, int32_t rel);
/* Offset of the last entry with ts <= target, -1 if none. */
int32_t timeidx_lookup(const struct timeidx *ti, int64_t ts);
static inline int timeidx_reset(struct timeidx *ti)
{
	return idxfile_reset(&ti->f);
}
static inline bool timeidx_full(const struct timeidx *ti)
{
	return idxfile_full(&ti->f);
}
/* Entry i, 0 <= i < ti->f.n. */
static inline struct timeidx_ent timeidx_ent(const struct timeidx *ti, int32_t i)
{
	const uint8_t *p = idxfile_raw(&ti->f, i);

	return (struct timeidx_ent){ .ts = (int64_t)idxfile_get_be(p, 8), .rel = (int32_t)idxfile_get_be(p + 8, 4) };
}

#endif
