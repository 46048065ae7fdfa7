/* wire.c - the blocking raw-protocol client (see wire.h).
 *
 * One TCP connection per broker, one request in flight: a tool asks a
 * handful of questions, so there is no pipelining. Frames are read whole
 * into the caller's arena (bounded by WIRE_FRAME_MAX) because the decoded
 * structs point into them. Timeouts are SO_SNDTIMEO/SO_RCVTIMEO, which
 * Linux also applies to connect().
 *
 * Security follows the librdkafka handle's own configuration (what
 * --command-config gave it): security.protocol SSL / SASL_SSL wrap the
 * socket in OpenSSL's TLS (ssl.ca.location, ssl.certificate.location,
 * ssl.key.location, host name checked unless
 * ssl.endpoint.identification.algorithm=none); SASL_PLAINTEXT / SASL_SSL
 * authenticate with SaslHandshake v1 and SaslAuthenticate (sasl.mechanisms
 * PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; sasl.username, sasl.password) after
 * ApiVersions, as librdkafka does.
 */
#include "wire.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "kafka.h"
#include "opt.h"
#include "proto/header.h"
#include "proto/kerr.h"
#include "login.h"

#define WIRE_FRAME_MAX (100 << 20) /* Kafka's socket.request.max.bytes default */

struct wire {
	int fd;
	SSL_CTX *ctx; /* SSL, SASL_SSL: the TLS session */
	SSL *ssl;
	int32_t node_id;
	int32_t corr;                        /* last correlation id sent */
	char addr[300];                      /* host:port, for messages */
	struct arena arena;                  /* holds versions */
	struct ApiVersionsResponse versions; /* what the broker speaks */
};

static int wire_connect(const char *host, int port, int *fd_out)
{
	struct timeval tv = { kafka_timeout_ms() / 1000, (kafka_timeout_ms() % 1000) * 1000 };
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[16];
	int fd = -1, err = -EHOSTUNREACH;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			err = -errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	*fd_out = fd;
	return fd < 0 ? err : 0;
}

/*
 * Sends (out) or receives all len bytes at p, again after EINTR. 0, -errno,
 * or -EPIPE / -ECONNRESET when the broker closed the connection.
 */
static int wire_xfer(struct wire *wc, uint8_t *p, size_t len, bool out)
{
	while (len > 0) {
		ssize_t n = wc->ssl ? (out ? SSL_write(wc->ssl, p, (int)len) : SSL_read(wc->ssl, p, (int)len))
			    : out   ? send(wc->fd, p, len, MSG_NOSIGNAL)
				    : recv(wc->fd, p, len, 0);

		if (wc->ssl && n <= 0)
			return out ? -EPIPE : -ECONNRESET;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : out ? -EPIPE : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One response frame into the arena. OUT *frame, *len. 0 or -errno. */
static int wire_recv(struct wire *wc, struct arena *a, uint8_t **frame, int32_t *len)
{
	uint8_t size[4];
	struct rd r;
	int err = wire_xfer(wc, size, sizeof(size), false);

	if (err)
		return err;
	rd_init(&r, size, sizeof(size));
	*len = rd_i32(&r);
	if (*len < 4 || *len > WIRE_FRAME_MAX)
		return -EBADMSG;
	*frame = arena_alloc(a, (size_t)*len);
	if (!*frame)
		return -ENOMEM;
	return wire_xfer(wc, *frame, (size_t)*len, false);
}

static const char *wire_errstr(int err)
{
	return err == -EAGAIN || err == -EWOULDBLOCK ? "timed out" : strerror(-err);
}

void wire_call(struct wire *wc, int16_t api_key, int16_t version, const void *req, void *resp, struct arena *a)
{
	const struct proto_api *pa = &proto_apis[api_key];
	int32_t corr = ++wc->corr, got = -1, len = 0;
	uint8_t *frame = NULL;
	struct wr w;
	struct rd r;
	size_t at;
	int err;

	wr_init(&w);
	at = header_write_request(&w, api_key, version, corr, kstr_c(opt_prog()));
	pa->req_encode(&w, version, req);
	wr_patch_i32(&w, at, (int32_t)(wr_total(&w) - (int64_t)at - 4));
	err = w.err ? w.err : wire_xfer(wc, w.buf, w.len, true);
	wr_release(&w);
	if (!err)
		err = wire_recv(wc, a, &frame, &len);
	if (err)
		kafka_die("%s v%d to broker %d (%s): %s", pa->name, version, wc->node_id, wc->addr, wire_errstr(err));
	rd_init(&r, frame, (size_t)len);
	if (header_read_response(&r, api_key, version, &got) || got != corr || pa->resp_decode(&r, a, version, resp))
		kafka_die("%s v%d: broker %d (%s) sent a response that does not parse", pa->name, version, wc->node_id,
			  wc->addr);
}

int16_t wire_version(const struct wire *wc, int16_t api_key, int16_t max)
{
	const struct proto_api *pa = &proto_apis[api_key];

	for (int32_t i = 0; i < wc->versions.ApiKeys.n; i++) {
		const struct ApiVersion *v = &wc->versions.ApiKeys.v[i];
		int16_t hi = v->MaxVersion < max ? v->MaxVersion : max;

		if (v->ApiKey == api_key && hi >= pa->min && hi >= v->MinVersion)
			return hi;
	}
	kafka_die("broker %d (%s) does not support %s v%d-%d", wc->node_id, wc->addr, pa->name, pa->min, max);
}

const struct rd_kafka_metadata *wire_metadata(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, kafka_timeout_ms());

	if (err)
		kafka_die("cannot read the cluster metadata: %s", kafka_err_name(err));
	return md;
}

int32_t wire_leader(rd_kafka_t *rk, const char *topic, int32_t partition)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int32_t leader = -1;

	for (int i = 0; i < md->topic_cnt; i++)
		for (int j = 0; !strcmp(md->topics[i].topic, topic) && j < md->topics[i].partition_cnt; j++)
			if (md->topics[i].partitions[j].id == partition)
				leader = md->topics[i].partitions[j].leader;
	rd_kafka_metadata_destroy(md);
	return leader;
}

