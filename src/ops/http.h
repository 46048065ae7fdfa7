/*
 * http.h - the operations HTTP listener (metrics.listener): /metrics,
 * /health/live and /health/ready, served by libmicrohttpd on a thread of
 * its own so that no scrape or misbehaving HTTP client can delay the
 * Kafka event loop.
 */
#ifndef GREGOR_OPS_HTTP_H
#define GREGOR_OPS_HTTP_H

struct http;

/*
 * Starts listening on spec ("http://host:port", port 0 picks a free one;
 * the address bound is logged).  *out is NULL (and 0 returned) when spec
 * is NULL or empty.  Returns 0 or -errno (logged).
 */
int http_start(const char *spec, struct http **out);
/* Stops the thread, closes every HTTP connection and frees h (NULL is fine). */
void http_stop(struct http *h);

#endif
