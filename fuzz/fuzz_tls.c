/*
 * fuzz_tls.c - the TLS transport (sec/tls.c) as net/conn.c drives it, on
 * a real socket pair: the server end is a non-blocking socket behind
 * tls_xport, the other end is the client.  The first byte picks what the
 * client sends:
 *   0: the bytes raw from the start (a handshake of garbage);
 *   1: a real TLS 1.2/1.3 handshake by an OpenSSL client, then the bytes
 *      raw (records that do not decrypt, alerts, truncated headers);
 *   2: the handshake, then the bytes as application data in records of
 *      sizes the bytes choose, which the server must read back whole and
 *      answer with tls_xport.write.
 * The server certificate is made once, in memory.  The records themselves
 * are OpenSSL's to parse; what is fuzzed is our glue: the -EAGAIN/want
 * mapping, EOF and error returns, pending bytes, the principal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "fuzz/fuzz.h"
#include "sec/tls.h"

#define FUZZ_STEPS 64

static struct tls_ctx *server_ctx;
static SSL_CTX *client_ctx;

/* PEM text of what write puts into a memory BIO, malloc()ed. */
static char *fuzz_pem(int (*write)(BIO *, void *), void *obj)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *p, *s;
	long n;

	if (!bio || write(bio, obj) != 1)
		abort();
	n = BIO_get_mem_data(bio, &p);
	s = strndup(p, (size_t)n);
	BIO_free(bio);
	return s;
}

static int fuzz_write_cert(BIO *bio, void *x)
{
	return PEM_write_bio_X509(bio, x);
}

static int fuzz_write_key(BIO *bio, void *k)
{
	return PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
}

/* A self-signed P-256 certificate for CN=fuzz, and the server context serving it. */
static void fuzz_setup(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	char err[256], *cert_pem, *key_pem;
	struct tls_cfg cfg = { 0 };

	if (!key || !x)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 3650);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
	X509_set_issuer_name(x, name);
	if (!X509_sign(x, key, EVP_sha256()))
		abort();
	cert_pem = fuzz_pem(fuzz_write_cert, x);
	key_pem = fuzz_pem(fuzz_write_key, key);
	cfg.keystore_certificate_chain = cert_pem;
	cfg.keystore_key = key_pem;
	cfg.truststore_certificates = cert_pem;
	cfg.client_auth = "requested";
	cfg.principal_mapping_rules = "RULE:^CN=(.*)$/$1/L,DEFAULT";
	if (tls_ctx_new(&cfg, &server_ctx, err, sizeof(err)))
		abort();
	client_ctx = SSL_CTX_new(TLS_client_method());
	if (!client_ctx)
		abort();
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
	free(cert_pem);
	free(key_pem);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* Runs the server's handshake (and the client's, if any) until done or failed: 0 once the server is done. */
static int fuzz_handshake(void *t, SSL *client)
{
	bool want_out;
	int r = -EAGAIN;

	for (int i = 0; i < FUZZ_STEPS && r == -EAGAIN; i++) {
		if (client)
			SSL_do_handshake(client);
		r = tls_xport.handshake(t, &want_out);
		if (r && r != -EAGAIN && r >= 0)
			abort(); /* the handshake returns 0, -EAGAIN or another -errno */
	}
	return r;
}

/* Reads what the server gets until EOF, an error or nothing more; returns the bytes read. */
static size_t fuzz_drain(void *t, uint8_t *buf, size_t cap)
{
	size_t total = 0;
	bool want_out;

	for (int i = 0; i < FUZZ_STEPS; i++) {
		ssize_t n = tls_xport.read(t, buf + total, cap - total, &want_out);

		if (n > (ssize_t)(cap - total))
			abort();
		if (n <= 0 && !(n == -EAGAIN && tls_xport.pending(t)))
			break;
		if (n > 0)
			total += (size_t)n;
		if (total == cap)
			break;
	}
	return total;
}

/* Mode 2: the bytes as application data in records of sizes they choose; the server reads them whole. */
static void fuzz_app_data(void *t, SSL *client, const uint8_t *data, size_t size)
{
	uint8_t *got = malloc(size + 1);
	size_t sent = 0, read = 0;
	bool want_out;

	if (!got)
		abort();
	while (sent < size) {
		size_t n = 1 + data[sent] % 200;
		int w;

		if (n > size - sent)
			n = size - sent;
		w = SSL_write(client, data + sent, (int)n);
		if (w <= 0)
			break; /* the socket buffer is full: read what went */
		sent += (size_t)w;
		read += fuzz_drain(t, got + read, size - read);
	}
	read += fuzz_drain(t, got + read, size - read);
	if (read != sent || memcmp(got, data, read))
		abort(); /* what the client sent, in order, nothing else */
	if (read && tls_xport.write(t, got, read, &want_out) <= 0 && !want_out)
		abort(); /* a fresh connection takes a reply */
	free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[4096];
	SSL *client = NULL;
	void *t = NULL;
	int sv[2], mode;
	char *who;

	fuzz_quiet();
	if (!server_ctx)
		fuzz_setup();
	if (size < 1 || size > 60000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 0;
	mode = data[0] % 3;
	data++, size--;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	if (tls_xport.open(server_ctx, sv[0], &t))
		abort();
	if (mode == 0) {
		if (write(sv[1], data, size) < 0 || shutdown(sv[1], SHUT_WR))
			abort();
		if (!fuzz_handshake(t, NULL))
			fuzz_drain(t, buf, sizeof(buf));
		goto out;
	}
	client = SSL_new(client_ctx);
	if (!client || SSL_set_fd(client, sv[1]) != 1)
		abort();
	SSL_set_connect_state(client);
	if (fuzz_handshake(t, client))
		abort();          /* a real client's handshake succeeds */
	SSL_do_handshake(client); /* the client takes the server's last flight */
	who = tls_xport.principal(t);
	free(who); /* no client certificate: NULL */
	if (mode == 1) {
		if (write(sv[1], data, size) < 0)
			abort();
		fuzz_drain(t, buf, sizeof(buf));
	} else {
		fuzz_app_data(t, client, data, size);
	}
out:
	tls_xport.close(t);
	SSL_free(client);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
