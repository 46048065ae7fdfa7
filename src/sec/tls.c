/*
 * tls.c - OpenSSL server contexts and the TLS connection transport (see
 * tls.h).  SSL_MODE_ENABLE_PARTIAL_WRITE lets a write return once a record
 * is out, so the reply queue advances as with write(2); with
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER a retried write may come from a
 * buffer refilled with the same bytes (the fetch path's pread buffer).
 */
#include "sec/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "sec/principal_map.h"
#include "util/log.h"

struct tls_ctx {
	SSL_CTX *ssl_ctx;
	struct principal_map *pmap; /* ssl.principal.mapping.rules */
	bool check_host;            /* client: ssl.endpoint.identification.algorithm=https */
};

/* Room for a client connection's last failure (tls_error()), kept as the SSL's app data. */
#define TLS_WHY_MAX 200

static bool tls_set(const char *s)
{
	return s && s[0];
}

/* Appends OpenSSL's first queued error to err (or nothing). */
static int tls_fail(char *err, size_t errlen, const char *what, const char *name)
{
	unsigned long e = ERR_get_error();
	char why[256] = "";

	if (e)
		ERR_error_string_n(e, why, sizeof(why));
	ERR_clear_error();
	snprintf(err, errlen, "%s '%s'%s%s", what, name ? name : "", why[0] ? ": " : "", why);
	return -EINVAL;
}

/* Why a private key was refused: it does not match the certificate, or it could not be read. */
static const char *tls_key_why(void)
{
	if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH)
		return "the private key does not match the certificate in";
	return "cannot read the private key (wrong ssl.key.password?) in";
}

static int tls_password_cb(char *buf, int size, int rwflag, void *user)
{
	const char *pw = user;
	int n = pw ? (int)strlen(pw) : 0;

	(void)rwflag;
	if (n > size)
		n = size;
	if (n)
		memcpy(buf, pw, (size_t)n);
	return n;
}

/* Writes the base64 body from..to to bio in 64-character lines, skipping blanks and literal backslash-n. */
static void tls_pem_body(BIO *bio, const char *from, const char *to)
{
	int col = 0;

	for (const char *p = from; p < to; p++) {
		if (p[0] == '\\' && p + 1 < to && p[1] == 'n') {
			p++;
			continue;
		}
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			continue;
		BIO_write(bio, p, 1);
		if (++col == 64) {
			BIO_write(bio, "\n", 1);
			col = 0;
		}
	}
	if (col)
		BIO_write(bio, "\n", 1);
}

/*
 * A memory BIO holding inline PEM blocks laid out as OpenSSL reads them.
 * Inline values come on one line of server.properties: with literal
 * backslash-n for newlines, or joined by trailing-backslash continuation
 * lines (the newlines gone), or as written.  Each "-----BEGIN x-----" and
 * "-----END x-----" marker gets a line of its own and the body is reflowed.
 */
static BIO *tls_pem_bio(const char *pem)
{
	BIO *bio = BIO_new(BIO_s_mem());
	const char *p = pem;

	while (bio) {
		const char *begin = strstr(p, "-----BEGIN "), *hdr_end, *end, *end_end;

		if (!begin || !(hdr_end = strstr(begin + 11, "-----")) || !(end = strstr(hdr_end + 5, "-----END ")) ||
		    !(end_end = strstr(end + 9, "-----")))
			break;
		BIO_write(bio, begin, (int)(hdr_end + 5 - begin));
		BIO_write(bio, "\n", 1);
		tls_pem_body(bio, hdr_end + 5, end);
		BIO_write(bio, end, (int)(end_end + 5 - end));
		BIO_write(bio, "\n", 1);
		p = end_end + 5;
	}
	return bio;
}

