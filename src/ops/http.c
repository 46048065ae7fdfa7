/*
 * http.c - the operations HTTP listener (see http.h).
 *
 * libmicrohttpd runs one internal thread polling every HTTP connection;
 * handlers never touch loop-owned state (broker/stats.h and
 * broker/console.h say how figures cross over).  Limits that keep bad
 * clients cheap:
 *   - at most HTTP_CONNS_MAX connections, HTTP_PER_IP_MAX from one address;
 *   - a connection idle (or trickling, a slowloris) for HTTP_TIMEOUT_S is
 *     closed;
 *   - request line and headers must fit HTTP_MEM_BYTES: larger ones get
 *     431/414 or a closed connection from libmicrohttpd;
 *   - only GET and HEAD, and POST under /api/ for the console's writes
 *     (405 otherwise); a POST body is read up to HTTP_BODY_MAX bytes
 *     (413 past it), other bodies never;
 *   - only the exact paths below and the console's (404 otherwise:
 *     nothing is read from the file system, the console's files are in
 *     the binary, so `/../..` is just an unknown path).
 */
#include "ops/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/stats.h"
#include "ops/console_http.h"
#include "ops/http_reply.h"
#include "ops/metrics.h"
#include "util/log.h"

#define HTTP_CONNS_MAX 64
#define HTTP_PER_IP_MAX 16
#define HTTP_TIMEOUT_S 5
#define HTTP_MEM_BYTES (16 * 1024)
#define HTTP_BODY_MAX (8 * 1024)

struct http {
	struct MHD_Daemon *d;
	bool console_write; /* console.write.enable */
};

/* A POST body being read (the connection's con_cls). */
struct http_body {
	size_t len;
	bool too_large;
	char buf[HTTP_BODY_MAX + 1];
};

static enum MHD_Result http_metrics(struct MHD_Connection *mc)
{
	size_t len = 0;
	char *text = metrics_render(&len);

	if (!text)
		return http_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return http_send(mc, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len, MHD_RESPMEM_MUST_FREE);
}

/* Reads a POST body chunk by chunk into *con_cls; true once it is all read. */
static bool http_body_read(const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct http_body *hb = *con_cls;

	if (!*upload_data_size)
		return true;
	if (hb->len + *upload_data_size > HTTP_BODY_MAX)
		hb->too_large = true;
	else
		memcpy(hb->buf + hb->len, upload_data, *upload_data_size);
	hb->len += hb->too_large ? 0 : *upload_data_size;
	*upload_data_size = 0;
	return false;
}

static enum MHD_Result http_post(struct http *h, struct MHD_Connection *mc, const char *url, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct http_body *hb = *con_cls;

	if (!hb) {
		hb = calloc(1, sizeof(*hb));
		*con_cls = hb;
		return hb ? MHD_YES : MHD_NO; /* the body comes in the next calls */
	}
	if (!http_body_read(upload_data, upload_data_size, con_cls))
		return MHD_YES;
	if (hb->too_large)
		return console_http_error(mc, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
	hb->buf[hb->len] = '\0';
	return console_http_post(mc, url, hb->buf, hb->len, h->console_write);
}

static enum MHD_Result http_on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
				       const char *version, const char *upload_data, size_t *upload_data_size,
				       void **con_cls)
{
	(void)version;
	if (!strcmp(method, "POST") && !strncmp(url, "/api/", 5))
		return http_post(cls, mc, url, upload_data, upload_data_size, con_cls);
	*upload_data_size = 0; /* answered at the first call, with the headers: a body is never read */
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return http_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (!strcmp(url, "/metrics"))
		return http_metrics(mc);
	if (!strcmp(url, "/health/live"))
		return http_text(mc, MHD_HTTP_OK, "live\n");
	if (!strcmp(url, "/health/ready"))
		return stats_ready() ? http_text(mc, MHD_HTTP_OK, "ready\n")
				     : http_text(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	return console_http_get(mc, url, ((struct http *)cls)->console_write);
}

static void http_on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)mc;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

/* "http://host:port" into a resolved address. */
static int http_resolve(const char *spec, struct addrinfo **ai)
{
	char host[256];
	const char *p = strncmp(spec, "http://", 7) ? NULL : spec + 7, *colon;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };

	colon = p ? strrchr(p, ':') : NULL;
	if (!colon || (size_t)(colon - p) >= sizeof(host) || !colon[1] || strchr(colon + 1, '/'))
		return -EINVAL;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}
	return getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, ai) ? -EINVAL : 0;
}

static void http_log_bound(struct http *h, const char *spec)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);

	log_info("metrics listener on %s (port %u): /metrics, /health/live, /health/ready, console at / (%s)", spec,
		 di ? (unsigned)di->port : 0, h->console_write ? "read-write" : "read-only");
}

int http_start(const char *spec, bool console_write, struct http **out)
{
	struct addrinfo *ai = NULL;
	struct http *h;
	sigset_t all, was;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	*out = NULL;
	if (!spec || !spec[0])
		return 0;
	if (http_resolve(spec, &ai) < 0) {
		log_error("metrics.listener: cannot parse or resolve '%s' (expected http://host:port)", spec);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	h->console_write = console_write;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the HTTP thread inherits a mask blocking every signal: SIGTERM/SIGHUP go to the loop's signalfd */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, http_on_request, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNS_MAX,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_IP_MAX,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEM_BYTES, MHD_OPTION_NOTIFY_COMPLETED,
				http_on_completed, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	freeaddrinfo(ai);
	if (!h->d) {
		log_error("metrics.listener: cannot listen on '%s'", spec);
		free(h);
		return -EADDRINUSE;
	}
	http_log_bound(h, spec);
	*out = h;
	return 0;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
