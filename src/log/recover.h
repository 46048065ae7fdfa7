/*
 * recover.h - bringing a segment's in-memory state and indexes back from
 * its files at start-up.
 *
 * Segments wholly below the recovery point (data known synced) are loaded
 * fast: indexes are checked for sanity and only the batches after the last
 * offset-index entry are walked (headers only) to find the segment's end.
 * Segments that may hold unsynced data are recovered: every batch is read
 * and CRC-checked from the start, both indexes are rebuilt, and a torn or
 * corrupt tail is truncated at the last valid batch with a warning that
 * names the file and position.
 */
#ifndef GREGOR_LOG_RECOVER_H
#define GREGOR_LOG_RECOVER_H

#include <stdint.h>

#include "log/segment.h"

/*
 * Walks the whole segment, rebuilds both indexes and truncates an invalid
 * tail.  The CRC of every batch from offset crc_from on is verified
 * (INT64_MIN: all of them, INT64_MAX: none); before it, where the log is
 * known durable (the recovery point), only the batch headers are read and
 * checked.  OUT *truncated: bytes cut; *checked: bytes whose CRC was
 * verified.  Returns 0 or -errno.
 */
int recover_seg(struct seg *seg, int64_t crc_from, int32_t index_interval_bytes, uint8_t *buf, size_t cap,
		int64_t *truncated, int64_t *checked);

/*
 * Loads a segment believed synced: falls back to recover_seg (with CRCs) if
 * an index is inconsistent or the tail is invalid (a missing index file is
 * simply refilled by the tail walk).  OUT *truncated as above.  Returns 0,
 * 1 if it recovered the whole segment, or -errno.
 */
int recover_load(struct seg *seg, int32_t index_interval_bytes, uint8_t *buf, size_t cap, int64_t *truncated);

#endif