/* The certificate chain and key given inline (ssl.keystore.certificate.chain, ssl.keystore.key). */
static int tls_keystore_inline(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	BIO *bio = tls_pem_bio(cfg->keystore_certificate_chain);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	EVP_PKEY *pk;
	int rc = 0;

	if (!x || SSL_CTX_use_certificate(sc, x) != 1) {
		rc = tls_fail(err, errlen, "ssl.keystore.certificate.chain: no usable PEM certificate in", "(inline)");
		goto out;
	}
	for (X509 *ca; (ca = PEM_read_bio_X509(bio, NULL, NULL, NULL));)
		SSL_CTX_add0_chain_cert(sc, ca);
	ERR_clear_error(); /* the end of the PEM list */
	BIO_free(bio);
	bio = tls_pem_bio(cfg->keystore_key);
	pk = bio ? PEM_read_bio_PrivateKey(bio, NULL, tls_password_cb, (void *)cfg->key_password) : NULL;
	if (!pk || SSL_CTX_use_PrivateKey(sc, pk) != 1)
		rc = tls_fail(err, errlen, tls_key_why(), "ssl.keystore.key");
	EVP_PKEY_free(pk);
out:
	X509_free(x);
	BIO_free(bio);
	return rc;
}

/* Whether path holds a Java KeyStore: JKS files start with FE ED FE ED, JCEKS ones with CE CE CE CE. */
static bool tls_is_jks(const char *path)
{
	unsigned char m[4] = { 0 };
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(m, 1, sizeof(m), f);
	fclose(f);
	return n == 4 && ((m[0] == 0xfe && m[1] == 0xed && m[2] == 0xfe && m[3] == 0xed) ||
			  (m[0] == 0xce && m[1] == 0xce && m[2] == 0xce && m[3] == 0xce));
}

/* The refusal of a Java KeyStore as store (ssl.keystore, ssl.truststore), naming the keytool command converting it. */
static int tls_jks_refuse(const char *store, const char *path, char *err, size_t errlen)
{
	if (!path)
		path = "<file>";
	snprintf(err, errlen,
		 "%s: Java KeyStore (JKS) files cannot be read; convert '%s' with 'keytool -importkeystore "
		 "-srckeystore %s -srcstoretype JKS -destkeystore %s.p12 -deststoretype PKCS12' and set "
		 "%s.type=PKCS12 and %s.location=%s.p12",
		 store, path, path, path, store, store, path);
	return -EINVAL;
}

/* store's type (ssl.keystore.type, ssl.truststore.type): 0 PEM, 1 PKCS12, or -EINVAL with err. */
static int tls_store_type(const char *type, const char *store, const char *path, char *err, size_t errlen)
{
	if (!tls_set(type) || !strcasecmp(type, "PEM"))
		return 0;
	if (!strcasecmp(type, "PKCS12"))
		return 1;
	if (!strcasecmp(type, "JKS") || !strcasecmp(type, "JCEKS"))
		return tls_jks_refuse(store, path, err, errlen);
	snprintf(err, errlen, "%s.type '%s': expected PEM or PKCS12", store, type);
	return -EINVAL;
}

/*
 * PKCS12_parse(), retried with OpenSSL's legacy provider loaded: stores
 * made by older Java or OpenSSL versions use RC2 or 3DES, which OpenSSL 3
 * only has there.  The provider is only needed to decrypt the file, and
 * is unloaded after.
 */
static int tls_p12_parse(PKCS12 *p12, const char *pw, EVP_PKEY **key, X509 **cert, STACK_OF(X509) * *ca)
{
	OSSL_PROVIDER *dflt, *legacy;
	int ok;

	if (PKCS12_parse(p12, pw, key, cert, ca) == 1)
		return 1;
	dflt = OSSL_PROVIDER_load(NULL, "default"); /* stays available beside legacy */
	legacy = OSSL_PROVIDER_load(NULL, "legacy");
	ERR_clear_error();
	ok = legacy && PKCS12_parse(p12, pw, key, cert, ca) == 1;
	if (legacy)
		OSSL_PROVIDER_unload(legacy);
	if (dflt)
		OSSL_PROVIDER_unload(dflt);
	return ok;
}

