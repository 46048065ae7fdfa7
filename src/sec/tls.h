/*
 * tls.h - TLS for a listener (OpenSSL 3): the server context built from
 * Kafka's ssl.* settings, and the connection transport that net/conn.c
 * drives without knowing it is TLS (struct conn_xport).
 *
 * Keystores and truststores are PEM (files or inline) or PKCS12 files;
 * Java's JKS is refused with the keytool command that converts it.  The
 * principal of a verified client certificate is its subject DN mapped by
 * ssl.principal.mapping.rules (sec/principal_map.h).  The handshake and every
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
	const char *keystore_type;              /* PEM (default) or PKCS12 */
	const char *keystore_location;          /* PEM or PKCS12 file: private key + certificate chain */
	const char *keystore_password;          /* of a PKCS12 keystore */
	const char *key_password;               /* of an encrypted private key */
	const char *keystore_certificate_chain; /* inline PEM certificates */
	const char *keystore_key;               /* inline PEM private key */
	const char *truststore_type;            /* PEM (default) or PKCS12 */
	const char *truststore_location;        /* PEM or PKCS12 file of CA certificates */
	const char *truststore_password;        /* of a PKCS12 truststore */
	const char *truststore_certificates;    /* inline PEM CA certificates */
	const char *client_auth;                /* none, requested, required */
	const char *enabled_protocols;          /* TLSv1.2,TLSv1.3 */
	const char *cipher_suites;              /* OpenSSL or IANA TLSv1.3 names; empty: OpenSSL's defaults */
	const char *principal_mapping_rules;    /* ssl.principal.mapping.rules; empty: DEFAULT */
};

/*
 * Builds a server context.  Returns 0, or -EINVAL with a message naming
 * the setting at fault in err (missing file, key not matching the
 * certificate, wrong password, unknown protocol or cipher, a JKS store,
 * bad principal mapping rules).  Free with
 * tls_ctx_free().
 */
int tls_ctx_new(const struct tls_cfg *cfg, struct tls_ctx **out, char *err, size_t errlen);
/*
 * Builds a client context (inter-broker connections): the server is
 * verified against the truststore (OpenSSL's default CA paths without
 * one); the keystore, when set, is the client certificate (for
 * ssl.client.auth on the server).  endpoint_identification is Kafka's
 * ssl.endpoint.identification.algorithm: "https" checks the host name
 * connected to against the certificate's subjectAltName, NULL or "" does
 * not.  client_auth and principal_mapping_rules are not used.  0 or
 * -EINVAL with err, as tls_ctx_new().
 */
int tls_client_ctx_new(const struct tls_cfg *cfg, const char *endpoint_identification, struct tls_ctx **out, char *err,
		       size_t errlen);
void tls_ctx_free(struct tls_ctx *ctx);

/*
 * The transport for conn_cfg.xport (a server context) and for
 * nclient_sec.xport (a client context: its open_client()); the xport arg
 * is the struct tls_ctx.
 */
extern const struct conn_xport tls_xport;

#endif
