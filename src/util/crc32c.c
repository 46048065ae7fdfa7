/* crc32c.c - CRC-32C through ISA-L (see crc32c.h). */
#include "util/crc32c.h"

#include <isa-l/crc.h>

uint32_t crc32c_update(uint32_t crc, const void *p, size_t len)
{
	/* ISA-L works on the un-inverted register; Kafka's value is inverted. */
	return ~crc32_iscsi((unsigned char *)p, (int)len, ~crc);
}

uint32_t crc32c(const void *p, size_t len)
{
	return crc32c_update(0, p, len);
}