/* Reads the PKCS12 file path of store (ssl.keystore, ssl.truststore) opened with pw; 0 or -EINVAL with err. */
static int tls_p12_load(const char *store, const char *path, const char *pw, EVP_PKEY **key, X509 **cert,
			STACK_OF(X509) * *ca, char *err, size_t errlen)
{
	char what[128];
	PKCS12 *p12;
	FILE *f;

	if (tls_is_jks(path))
		return tls_jks_refuse(store, path, err, errlen);
	f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s.location '%s': %s", store, path, strerror(errno));
		return -EINVAL;
	}
	p12 = d2i_PKCS12_fp(f, NULL);
	fclose(f);
	snprintf(what, sizeof(what), "%s.location: not a PKCS12 file:", store);
	if (!p12)
		return tls_fail(err, errlen, what, path);
	if (tls_p12_parse(p12, pw ? pw : "", key, cert, ca) != 1) {
		PKCS12_free(p12);
		snprintf(what, sizeof(what), "%s.location: cannot open the PKCS12 file (wrong %s.password?)", store,
			 store);
		return tls_fail(err, errlen, what, path);
	}
	PKCS12_free(p12);
	return 0;
}

/* The key, certificate and chain of a PKCS12 keystore (ssl.keystore.type=PKCS12). */
static int tls_keystore_p12(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	const char *pw = tls_set(cfg->keystore_password) ? cfg->keystore_password : cfg->key_password;
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	STACK_OF(X509) *ca = NULL;
	int rc;

	rc = tls_p12_load("ssl.keystore", cfg->keystore_location, pw, &key, &cert, &ca, err, errlen);
	if (rc)
		return rc;
	if (!cert || !key) {
		snprintf(err, errlen,
			 "ssl.keystore.location '%s': the PKCS12 file holds no private key and certificate",
			 cfg->keystore_location);
		rc = -EINVAL;
	} else if (SSL_CTX_use_certificate(sc, cert) != 1 || SSL_CTX_use_PrivateKey(sc, key) != 1) {
		rc = tls_fail(err, errlen, tls_key_why(), cfg->keystore_location);
	}
	for (int i = 0; !rc && i < sk_X509_num(ca); i++)
		SSL_CTX_add1_chain_cert(sc, sk_X509_value(ca, i));
	EVP_PKEY_free(key);
	X509_free(cert);
	sk_X509_pop_free(ca, X509_free);
	return rc;
}

static int tls_keystore(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	int rc = tls_store_type(cfg->keystore_type, "ssl.keystore", cfg->keystore_location, err, errlen);

	if (rc < 0)
		return rc;
	SSL_CTX_set_default_passwd_cb(sc, tls_password_cb);
	SSL_CTX_set_default_passwd_cb_userdata(sc, (void *)cfg->key_password);
	if (rc == 1 && !tls_set(cfg->keystore_location)) {
		snprintf(err, errlen, "ssl.keystore.type=PKCS12 needs ssl.keystore.location");
		return -EINVAL;
	} else if (rc == 1) {
		rc = tls_keystore_p12(sc, cfg, err, errlen);
		if (rc)
			return rc;
	} else if (tls_set(cfg->keystore_location)) {
		if (tls_is_jks(cfg->keystore_location))
			return tls_jks_refuse("ssl.keystore", cfg->keystore_location, err, errlen);
		if (SSL_CTX_use_certificate_chain_file(sc, cfg->keystore_location) != 1)
			return tls_fail(err, errlen, "ssl.keystore.location: no PEM certificate chain in",
					cfg->keystore_location);
		if (SSL_CTX_use_PrivateKey_file(sc, cfg->keystore_location, SSL_FILETYPE_PEM) != 1)
			return tls_fail(err, errlen, tls_key_why(), cfg->keystore_location);
	} else if (tls_set(cfg->keystore_certificate_chain) && tls_set(cfg->keystore_key)) {
		rc = tls_keystore_inline(sc, cfg, err, errlen);
		if (rc)
			return rc;
	} else {
		snprintf(err, errlen,
			 "an SSL listener needs ssl.keystore.location, or ssl.keystore.certificate.chain "
			 "and ssl.keystore.key");
		return -EINVAL;
	}
	if (SSL_CTX_check_private_key(sc) != 1)
		return tls_fail(err, errlen, "the private key does not match the certificate of", "ssl.keystore");
	return 0;
}

