/*
 * buf.c - bounds-checked reader and growable writer (see buf.h).
 * All multi-byte integers on the wire are big-endian.
 */
#include "util/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct kstr kstr_c(const char *s)
{
	if (!s)
		return KSTR_NULL;
	return (struct kstr){ s, (int32_t)strlen(s) };
}

bool kstr_eq(struct kstr a, struct kstr b)
{
	if (a.len != b.len)
		return false;
	return a.len <= 0 || memcmp(a.p, b.p, (size_t)a.len) == 0;
}

bool kstr_eq_c(struct kstr a, const char *s)
{
	return kstr_eq(a, kstr_c(s));
}

void rd_init(struct rd *r, const void *p, size_t len)
{
	r->p = p;
	r->end = r->p + len;
	r->err = RD_OK;
}

void rd_fail(struct rd *r, int err)
{
	if (!r->err)
		r->err = err;
	r->p = r->end;
}

static const uint8_t *rd_take(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err || rd_left(r) < n) {
		rd_fail(r, RD_UNDERFLOW);
		return NULL;
	}
	r->p += n;
	return p;
}

static uint64_t be_load(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

int8_t rd_i8(struct rd *r)
{
	const uint8_t *p = rd_take(r, 1);
	return p ? (int8_t)p[0] : 0;
}

uint16_t rd_u16(struct rd *r)
{
	const uint8_t *p = rd_take(r, 2);
	return p ? (uint16_t)be_load(p, 2) : 0;
}

int16_t rd_i16(struct rd *r)
{
	return (int16_t)rd_u16(r);
}

uint32_t rd_u32(struct rd *r)
{
	const uint8_t *p = rd_take(r, 4);
	return p ? (uint32_t)be_load(p, 4) : 0;
}

int32_t rd_i32(struct rd *r)
{
	return (int32_t)rd_u32(r);
}

int64_t rd_i64(struct rd *r)
{
	const uint8_t *p = rd_take(r, 8);
	return p ? (int64_t)be_load(p, 8) : 0;
}

double rd_f64(struct rd *r)
{
	uint64_t u = (uint64_t)rd_i64(r);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

bool rd_bool(struct rd *r)
{
	return rd_i8(r) != 0;
}

static uint64_t rd_leb(struct rd *r, int max_bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < max_bytes; i++) {
		const uint8_t *p = rd_take(r, 1);

		if (!p)
			return 0;
		v |= (uint64_t)(p[0] & 0x7f) << (7 * i);
		if (!(p[0] & 0x80))
			return v;
	}
	rd_fail(r, RD_INVALID);
	return 0;
}

uint32_t rd_uvarint(struct rd *r)
{
	return (uint32_t)rd_leb(r, 5);
}

int32_t rd_varint(struct rd *r)
{
	uint32_t u = (uint32_t)rd_leb(r, 5);
	return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t rd_varlong(struct rd *r)
{
	uint64_t u = rd_leb(r, 10);
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

void rd_uuid(struct rd *r, struct kuuid *out)
{
	const uint8_t *p = rd_take(r, 16);

	if (p)
		memcpy(out->b, p, 16);
	else
		memset(out->b, 0, 16);
}

bool rd_view(struct rd *r, size_t n, struct bytes *out)
{
	const uint8_t *p = rd_take(r, n);

	out->p = p;
	out->len = p ? (int32_t)n : 0;
	return p != NULL;
}

struct kstr rd_kstr16(struct rd *r)
{
	int16_t len = rd_i16(r);
	struct bytes b = { NULL, -1 };

	if (len < 0)
		return KSTR_NULL;
	rd_view(r, (size_t)len, &b);
	return (struct kstr){ (const char *)b.p, r->err ? -1 : len };
}

bool rd_skip(struct rd *r, size_t n)
{
	return rd_take(r, n) != NULL;
}

int32_t rd_count(struct rd *r, int32_t n, size_t elem_min_bytes, bool nullable)
{
	if (r->err)
		return 0;
	if (n == -1 && nullable)
		return -1;
	if (n < 0 || (elem_min_bytes && (size_t)n > rd_left(r) / elem_min_bytes)) {
		rd_fail(r, RD_INVALID);
		return 0;
	}
	return n;
}

/* ---- writer ---- */

void wr_init(struct wr *w)
{
	memset(w, 0, sizeof(*w));
}

void wr_release(struct wr *w)
{
	for (int i = 0; i < w->nfiles; i++)
		fdref_put(w->files[i].s.ref);
	free(w->files);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void wr_reset(struct wr *w)
{
	memset(w, 0, sizeof(*w));
}

uint8_t *wr_reserve(struct wr *w, size_t n)
{
	if (w->err)
		return NULL;
	if (w->len + n > w->cap || !w->buf) { /* n == 0 on an empty writer still gets a buffer */
		size_t cap = w->cap ? w->cap : 256;
		uint8_t *nb;

		while (cap < w->len + n)
			cap *= 2;
		nb = realloc(w->buf, cap);
		if (!nb) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->buf = nb;
		w->cap = cap;
	}
	w->len += n;
	return w->buf + w->len - n;
}

static size_t wr_be(struct wr *w, uint64_t v, int n)
{
	size_t at = w->len;
	uint8_t *p = wr_reserve(w, (size_t)n);

	if (p)
		for (int i = n - 1; i >= 0; i--, v >>= 8)
			p[i] = (uint8_t)v;
	return at;
}

size_t wr_i8(struct wr *w, int8_t v)
{
	return wr_be(w, (uint8_t)v, 1);
}
size_t wr_i16(struct wr *w, int16_t v)
{
	return wr_be(w, (uint16_t)v, 2);
}
size_t wr_u16(struct wr *w, uint16_t v)
{
	return wr_be(w, v, 2);
}
size_t wr_i32(struct wr *w, int32_t v)
{
	return wr_be(w, (uint32_t)v, 4);
}
size_t wr_u32(struct wr *w, uint32_t v)
{
	return wr_be(w, v, 4);
}
size_t wr_i64(struct wr *w, int64_t v)
{
	return wr_be(w, (uint64_t)v, 8);
}
size_t wr_bool(struct wr *w, bool v)
{
	return wr_be(w, v ? 1 : 0, 1);
}

size_t wr_f64(struct wr *w, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return wr_be(w, u, 8);
}

static size_t wr_leb(struct wr *w, uint64_t v)
{
	size_t at = w->len;
	uint8_t tmp[10];
	int n = 0;

	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	wr_raw(w, tmp, (size_t)n);
	return at;
}

size_t wr_uvarint(struct wr *w, uint32_t v)
{
	return wr_leb(w, v);
}

size_t wr_varint(struct wr *w, int32_t v)
{
	return wr_leb(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

size_t wr_varlong(struct wr *w, int64_t v)
{
	return wr_leb(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

size_t wr_uuid(struct wr *w, const struct kuuid *u)
{
	return wr_raw(w, u->b, 16);
}

size_t wr_raw(struct wr *w, const void *p, size_t n)
{
	size_t at = w->len;
	uint8_t *d = wr_reserve(w, n);

	if (d && n)
		memcpy(d, p, n);
	return at;
}

void wr_file(struct wr *w, const struct fslice *s)
{
	if (w->err || s->len == 0)
		return;
	if (w->nfiles == w->files_cap) {
		int cap = w->files_cap ? w->files_cap * 2 : 8;
		struct wr_file *nf = realloc(w->files, (size_t)cap * sizeof(*nf));

		if (!nf) {
			w->err = -ENOMEM;
			return;
		}
		w->files = nf;
		w->files_cap = cap;
	}
	w->files[w->nfiles].at = w->len;
	w->files[w->nfiles].s = *s;
	fdref_get(s->ref);
	w->nfiles++;
	w->file_bytes += s->len;
}

void wr_patch_u32(struct wr *w, size_t at, uint32_t v)
{
	if (w->err || at + 4 > w->len)
		return;
	for (int i = 3; i >= 0; i--, v >>= 8)
		w->buf[at + (size_t)i] = (uint8_t)v;
}

void wr_patch_i32(struct wr *w, size_t at, int32_t v)
{
	wr_patch_u32(w, at, (uint32_t)v);
}

size_t uvarint_size(uint32_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t varint_size(int32_t v)
{
	return uvarint_size(((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

size_t varlong_size(int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 1;

	while (u >= 0x80) {
		u >>= 7;
		n++;
	}
	return n;
}
