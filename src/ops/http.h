/*
 * http.h - the operations HTTP listener (metrics.listener): /metrics,
 * /health/live, /health/ready and the web console (ops/console_http.h),
 * served by libmicrohttpd on a thread of
 * its own so that no scrape or misbehaving HTTP client can delay the
 * Kafka event loop.
 */
#ifndef GREGOR_OPS_HTTP_H
#define GREGOR_OPS_HTTP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

struct http;

/*
 * Starts listening (console_write: console.write.enable) on spec ("http://host:port", port 0 picks a free one;
 * the address bound is logged).  *out is NULL (and 0 returned) when spec
 * is NULL or empty.  Returns 0 or -errno (logged).
 */
int http_start(const char *spec, bool console_write, struct http **out);
/* Stops the thread, closes every HTTP connection and frees h (NULL is fine). */
void http_stop(struct http *h);

#endif