/* Trusts the CA certificate x: the verify store and the client CA list. */
static void tls_trust(SSL_CTX *sc, X509 *x)
{
	X509_STORE_add_cert(SSL_CTX_get_cert_store(sc), x);
	SSL_CTX_add_client_CA(sc, x);
}

/* Adds the inline CA certificates to the verify store and the client CA list. */
static int tls_truststore_inline(SSL_CTX *sc, const char *pem, char *err, size_t errlen)
{
	BIO *bio = tls_pem_bio(pem);
	int n = 0;

	for (X509 *x; bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)); n++) {
		tls_trust(sc, x);
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(bio);
	if (!n) {
		snprintf(err, errlen, "ssl.truststore.certificates: no PEM certificate");
		return -EINVAL;
	}
	return 0;
}

/* The certificates of a PKCS12 truststore (ssl.truststore.type=PKCS12), each trusted. */
static int tls_truststore_p12(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	STACK_OF(X509) *ca = NULL;
	int rc;

	rc = tls_p12_load("ssl.truststore", cfg->truststore_location, cfg->truststore_password, &key, &cert, &ca, err,
			  errlen);
	if (rc)
		return rc;
	if (cert)
		tls_trust(sc, cert);
	for (int i = 0; i < sk_X509_num(ca); i++)
		tls_trust(sc, sk_X509_value(ca, i));
	if (!cert && !sk_X509_num(ca)) {
		snprintf(err, errlen, "ssl.truststore.location '%s': no certificate in the PKCS12 file",
			 cfg->truststore_location);
		rc = -EINVAL;
	}
	EVP_PKEY_free(key);
	X509_free(cert);
	sk_X509_pop_free(ca, X509_free);
	return rc;
}

/* ssl.truststore.*: the CA certificates client certificates are verified against. */
static int tls_trust_load(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	int type = tls_store_type(cfg->truststore_type, "ssl.truststore", cfg->truststore_location, err, errlen);

	if (type < 0)
		return type;
	if (type == 1 && !tls_set(cfg->truststore_location)) {
		snprintf(err, errlen, "ssl.truststore.type=PKCS12 needs ssl.truststore.location");
		return -EINVAL;
	}
	if (type == 1)
		return tls_truststore_p12(sc, cfg, err, errlen);
	if (tls_set(cfg->truststore_location)) {
		STACK_OF(X509_NAME) * names;

		if (tls_is_jks(cfg->truststore_location))
			return tls_jks_refuse("ssl.truststore", cfg->truststore_location, err, errlen);
		names = SSL_load_client_CA_file(cfg->truststore_location);

		if (!names || SSL_CTX_load_verify_locations(sc, cfg->truststore_location, NULL) != 1)
			return tls_fail(err, errlen, "ssl.truststore.location: no PEM certificate in",
					cfg->truststore_location);
		SSL_CTX_set_client_CA_list(sc, names);
	} else if (tls_set(cfg->truststore_certificates)) {
		return tls_truststore_inline(sc, cfg->truststore_certificates, err, errlen);
	}
	return 0;
}

static int tls_truststore(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	const char *auth = tls_set(cfg->client_auth) ? cfg->client_auth : "none";
	int mode;

	if (tls_trust_load(sc, cfg, err, errlen))
		return -EINVAL;
	if (!strcmp(auth, "required"))
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	else if (!strcmp(auth, "requested"))
		mode = SSL_VERIFY_PEER;
	else if (!strcmp(auth, "none"))
		mode = SSL_VERIFY_NONE;
	else {
		snprintf(err, errlen, "ssl.client.auth '%s': expected none, requested or required", auth);
		return -EINVAL;
	}
	if (mode != SSL_VERIFY_NONE && !tls_set(cfg->truststore_location) && !tls_set(cfg->truststore_certificates)) {
		snprintf(err, errlen, "ssl.client.auth=%s needs ssl.truststore.location or ssl.truststore.certificates",
			 auth);
		return -EINVAL;
	}
	SSL_CTX_set_verify(sc, mode, NULL);
	return 0;
}

