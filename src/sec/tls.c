/*
 * tls.c - OpenSSL server contexts and the TLS connection transport (see
 * tls.h).  SSL_MODE_ENABLE_PARTIAL_WRITE lets a write return once a record
 * is out, so the reply queue advances as with write(2); with
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER a retried write may come from a
 * buffer refilled with the same bytes (the fetch path's pread buffer).
 */
#include "sec/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "util/log.h"

struct tls_ctx {
	SSL_CTX *ssl_ctx;
};

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

static int tls_keystore(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	int rc;

	if (tls_set(cfg->keystore_type) && strcasecmp(cfg->keystore_type, "PEM")) {
		snprintf(err, errlen, "ssl.keystore.type '%s': only PEM is supported", cfg->keystore_type);
		return -EINVAL;
	}
	SSL_CTX_set_default_passwd_cb(sc, tls_password_cb);
	SSL_CTX_set_default_passwd_cb_userdata(sc, (void *)cfg->key_password);
	if (tls_set(cfg->keystore_location)) {
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

/* Adds the inline CA certificates to the verify store and the client CA list. */
static int tls_truststore_inline(SSL_CTX *sc, const char *pem, char *err, size_t errlen)
{
	BIO *bio = tls_pem_bio(pem);
	X509_STORE *st = SSL_CTX_get_cert_store(sc);
	int n = 0;

	for (X509 *x; bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)); n++) {
		X509_STORE_add_cert(st, x);
		SSL_CTX_add_client_CA(sc, x);
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

static int tls_truststore(SSL_CTX *sc, const struct tls_cfg *cfg, char *err, size_t errlen)
{
	const char *auth = tls_set(cfg->client_auth) ? cfg->client_auth : "none";
	int mode;

	if (tls_set(cfg->truststore_type) && strcasecmp(cfg->truststore_type, "PEM")) {
		snprintf(err, errlen, "ssl.truststore.type '%s': only PEM is supported", cfg->truststore_type);
		return -EINVAL;
	}
	if (tls_set(cfg->truststore_location)) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->truststore_location);

		if (!names || SSL_CTX_load_verify_locations(sc, cfg->truststore_location, NULL) != 1)
			return tls_fail(err, errlen, "ssl.truststore.location: no PEM certificate in",
					cfg->truststore_location);
		SSL_CTX_set_client_CA_list(sc, names);
	} else if (tls_set(cfg->truststore_certificates) &&
		   tls_truststore_inline(sc, cfg->truststore_certificates, err, errlen)) {
		return -EINVAL;
	}
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

int tls_ctx_new(const struct tls_cfg *cfg, struct tls_ctx **out, char *err, size_t errlen)
{
	struct tls_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc = -ENOMEM;

	if (!ctx)
		return -ENOMEM;
	ctx->ssl_ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx->ssl_ctx)
		goto out_free;
	SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					       SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx->ssl_ctx, SSL_OP_NO_RENEGOTIATION);
	rc = tls_protocols(ctx->ssl_ctx, tls_set(cfg->enabled_protocols) ? cfg->enabled_protocols : "TLSv1.2,TLSv1.3",
			   err, errlen);
	if (!rc && tls_set(cfg->cipher_suites))
		rc = tls_ciphers(ctx->ssl_ctx, cfg->cipher_suites, err, errlen);
	if (!rc)
		rc = tls_keystore(ctx->ssl_ctx, cfg, err, errlen);
	if (!rc)
		rc = tls_truststore(ctx->ssl_ctx, cfg, err, errlen);
	if (!rc) {
		*out = ctx;
		return 0;
	}
out_free:
	tls_ctx_free(ctx);
	return rc;
}

void tls_ctx_free(struct tls_ctx *ctx)
{
	if (!ctx)
		return;
	SSL_CTX_free(ctx->ssl_ctx);
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
		ERR_clear_error();
		return -EPROTO;
	}
}

static int tls_handshake(void *t, bool *want_out)
{
	int r = SSL_do_handshake(t);

	if (r == 1) {
		*want_out = false;
		return 0;
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

/* The subject DN of the verified client certificate (RFC 2253), malloc()ed; NULL without one. */
static char *tls_principal(void *t)
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

static void tls_close(void *t)
{
	SSL_free(t);
}

const struct conn_xport tls_xport = {
	.open = tls_open,
	.handshake = tls_handshake,
	.read = tls_read,
	.write = tls_write,
	.pending = tls_pending,
	.principal = tls_principal,
	.close = tls_close,
};
