/*
 * header.c - Kafka request/response headers (see header.h for the layouts).
 *
 * The header version is not on the wire: it follows from whether
 * (api_key, api_version) is flexible, so api_key and api_version are read
 * first and the generated table is consulted before the rest is parsed.
 */
#include "proto/header.h"

#include <errno.h>

#include "proto_msgs.h"

static void header_rd_client_id(struct rd *r, struct kstr *out)
{
	int16_t n = rd_i16(r);
	struct bytes b;

	if (r->err || n == -1) {
		*out = KSTR_NULL;
		return;
	}
	if (n < 0) {
		rd_fail(r, RD_INVALID);
		*out = KSTR_NULL;
		return;
	}
	rd_view(r, (size_t)n, &b);
	out->p = (const char *)b.p;
	out->len = b.len;
}

static void header_skip_tags(struct rd *r)
{
	uint32_t ntag = rd_uvarint(r);

	for (uint32_t k = 0; k < ntag && !r->err; k++) {
		rd_uvarint(r);             /* tag */
		rd_skip(r, rd_uvarint(r)); /* size, data */
	}
}

int header_decode(struct rd *r, struct req_header *h)
{
	h->api_key = rd_i16(r);
	h->api_version = rd_i16(r);
	h->flexible = !r->err && proto_is_flexible(h->api_key, h->api_version);
	h->correlation_id = rd_i32(r);
	header_rd_client_id(r, &h->client_id);
	if (h->flexible)
		header_skip_tags(r);
	return r->err ? -EBADMSG : 0;
}

size_t header_write_response(struct wr *w, int16_t api_key, int16_t api_version, int32_t correlation_id)
{
	size_t at = wr_i32(w, 0);

	wr_i32(w, correlation_id);
	if (api_key != API_ApiVersions && proto_is_flexible(api_key, api_version))
		wr_uvarint(w, 0);
	return at;
}

size_t header_write_request(struct wr *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
			    struct kstr client_id)
{
	size_t at = wr_i32(w, 0);

	wr_i16(w, api_key);
	wr_i16(w, api_version);
	wr_i32(w, correlation_id);
	wr_i16(w, (int16_t)client_id.len);
	if (client_id.len > 0)
		wr_raw(w, client_id.p, (size_t)client_id.len);
	if (proto_is_flexible(api_key, api_version))
		wr_uvarint(w, 0);
	return at;
}

int header_read_response(struct rd *r, int16_t api_key, int16_t api_version, int32_t *correlation_id)
{
	*correlation_id = rd_i32(r);
	if (api_key != API_ApiVersions && proto_is_flexible(api_key, api_version))
		header_skip_tags(r);
	return r->err ? -EBADMSG : 0;
}