/* ssl.enabled.protocols: the lowest and highest of the versions listed. */
static int tls_protocols(SSL_CTX *sc, const char *list, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int v;
	} vers[] = { { "TLSv1.2", TLS1_2_VERSION }, { "TLSv1.3", TLS1_3_VERSION } };
	int lo = 0, hi = 0;

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(vers) / sizeof(vers[0]); i++)
			if (strlen(vers[i].name) == n && !strncmp(p, vers[i].name, n))
				break;
		if (i == sizeof(vers) / sizeof(vers[0])) {
			snprintf(err, errlen, "ssl.enabled.protocols: '%.*s' is not one of TLSv1.2, TLSv1.3", (int)n,
				 p);
			return -EINVAL;
		}
		lo = lo && lo < vers[i].v ? lo : vers[i].v;
		hi = hi > vers[i].v ? hi : vers[i].v;
		p += n + (p[n] == ',');
	}
	if (!lo) {
		snprintf(err, errlen, "ssl.enabled.protocols is empty");
		return -EINVAL;
	}
	SSL_CTX_set_min_proto_version(sc, lo);
	SSL_CTX_set_max_proto_version(sc, hi);
	return 0;
}

/* ssl.cipher.suites: TLS_* names are TLSv1.3 suites, the rest OpenSSL's TLSv1.2 cipher names. */
static int tls_ciphers(SSL_CTX *sc, const char *list, char *err, size_t errlen)
{
	char v13[1024] = "", v12[1024] = "";

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		char *dst = !strncmp(p, "TLS_", 4) ? v13 : v12;
		size_t at = strlen(dst);

		if (at + n + 2 >= sizeof(v13)) {
			snprintf(err, errlen, "ssl.cipher.suites: list too long");
			return -EINVAL;
		}
		snprintf(dst + at, sizeof(v13) - at, "%s%.*s", at ? ":" : "", (int)n, p);
		p += n + (p[n] == ',');
	}
	if (v13[0] && SSL_CTX_set_ciphersuites(sc, v13) != 1)
		return tls_fail(err, errlen, "ssl.cipher.suites: no usable TLSv1.3 suite in", v13);
	if (v12[0] && SSL_CTX_set_cipher_list(sc, v12) != 1)
		return tls_fail(err, errlen, "ssl.cipher.suites: no usable cipher in", v12);
	return 0;
}

/*
 * The client side's certificates: the keystore's, if one is set, as the
 * client certificate; the truststore (else OpenSSL's default CA paths) to
 * verify the server with, always.
 */
static int tls_client_stores(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	if ((tls_set(cfg->keystore_location) || tls_set(cfg->keystore_certificate_chain)) &&
	    tls_keystore(sc, cfg, err, errlen))
		return -EINVAL;
	if (tls_trust_load(sc, cfg, err, errlen))
		return -EINVAL;
	if (!tls_set(cfg->truststore_location) && !tls_set(cfg->truststore_certificates))
		SSL_CTX_set_default_verify_paths(sc);
	SSL_CTX_set_verify(sc, SSL_VERIFY_PEER, NULL);
	return 0;
}

/* A context of either side; the stores are loaded by the caller's stores(). */
static int tls_ctx_build(const struct tls_cfg *cfg, bool client, struct tls_ctx **out, char *err, size_t errlen)
{
	struct tls_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc = -ENOMEM;

	if (!ctx)
		return -ENOMEM;
	ctx->ssl_ctx = SSL_CTX_new(client ? TLS_client_method() : TLS_server_method());
	if (!ctx->ssl_ctx)
		goto out_free;
	SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					       SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx->ssl_ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_app_data(ctx->ssl_ctx, ctx);
	rc = tls_protocols(ctx->ssl_ctx, tls_set(cfg->enabled_protocols) ? cfg->enabled_protocols : "TLSv1.2,TLSv1.3",
			   err, errlen);
	if (!rc)
		rc = principal_map_new(cfg->principal_mapping_rules, &ctx->pmap, err, errlen);
	if (!rc && tls_set(cfg->cipher_suites))
		rc = tls_ciphers(ctx->ssl_ctx, cfg->cipher_suites, err, errlen);
	if (!rc && client)
		rc = tls_client_stores(ctx->ssl_ctx, cfg, err, errlen);
	if (!rc && !client)
		rc = tls_keystore(ctx->ssl_ctx, cfg, err, errlen);
	if (!rc && !client)
		rc = tls_truststore(ctx->ssl_ctx, cfg, err, errlen);
	if (!rc) {
		*out = ctx;
		return 0;
	}
out_free:
	tls_ctx_free(ctx);
	return rc;
}