/* host:port of node_id from the metadata; exits 1 if the node is unknown. */
static void wire_node_addr(rd_kafka_t *rk, int32_t node_id, char *host, size_t size, int *port)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int found = 0;

	for (int i = 0; i < md->broker_cnt && !found; i++)
		if (md->brokers[i].id == node_id) {
			snprintf(host, size, "%s", md->brokers[i].host);
			*port = md->brokers[i].port;
			found = 1;
		}
	rd_kafka_metadata_destroy(md);
	if (!found)
		kafka_die("broker %d is not in the cluster metadata", node_id);
}

/* The handle's value of a librdkafka property into out ("" if unset). */
static const char *wire_conf(rd_kafka_t *rk, const char *name, char *out, size_t size)
{
	size_t n = size;

	if (rd_kafka_conf_get(rd_kafka_conf(rk), name, out, &n) != RD_KAFKA_CONF_OK)
		out[0] = '\0';
	return out;
}

/* SNI and the name (or IP address) the certificate must carry when check; false on failure. */
static bool wire_tls_peer(SSL *ssl, const char *host, bool check)
{
	unsigned char ip[16];
	bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;

	if (!literal && SSL_set_tlsext_host_name(ssl, host) != 1)
		return false;
	if (!check)
		return true;
	return literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 : SSL_set1_host(ssl, host) == 1;
}

/* TLS over wc->fd to host, with the handle's ssl.* files.  Exits 1 on failure. */
static void wire_tls(struct wire *wc, rd_kafka_t *rk, const char *host)
{
	char ca[1024], cert[1024], key[1024], ident[16];

	wc->ctx = SSL_CTX_new(TLS_client_method());
	if (!wc->ctx)
		kafka_die("cannot make a TLS context");
	wire_conf(rk, "ssl.ca.location", ca, sizeof(ca));
	wire_conf(rk, "ssl.certificate.location", cert, sizeof(cert));
	wire_conf(rk, "ssl.key.location", key, sizeof(key));
	wire_conf(rk, "ssl.endpoint.identification.algorithm", ident, sizeof(ident));
	if (*ca ? SSL_CTX_load_verify_locations(wc->ctx, ca, NULL) != 1
		: SSL_CTX_set_default_verify_paths(wc->ctx) != 1)
		kafka_die("ssl.ca.location '%s': cannot load it", ca);
	if (*cert && (SSL_CTX_use_certificate_chain_file(wc->ctx, cert) != 1 ||
		      SSL_CTX_use_PrivateKey_file(wc->ctx, *key ? key : cert, SSL_FILETYPE_PEM) != 1))
		kafka_die("ssl.certificate.location '%s' / ssl.key.location '%s': cannot load them", cert, key);
	SSL_CTX_set_verify(wc->ctx, SSL_VERIFY_PEER, NULL);
	wc->ssl = SSL_new(wc->ctx);
	if (!wc->ssl || SSL_set_fd(wc->ssl, wc->fd) != 1 || !wire_tls_peer(wc->ssl, host, strcmp(ident, "none")))
		kafka_die("cannot set up TLS to %s", wc->addr);
	if (SSL_connect(wc->ssl) != 1) {
		char why[256];

		ERR_error_string_n(ERR_get_error(), why, sizeof(why));
		kafka_die("TLS handshake with broker %d (%s) failed: %s", wc->node_id, wc->addr, why);
	}
}

