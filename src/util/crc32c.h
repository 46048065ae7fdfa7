/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of Kafka record batches,
 * computed with ISA-L's crc32_iscsi.
 */
#ifndef GREGOR_UTIL_CRC32C_H
#define GREGOR_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(const void *p, size_t len);
/* Continues crc (a previous crc32c() result) over more bytes. */
uint32_t crc32c_update(uint32_t crc, const void *p, size_t len);

#endif