int tls_ctx_new(const struct tls_cfg *cfg, struct tls_ctx **out, char *err, size_t errlen)
{
	return tls_ctx_build(cfg, false, out, err, errlen);
}

int tls_client_ctx_new(const struct tls_cfg *cfg, const char *endpoint_identification, struct tls_ctx **out, char *err,
		       size_t errlen)
{
	const char *alg = endpoint_identification ? endpoint_identification : "";
	int rc;

	if (alg[0] && strcasecmp(alg, "https")) {
		snprintf(err, errlen, "ssl.endpoint.identification.algorithm '%s': expected https or empty", alg);
		return -EINVAL;
	}
	rc = tls_ctx_build(cfg, true, out, err, errlen);
	if (!rc)
		(*out)->check_host = alg[0] != '\0';
	return rc;
}

void tls_ctx_free(struct tls_ctx *ctx)
{
	if (!ctx)
		return;
	SSL_CTX_free(ctx->ssl_ctx);
	principal_map_free(ctx->pmap);
	free(ctx);
}

/* ---- the connection transport ---- */

static int tls_open(void *arg, int fd, void **t)
{
	struct tls_ctx *ctx = arg;
	SSL *ssl = SSL_new(ctx->ssl_ctx);

	if (!ssl)
		return -ENOMEM;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return -ENOMEM;
	}
	SSL_set_accept_state(ssl);
	SSL_set_read_ahead(ssl, 1); /* whole socket reads, not a header then a body per record */
	*t = ssl;
	return 0;
}

/* Maps an SSL_* result of r to bytes, 0 (EOF), -EAGAIN (with *want_out) or -errno. */
static int tls_result(SSL *ssl, int r, bool *want_out)
{
	int e = SSL_get_error(ssl, r);

	*want_out = false;
	switch (e) {
	case SSL_ERROR_NONE:
		return r;
	case SSL_ERROR_WANT_WRITE:
		*want_out = true;
		return -EAGAIN;
	case SSL_ERROR_WANT_READ:
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return errno ? -errno : -ECONNRESET;
	default:
		log_debug(LOGC_NET, "net", "TLS: %s", ERR_reason_error_string(ERR_peek_error()));
		if (SSL_get_app_data(ssl) && ERR_peek_error())
			snprintf(SSL_get_app_data(ssl), TLS_WHY_MAX, "%s", ERR_reason_error_string(ERR_peek_error()));
		ERR_clear_error();
		return -EPROTO;
	}
}

/* The subject DN of the verified client certificate (RFC 2253), malloc()ed; NULL without one. */
static char *tls_dn(SSL *t)
{
	X509 *x = SSL_get1_peer_certificate(t);
	BIO *bio;
	char *dn = NULL, *p;
	long n;

	if (!x)
		return NULL;
	bio = BIO_new(BIO_s_mem());
	if (bio && X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_RFC2253) >= 0) {
		n = BIO_get_mem_data(bio, &p);
		dn = malloc((size_t)n + 1);
		if (dn) {
			memcpy(dn, p, (size_t)n);
			dn[n] = '\0';
		}
	}
	BIO_free(bio);
	X509_free(x);
	return dn;
}

