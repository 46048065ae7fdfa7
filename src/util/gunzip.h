/*
 * gunzip.h - gzip decompression with ISA-L's igzip (already linked for
 * CRC32C).  Used only off the hot path: ListOffsets by timestamp on
 * gzip-compressed batches.  Record data served by Fetch is never
 * decompressed.
 */
#ifndef GREGOR_UTIL_GUNZIP_H
#define GREGOR_UTIL_GUNZIP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decompresses one gzip stream into a malloc'ed buffer (caller frees) of at
 * most out_max bytes.  Returns 0, -EBADMSG for bad input, -EFBIG past
 * out_max, -ENOMEM.
 */
int gunzip(const uint8_t *in, size_t in_len, size_t out_max, uint8_t **out, size_t *out_len);

#endif
