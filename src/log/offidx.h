/*
 * offidx.h - a segment's sparse offset index (<base>.index).
 *
 * File format, Kafka's: a packed array of 8-byte entries, big-endian,
 * no header, file size = 8 * entries:
 *
 *   off len field
 *     0   4 relativeOffset  i32  batch last offset - segment base offset
 *     4   4 position        i32  byte position of that batch in <base>.log
 *
 * One entry is written for a batch when more than index.interval.bytes
 * were appended since the previous entry (see seg_index_batch()).  Entries
 * strictly increase in both fields.  A lookup for offset O returns the
 * position of the last entry whose offset <= O; a forward scan of batch
 * headers from there finds the batch holding O.
 *
 * The active segment's index is mapped read-write (a sparse index of a
 * 1 GiB segment at 4 KiB intervals is 2 MiB at most), the file always
 * exactly as long as its entries; a sealed segment's is mapped read-only
 * while the segment is read (idxfile.h).
 */
#ifndef GREGOR_LOG_OFFIDX_H
#define GREGOR_LOG_OFFIDX_H

#include <stdbool.h>
#include <stdint.h>

#include "log/idxfile.h"

#define OFFIDX_ENTRY_SIZE 8

struct offidx_ent {
	int32_t rel; /* offset relative to the segment base */
	int32_t pos; /* position in the .log file */
};

struct offidx {
	struct idxfile f; /* the .index file, entries ascending */
};

/* Opens writable (creating or, with trunc, emptying) the file at path and loads its entries; lazy: idxfile_open(). */
int offidx_open(struct offidx *oi, const char *path, int32_t max_n, bool trunc, bool lazy);
/* Maps the file at path read-only (idxfile_map). */
int offidx_map(struct offidx *oi, const char *path);
/* Writable: truncates the file to its entries and drops the reference.  Mapped: unmaps. */
void offidx_close(struct offidx *oi);
/* True if entries are strictly increasing, in range and below log_size. */
bool offidx_valid(const struct offidx *oi, int64_t log_size);
/* Kafka's sanity check of an index opened lazily: the last entry is in range and below log_size. */
bool offidx_valid_last(const struct offidx *oi, int64_t log_size);
/* Adds an entry (rel and pos must exceed the last entry's); 0 or -errno (kept in memory anyway). */
int offidx_append(struct offidx *oi, int32_t rel, int32_t pos);
/* Position of the last entry with rel <= target, 0 if none. */
int32_t offidx_lookup(const struct offidx *oi, int32_t rel);
/* Drops every entry (memory and file). */
static inline int offidx_reset(struct offidx *oi)
{
	return idxfile_reset(&oi->f);
}
static inline bool offidx_full(const struct offidx *oi)
{
	return idxfile_full(&oi->f);
}
/* Entry i, 0 <= i < oi->f.n. */
static inline struct offidx_ent offidx_ent(const struct offidx *oi, int32_t i)
{
	const uint8_t *p = idxfile_raw(&oi->f, i);

	return (struct offidx_ent){ .rel = (int32_t)idxfile_get_be(p, 4), .pos = (int32_t)idxfile_get_be(p + 4, 4) };
}

#endif