/* The principal name of the client certificate: its DN mapped by ssl.principal.mapping.rules; NULL without one. */
static char *tls_principal(void *t)
{
	const struct tls_ctx *ctx = SSL_CTX_get_app_data(SSL_get_SSL_CTX(t));
	char *dn = tls_dn(t), *name;

	if (!dn)
		return NULL;
	name = principal_map_apply(ctx->pmap, dn);
	free(dn);
	return name;
}

/* 0, or -EACCES when the client certificate's DN matches no ssl.principal.mapping.rules rule (as Kafka refuses it). */
static int tls_check_principal(SSL *t)
{
	const struct tls_ctx *ctx = SSL_CTX_get_app_data(SSL_get_SSL_CTX(t));
	char *dn = tls_dn(t), *name;

	if (!dn)
		return 0;
	name = principal_map_apply(ctx->pmap, dn);
	int rc = name ? 0 : -EACCES;

	if (rc)
		log_warn("TLS client certificate '%s' refused: no ssl.principal.mapping.rules rule matches it", dn);
	free(name);
	free(dn);
	return rc;
}

static int tls_handshake(void *t, bool *want_out)
{
	int r = SSL_do_handshake(t);

	if (r == 1) {
		*want_out = false;
		return tls_check_principal(t);
	}
	r = tls_result(t, r, want_out);
	return r == 0 ? -ECONNRESET : r;
}

static ssize_t tls_read(void *t, void *buf, size_t len, bool *want_out)
{
	int r = SSL_read(t, buf, len > INT32_MAX ? INT32_MAX : (int)len);

	*want_out = false;

	return r > 0 ? r : tls_result(t, r, want_out);
}

static ssize_t tls_write(void *t, const void *buf, size_t len, bool *want_out)
{
	int r = SSL_write(t, buf, len > INT32_MAX ? INT32_MAX : (int)len);

	*want_out = false;

	if (r > 0)
		return r;
	r = tls_result(t, r, want_out);
	return r == 0 ? -EPIPE : r;
}

static bool tls_pending(void *t)
{
	return SSL_has_pending(t) == 1; /* decrypted or read ahead, not yet returned */
}

static void tls_close(void *t)
{
	free(SSL_get_app_data(t));
	SSL_free(t);
}

/*
 * A client connection to host: SNI when host is a name, and with
 * ssl.endpoint.identification.algorithm=https the server certificate must
 * name host in its subjectAltName (a DNS name, or an IP address for an
 * address).
 */
static int tls_open_client(void *arg, int fd, const char *host, void **t)
{
	struct tls_ctx *ctx = arg;
	SSL *ssl = SSL_new(ctx->ssl_ctx);
	char *why = calloc(1, TLS_WHY_MAX);
	unsigned char ip[16];
	bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	int ok;

	if (!ssl || !why || SSL_set_fd(ssl, fd) != 1) {
		free(why);
		SSL_free(ssl);
		return -ENOMEM;
	}
	SSL_set_app_data(ssl, why);
	ok = is_ip || SSL_set_tlsext_host_name(ssl, host) == 1;
	if (ok && ctx->check_host && is_ip)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
	else if (ok && ctx->check_host)
		ok = SSL_set1_host(ssl, host) == 1;
	if (!ok) {
		tls_close(ssl);
		return -EINVAL;
	}
	SSL_set_connect_state(ssl);
	SSL_set_read_ahead(ssl, 1);
	*t = ssl;
	return 0;
}

/* Why a client connection failed: the certificate verification's reason, else OpenSSL's last error. */
static void tls_error(void *t, char *buf, size_t len)
{
	long v = SSL_get_verify_result(t);
	const char *why = SSL_get_app_data(t);

	if (v != X509_V_OK)
		snprintf(buf, len, "certificate verify failed: %s", X509_verify_cert_error_string(v));
	else
		snprintf(buf, len, "%s", why ? why : "");
}

const struct conn_xport tls_xport = {
	.open = tls_open,
	.handshake = tls_handshake,
	.read = tls_read,
	.write = tls_write,
	.pending = tls_pending,
	.principal = tls_principal,
	.close = tls_close,
	.open_client = tls_open_client,
	.error = tls_error,
};
