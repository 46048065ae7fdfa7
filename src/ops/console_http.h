/*
 * console_http.h - the web console on the operations HTTP listener: its
 * page (web/, built into the binary: ops/web_assets.h) and the JSON API
 * the page reads (docs/console.md).  HTTP thread only; what lives on the
 * event loop is asked for through broker/console.h.
 */
#ifndef GREGOR_OPS_CONSOLE_HTTP_H
#define GREGOR_OPS_CONSOLE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/http_reply.h"

/* GET or HEAD of url: a page file, an /api/ view, or 404 (write: console.write.enable, for /api/console). */
enum MHD_Result console_http_get(struct MHD_Connection *mc, const char *url, bool write);
/* POST of url with body (NUL-terminated, len bytes): 403 unless write (console.write.enable). */
enum MHD_Result console_http_post(struct MHD_Connection *mc, const char *url, const char *body, size_t len, bool write);

/* An answer of status with {"error": msg}. */
enum MHD_Result console_http_error(struct MHD_Connection *mc, unsigned status, const char *msg);

#endif
