/*
 * idxfile.h - the file half of a segment's fixed-size-entry index files.
 *
 * offidx (<base>.index, 8-byte entries) and timeidx (<base>.timeindex,
 * 12-byte entries) share one shape: a headerless packed array of big-endian
 * entries, file size = entry size * entries.  This file owns that shape;
 * each index keeps its own entry type, encoding, validity rule and search
 * on top (offidx.h, timeidx.h document the byte layouts).
 *
 * An index file is held in one of two ways, entries always as the bytes of
 * the file (decoded on access, so both ways share every search):
 *
 *   writable (idxfile_open)  the active segment's, and one being recovered
 *                            or written by the cleaner: a heap copy, its
 *                            descriptor kept, extended with one pwrite per
 *                            added entry, truncated back to its entries at
 *                            close;
 *   mapped (idxfile_map)     a sealed segment's, only while the segment is
 *                            read: a read-only shared mapping of the file,
 *                            no descriptor, no heap (the pages are the page
 *                            cache's, as in Kafka).
 */
#ifndef GREGOR_LOG_IDXFILE_H
#define GREGOR_LOG_IDXFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/fdref.h"

struct idxfile {
	struct fdref *ref;  /* writable: the file (the flusher holds references); NULL otherwise */
	uint8_t *raw;       /* entries as in the file: heap (writable) or mapping (mapped); NULL when empty */
	size_t map_len;     /* bytes mapped; 0 unless mapped */
	int32_t n, cap;     /* entries held, entries allocated (writable) */
	int32_t max_n;      /* segment.index.bytes / disk_size: the segment rolls when full */
	uint32_t disk_size; /* bytes per entry in the file */
	bool bad;           /* file size was not a multiple of disk_size, or could not be read */
};

/*
 * Opens writable (creating or, with trunc, emptying) the file at path and
 * loads its entries.  max_n below 1 counts as 1.  0 or -errno; on error
 * nothing is held.  A file of the wrong size is not an error: it sets bad
 * (the caller rebuilds the index).
 */
int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, uint32_t disk_size);
/*
 * Maps the file at path read-only; the descriptor is closed at once.  A
 * missing or empty file maps as no entries; a file of the wrong size sets
 * bad and holds no entries (searches then scan the log from its start).
 * 0 or -errno (nothing held).
 */
int idxfile_map(struct idxfile *f, const char *path, uint32_t disk_size);
/* Writable: truncates the file to its entries, drops the reference and the entries.  Mapped: unmaps. */
void idxfile_close(struct idxfile *f);
/* Writable only: adds raw (disk_size bytes) after the last entry, in memory and in the file.
 * 0 or -errno; the entry is kept in memory even when the write fails (-ENOSPC for a short write). */
int idxfile_append(struct idxfile *f, const uint8_t *raw);
/* Writable only: drops every entry (memory and file) and clears bad. */
int idxfile_reset(struct idxfile *f);
static inline bool idxfile_full(const struct idxfile *f)
{
	return f->n >= f->max_n;
}
/* The bytes of entry i (0 <= i < n). */
static inline const uint8_t *idxfile_raw(const struct idxfile *f, int32_t i)
{
	return f->raw + (size_t)i * f->disk_size;
}

/* Big-endian helpers for the entry encodings: n-byte unsigned value at p. */
void idxfile_put_be(uint8_t *p, uint64_t v, int n);
uint64_t idxfile_get_be(const uint8_t *p, int n);

#endif
