/*
 * http_reply.h - answers on the operations HTTP listener's thread, shared
 * by the listener itself (ops/http.c) and the web console's routes
 * (ops/console_http.c), so that neither needs the other's file for them.
 */
#ifndef GREGOR_OPS_HTTP_REPLY_H
#define GREGOR_OPS_HTTP_REPLY_H

#include <stddef.h>

#include <microhttpd.h>

/* HTTP thread: queues an answer of content type type; body is kept as mode says. */
enum MHD_Result http_send(struct MHD_Connection *mc, unsigned status, const char *type, char *body, size_t len,
			  enum MHD_ResponseMemoryMode mode);
/* HTTP thread: a plain-text answer of a static msg. */
enum MHD_Result http_text(struct MHD_Connection *mc, unsigned status, const char *msg);

#endif
