/*
 * downconvert.h - what Fetch serves to clients that cannot read record
 * batches v2 as stored.
 *
 * Fetch v0-v3 responses carry legacy message sets (v0-v1: magic 0, v2-v3:
 * magic 1): the file slice part_read() found is read into memory and each
 * batch converted (proto/msgset.h).  This is the one fetch path that copies
 * record data through user space; v4+ keep sendfile.  Fetch below v10
 * cannot carry zstd (KIP-110): such a partition is answered with
 * UNSUPPORTED_COMPRESSION_TYPE, as Kafka does.
 */
#ifndef GREGOR_BROKER_DOWNCONVERT_H
#define GREGOR_BROKER_DOWNCONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

/* Message format a Fetch version carries: 0, 1, or 2 (batches, no conversion). */
int downconvert_magic(int16_t fetch_version);

/*
 * Converts the whole v2 batches of slice s into a message set of format
 * magic appended to out: records from min_offset on, control batches
 * dropped, at most max_bytes unless min_one (then at least the first
 * batch that yields messages).  Returns 0, -ENOTSUP (a zstd batch),
 * -EBADMSG (a corrupt batch) or -errno.
 */
int downconvert_slice(const struct fslice *s, int magic, int64_t min_offset, int64_t max_bytes, bool min_one,
		      struct wr *out);

/*
 * True if a batch in slice s is zstd-compressed (Fetch v4-v9 must not
 * carry it).  Reads only the batch headers, in 64 KiB windows.  An
 * unreadable or corrupt slice counts as false (the client sees it then).
 */
bool downconvert_has_zstd(const struct fslice *s);

#endif
