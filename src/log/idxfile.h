/*
 * idxfile.h - the file half of a segment's fixed-size-entry index files.
 *
 * offidx (<base>.index, 8-byte entries) and timeidx (<base>.timeindex,
 * 12-byte entries) share one shape: a headerless packed array of big-endian
 * entries, file size = entry size * entries, loaded whole into memory at
 * open, extended with one pwrite per added entry, truncated back to its
 * entries at close.  This file owns that shape; each index keeps its own
 * entry type, encoding, validity rule and search on top (offidx.h,
 * timeidx.h document the byte layouts).
 */
#ifndef GREGOR_LOG_IDXFILE_H
#define GREGOR_LOG_IDXFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/fdref.h"

/* Decodes one on-disk entry (raw, disk_size bytes) into ent (ent_size bytes). */
typedef void idxfile_decode_fn(void *ent, const uint8_t *raw);

struct idxfile {
	struct fdref *ref;  /* the file (the flusher holds references) */
	void *e;            /* in-memory entries, ascending, ent_size bytes each */
	int32_t n, cap;     /* entries held, entries allocated */
	int32_t max_n;      /* segment.index.bytes / disk_size: the segment rolls when full */
	uint32_t ent_size;  /* sizeof the index's entry struct */
	uint32_t disk_size; /* bytes per entry in the file */
	bool bad;           /* file size was not a multiple of disk_size, or could not be read */
};

/*
 * Opens (creating or, with trunc, emptying) the file at path and loads its
 * entries with decode.  max_n below 1 counts as 1.  0 or -errno; on error
 * nothing is held.  A file of the wrong size is not an error: it sets bad
 * (the caller rebuilds the index).
 */
int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, uint32_t ent_size, uint32_t disk_size,
		 idxfile_decode_fn *decode);
/* Truncates the file to its entries and drops the reference and the entries. */
void idxfile_close(struct idxfile *f);
/* Adds ent (in-memory form) and writes raw (its disk_size-byte encoding) after the last entry.
 * 0 or -errno; the entry is kept in memory even when the write fails (-ENOSPC for a short write). */
int idxfile_append(struct idxfile *f, const void *ent, const uint8_t *raw);
/* Drops every entry (memory and file) and clears bad. */
int idxfile_reset(struct idxfile *f);
static inline bool idxfile_full(const struct idxfile *f)
{
	return f->n >= f->max_n;
}
/* Entry i (0 <= i < n) in its in-memory form. */
static inline void *idxfile_ent(const struct idxfile *f, int32_t i)
{
	return (char *)f->e + (size_t)i * f->ent_size;
}

/* Big-endian helpers for the entry encodings: n-byte unsigned value at p. */
void idxfile_put_be(uint8_t *p, uint64_t v, int n);
uint64_t idxfile_get_be(const uint8_t *p, int n);

#endif
