/*
 * http_reply.c - answers on the operations HTTP listener's thread (see
 * http_reply.h).
 */
#include "ops/http_reply.h"

#include <string.h>

enum MHD_Result http_send(struct MHD_Connection *mc, unsigned status, const char *type, char *body, size_t len,
			  enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(mc, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_text(struct MHD_Connection *mc, unsigned status, const char *msg)
{
	return http_send(mc, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}
