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
 * the file in a shared mapping (decoded on access, so both ways share every
 * search), and neither holds a descriptor:
 *
 *   writable (idxfile_open)  the active segment's, and one being recovered
 *                            or written by the cleaner: a read-write
 *                            mapping with room for cap entries, made at the
 *                            first entry and grown by doubling (mremap);
 *                            the room past the file's end is reserved on
 *                            disk (fallocate, KEEP_SIZE) when mapped, so a
 *                            write into it never faults on a full disk.
 *                            The file is always exactly as long as its
 *                            entries: each append extends it by name
 *                            (truncate) before writing the entry into the
 *                            mapping.  Synced by name (idxfile_sync):
 *                            fdatasync writes back pages dirtied through
 *                            a mapping like written ones.
 *   mapped (idxfile_map)     a sealed segment's, only while the segment is
 *                            read: a read-only mapping (the pages are the
 *                            page cache's, as in Kafka).
 *
 * Each mapping is one entry of the process's memory map (vm.max_map_count):
 * an active index with no entries yet maps nothing.
 */
#ifndef GREGOR_LOG_IDXFILE_H
#define GREGOR_LOG_IDXFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idxfile {
	char *path;         /* writable: the file, extended and synced by name; NULL when mapped */
	uint8_t *raw;       /* entries as in the file: the mapping; NULL when none */
	size_t map_len;     /* bytes mapped (writable: room for cap entries, whole pages) */
	int32_t n, cap;     /* entries held, entries the mapping has room for (writable) */
	int32_t max_n;      /* segment.index.bytes / disk_size: the segment rolls when full */
	uint32_t disk_size; /* bytes per entry in the file */
	bool bad;           /* file size was not a multiple of disk_size, or could not be read */
};

/*
 * Opens writable (creating or, with trunc, emptying) the file at path and
 * loads its entries.  With lazy a missing file is not created: the index
 * holds no entries and its first entry (idxfile_append) makes the file, so
 * a segment that never gets an entry costs no inode; syncing or emptying
 * it is a no-op until then.  max_n below 1 counts as 1.  0 or -errno; on
 * error nothing is held.  A file of the wrong size is not an error: it
 * sets bad (the caller rebuilds the index).
 */
int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, bool lazy, uint32_t disk_size);
/*
 * Maps the file at path read-only; the descriptor is closed at once.  A
 * missing or empty file maps as no entries; a file of the wrong size sets
 * bad and holds no entries (searches then scan the log from its start).
 * 0 or -errno (nothing held).
 */
int idxfile_map(struct idxfile *f, const char *path, uint32_t disk_size);
/* Unmaps and drops the entries; a writable file's reserved room past its end is freed. */
void idxfile_close(struct idxfile *f);
/*
 * Writable: drops the mapping, keeping the count of entries (an idle
 * active segment then holds no memory-map entry and no mapped page-cache
 * pages); idxfile_wake() or the next append maps it again.
 */
void idxfile_park(struct idxfile *f);
/*
 * Writable: maps a parked file again; a no-op unless parked.  0 or -errno
 * (the index then holds no entries: searches scan from the segment start).
 */
int idxfile_wake(struct idxfile *f);
/*
 * Writable only: adds raw (disk_size bytes) after the last entry: extends
 * the file, then writes the entry through the mapping.  0 or -errno; on
 * error (no room on disk, no memory) the entry is not added: the index is
 * only sparser there, every search stays right.
 */
int idxfile_append(struct idxfile *f, const uint8_t *raw);
/*
 * Writable only: frees the reserved room past the file's end, then
 * sync_fn (0 or -errno, e.g. durable_fdatasync) of the file, opened by
 * name.  0 or -errno.
 */
int idxfile_sync(struct idxfile *f, int (*sync_fn)(int fd));
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
