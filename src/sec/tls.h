/*
 * tls.h - TLS for a listener (OpenSSL 3): the server context built from
 * Kafka's ssl.* settings, and the connection transport that net/conn.c
 * drives without knowing it is TLS (struct conn_xport).
 *
 * Only PEM keystores and truststores are read (ssl.keystore.type=PEM,
 * ssl.truststore.type=PEM), from files or inline.  The handshake and every
 * read and write are non-blocking: they return -EAGAIN and say whether
 * they wait for the socket to be readable or writable.
 */
#ifndef GREGOR_SEC_TLS_H
#define GREGOR_SEC_TLS_H

#include <stddef.h>

#include "net/conn.h"

struct tls_ctx;

/* Kafka's ssl.* settings for one listener; NULL or "" means unset. */
struct tls_cfg {
	const char *keystore_type;              /* PEM only */
	const char *keystore_location;          /* PEM file: private key + certificate chain */
	const char *key_password;               /* of an encrypted private key */
	const char *keystore_certificate_chain; /* inline PEM certificates */
	const char *keystore_key;               /* inline PEM private key */
	const char *truststore_type;            /* PEM only */
	const char *truststore_location;        /* PEM file of CA certificates */
	const char *truststore_certificates;    /* inline PEM CA certificates */
	const char *client_auth;                /* none, requested, required */
	const char *enabled_protocols;          /* TLSv1.2,TLSv1.3 */
	const char *cipher_suites;              /* OpenSSL or IANA TLSv1.3 names; empty: OpenSSL's defaults */
};

/*
 * Builds a server context.  Returns 0, or -EINVAL with a message naming
 * the setting at fault in err (missing file, key not matching the
 * certificate, wrong password, unknown protocol or cipher).  Free with
 * tls_ctx_free().
 */
int tls_ctx_new(const struct tls_cfg *cfg, struct tls_ctx **out, char *err, size_t errlen);
void tls_ctx_free(struct tls_ctx *ctx);

/* The transport for conn_cfg.xport; conn_cfg.xport_arg is the struct tls_ctx. */
extern const struct conn_xport tls_xport;

#endif