/* SaslHandshake v1 and SaslAuthenticate with the handle's mechanism and credentials.  Exits 1 on failure. */
static void wire_sasl(struct wire *wc, rd_kafka_t *rk)
{
	char mech[64], user[256], pass[256], out[1024];
	struct SaslHandshakeRequest hreq;
	struct SaslHandshakeResponse hresp;
	struct SaslAuthenticateRequest areq;
	struct SaslAuthenticateResponse aresp = { 0 };
	struct login sc;
	struct arena a;
	size_t outlen = 0;
	int r;

	wire_conf(rk, "sasl.mechanisms", mech, sizeof(mech));
	if (login_init(&sc, mech, wire_conf(rk, "sasl.username", user, sizeof(user)),
		       wire_conf(rk, "sasl.password", pass, sizeof(pass))))
		kafka_die("sasl.mechanism %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech);
	arena_init(&a, 0);
	SaslHandshakeRequest_init(&hreq);
	hreq.Mechanism = kstr_c(mech);
	wire_call(wc, API_SaslHandshake, 1, &hreq, &hresp, &a);
	if (hresp.ErrorCode)
		kafka_die("broker %d (%s) refuses SASL mechanism %s (%s)", wc->node_id, wc->addr, mech,
			  kafka_err_name(hresp.ErrorCode));
	while ((r = login_step(&sc, aresp.AuthBytes.p, aresp.AuthBytes.len > 0 ? (size_t)aresp.AuthBytes.len : 0, out,
			       sizeof(out), &outlen)) == 0) {
		SaslAuthenticateRequest_init(&areq);
		areq.AuthBytes = (struct bytes){ (const uint8_t *)out, (int32_t)outlen };
		wire_call(wc, API_SaslAuthenticate, wire_version(wc, API_SaslAuthenticate, 1), &areq, &aresp, &a);
		if (aresp.ErrorCode)
			kafka_die("SASL authentication with broker %d (%s) failed: %.*s (%s)", wc->node_id, wc->addr,
				  aresp.ErrorMessage.len > 0 ? aresp.ErrorMessage.len : 0,
				  aresp.ErrorMessage.p ? aresp.ErrorMessage.p : "", kafka_err_name(aresp.ErrorCode));
	}
	if (r < 0)
		kafka_die("SASL authentication with broker %d (%s): the broker's answer does not verify", wc->node_id,
			  wc->addr);
	arena_release(&a);
}

struct wire *wire_open(rd_kafka_t *rk, int32_t node_id)
{
	char proto[32];
	struct wire *wc = calloc(1, sizeof(*wc));
	struct ApiVersionsRequest req;
	char host[256];
	int port = 0, err;

	if (!wc)
		kafka_die("out of memory");
	wire_node_addr(rk, node_id, host, sizeof(host), &port);
	wc->node_id = node_id;
	snprintf(wc->addr, sizeof(wc->addr), "%s:%d", host, port);
	err = wire_connect(host, port, &wc->fd);
	if (err)
		kafka_die("cannot connect to broker %d at %s: %s", node_id, wc->addr, wire_errstr(err));
	wire_conf(rk, "security.protocol", proto, sizeof(proto));
	if (!strcasecmp(proto, "ssl") || !strcasecmp(proto, "sasl_ssl"))
		wire_tls(wc, rk, host);
	arena_init(&wc->arena, 0);
	ApiVersionsRequest_init(&req);
	wire_call(wc, API_ApiVersions, 0, &req, &wc->versions, &wc->arena);
	if (wc->versions.ErrorCode)
		kafka_die("ApiVersions to broker %d (%s): %s", node_id, wc->addr,
			  kafka_err_name(wc->versions.ErrorCode));
	if (!strncasecmp(proto, "sasl_", 5))
		wire_sasl(wc, rk);
	return wc;
}

void wire_close(struct wire *wc)
{
	if (!wc)
		return;
	if (wc->ssl) {
		SSL_shutdown(wc->ssl);
		SSL_free(wc->ssl);
	}
	SSL_CTX_free(wc->ctx);
	close(wc->fd);
	arena_release(&wc->arena);
	free(wc);
}

int32_t wire_node_id(const struct wire *wc)
{
	return wc->node_id;
}
