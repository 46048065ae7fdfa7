/*
 * sasl_plain.c - JAAS option parsing and the SASL PLAIN check (see
 * sasl_plain.h).  Password comparison does not stop at the first
 * differing byte.
 */
#include "sec/sasl_plain.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* One key="value" option of a JAAS entry; spans point into the text. */
struct jaas_opt {
	const char *key, *val;
	size_t keylen, vallen;
};

static const char *jaas_skip(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *jaas_word(const char *p, size_t *n)
{
	const char *s = p;

	while (*p && (isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-' || *p == '$'))
		p++;
	*n = (size_t)(p - s);
	return s;
}

/*
 * Walks the entry: calls fn on each option until it returns non-zero.
 * Returns fn's value, 0 at the end, or -EINVAL (message in err).
 */
static int jaas_walk(const char *jaas, int (*fn)(const struct jaas_opt *, void *), void *arg, char *err, size_t errlen)
{
	const char *p = jaas_skip(jaas ? jaas : "");
	size_t n;

	jaas_word(p, &n);
	if (!n) {
		snprintf(err, errlen, "JAAS config must start with a login module class name");
		return -EINVAL;
	}
	p = jaas_skip(p + n);
	jaas_word(p, &n);
	if (!((n == 8 && !strncmp(p, "required", 8)) || (n == 10 && !strncmp(p, "sufficient", 10)) ||
	      (n == 9 && !strncmp(p, "requisite", 9)) || (n == 8 && !strncmp(p, "optional", 8)))) {
		snprintf(err, errlen, "JAAS config: expected a control flag (required) after the login module");
		return -EINVAL;
	}
	for (p = jaas_skip(p + n); *p != ';'; p = jaas_skip(p)) {
		struct jaas_opt o;
		int r;

		o.key = jaas_word(p, &o.keylen);
		p += o.keylen;
		if (!o.keylen || *p != '=' || p[1] != '"') {
			snprintf(err, errlen, "JAAS config: expected key=\"value\" or ';' at '%.20s'", p);
			return -EINVAL;
		}
		o.val = p + 2;
		p = strchr(o.val, '"');
		if (!p) {
			snprintf(err, errlen, "JAAS config: unterminated value of %.*s", (int)o.keylen, o.key);
			return -EINVAL;
		}
		o.vallen = (size_t)(p - o.val);
		p++;
		r = fn ? fn(&o, arg) : 0;
		if (r)
			return r;
	}
	if (*jaas_skip(p + 1)) {
		snprintf(err, errlen, "JAAS config: text after ';' (one login module only)");
		return -EINVAL;
	}
	return 0;
}

static int jaas_count(const struct jaas_opt *o, void *arg)
{
	if (o->keylen > 5 && !strncmp(o->key, "user_", 5))
		++*(int *)arg;
	return 0;
}

int sasl_jaas_check(const char *jaas, char *err, size_t errlen)
{
	int n = 0, r = jaas_walk(jaas, jaas_count, &n, err, errlen);

	return r < 0 ? r : n;
}

struct plain_try {
	const uint8_t *user, *pass;
	size_t userlen, passlen;
};

static bool plain_same(const char *a, size_t alen, const uint8_t *b, size_t blen)
{
	unsigned diff = alen != blen;

	for (size_t i = 0; i < alen; i++)
		diff |= (unsigned)((uint8_t)a[i] ^ (i < blen ? b[i] : 0));
	return !diff;
}

static int plain_match(const struct jaas_opt *o, void *arg)
{
	const struct plain_try *t = arg;

	if (o->keylen != 5 + t->userlen || strncmp(o->key, "user_", 5) || memcmp(o->key + 5, t->user, t->userlen))
		return 0;
	return plain_same(o->val, o->vallen, t->pass, t->passlen) ? 1 : -EACCES;
}

int sasl_plain_verify(const char *jaas, const uint8_t *tok, size_t len, char *user, size_t userlen)
{
	const uint8_t *nul1 = memchr(tok, 0, len), *nul2;
	struct plain_try t;
	char err[128];
	size_t n;

	if (userlen)
		user[0] = 0;
	if (!nul1)
		return -EACCES;
	nul2 = memchr(nul1 + 1, 0, len - (size_t)(nul1 + 1 - tok));
	if (!nul2)
		return -EACCES;
	t.user = nul1 + 1;
	t.userlen = (size_t)(nul2 - t.user);
	t.pass = nul2 + 1;
	t.passlen = len - (size_t)(t.pass - tok);
	if (userlen) {
		n = t.userlen < userlen - 1 ? t.userlen : userlen - 1;
		memcpy(user, t.user, n);
		user[n] = 0;
	}
	if (!t.userlen || memchr(t.user, 0, t.userlen) || memchr(t.pass, 0, t.passlen))
		return -EACCES;
	if (nul1 != tok && (size_t)(nul1 - tok) != t.userlen)
		return -EACCES;
	if (nul1 != tok && memcmp(tok, t.user, t.userlen))
		return -EACCES;
	return jaas_walk(jaas, plain_match, &t, err, sizeof(err)) == 1 ? 0 : -EACCES;
}

struct jaas_find {
	const char *key;
	char *out;
	size_t outlen;
};

static int jaas_find_one(const struct jaas_opt *o, void *arg)
{
	struct jaas_find *f = arg;

	if (o->keylen != strlen(f->key) || strncmp(o->key, f->key, o->keylen))
		return 0;
	if (o->vallen >= f->outlen)
		return -ENAMETOOLONG;
	memcpy(f->out, o->val, o->vallen);
	f->out[o->vallen] = 0;
	return 1;
}

int sasl_jaas_option(const char *jaas, const char *key, char *out, size_t outlen, char *err, size_t errlen)
{
	struct jaas_find f = { key, out, outlen };
	int r = jaas_walk(jaas, NULL, NULL, err, errlen); /* the whole entry parses, not only up to key */

	if (r)
		return r;
	r = jaas_walk(jaas, jaas_find_one, &f, err, errlen);

	if (r == 1)
		return 0;
	if (r == 0)
		snprintf(err, errlen, "JAAS config: no %s=\"...\" option", key);
	else if (r == -ENAMETOOLONG)
		snprintf(err, errlen, "JAAS config: the value of %s is too long", key);
	return r == -ENAMETOOLONG || r == 0 ? -EINVAL : r;
}
