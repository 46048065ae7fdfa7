/*
 * header.h - Kafka request and response headers.
 *
 * Headers are not in the schema files: which header version a message uses
 * depends on the API table (proto_apis[], generated), so it is decided here.
 *
 *   request header v1  api_key int16, api_version int16, correlation_id int32,
 *                      client_id (int16 length, -1 = null)
 *   request header v2  v1 + tagged-field section; client_id stays an int16
 *                      length string (not compact)
 *   response header v0 correlation_id int32
 *   response header v1 v0 + tagged-field section (one 0x00 byte)
 *
 * Flexible (api_key, api_version) pairs use request header v2 and response
 * header v1 -- except ApiVersions, whose response header is always v0.
 */
#ifndef GREGOR_PROTO_HEADER_H
#define GREGOR_PROTO_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

struct req_header {
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	struct kstr client_id; /* view into the frame; len -1 = null */
	bool flexible;         /* header v2 was parsed */
};

/*
 * Decodes a request header from r (positioned after the 4-byte size) and
 * leaves r at the start of the body.  api_key and api_version are read
 * first and decide v1 or v2 via proto_is_flexible(); unknown keys and
 * versions are parsed as v1, so the caller can still answer them (a v2
 * tagged section is then left unread in front of the body).  Unknown tagged
 * fields are skipped.  Returns 0, or -EBADMSG on a truncated/invalid header.
 */
int header_decode(struct rd *r, struct req_header *h);

/*
 * Writes a response header: a 4-byte size placeholder, correlation_id, and
 * for flexible versions (ApiVersions excepted) an empty tagged-field
 * section.  Returns the offset of the size placeholder; after the body,
 * patch it with wr_patch_i32(w, at, (int32_t)(wr_total(w) - at - 4)).
 */
size_t header_write_response(struct wr *w, int16_t api_key, int16_t api_version, int32_t correlation_id);

/*
 * Writes a request header (for test clients and tools): size placeholder,
 * api_key, api_version, correlation_id, client_id, and an empty tagged-field
 * section for flexible versions.  Returns the offset of the size placeholder.
 */
size_t header_write_request(struct wr *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
			    struct kstr client_id);

/*
 * Reads a response header (for test clients and tools) from r, positioned
 * after the 4-byte size: correlation_id (OUT *correlation_id) and, for
 * flexible versions other than ApiVersions, the tagged-field section
 * (skipped).  Leaves r at the body.  Returns 0 or -EBADMSG.
 */
int header_read_response(struct rd *r, int16_t api_key, int16_t api_version, int32_t *correlation_id);

#endif
