/*
 * buf.h - bounds-checked reader and growable writer for wire and disk bytes.
 *
 * Only this file, generated protocol code and proto/records.c touch raw
 * bytes.  The reader has a sticky error: every accessor returns 0 (or an
 * empty view) once the input is exhausted and sets r->err, so decoders read
 * straight through and test r->err once at the end.
 *
 * The writer builds one response in a growable memory buffer.  Record data
 * served from segment files is not copied: wr_file() records a file slice
 * that is sent with sendfile(2) at that point of the byte stream (see
 * net/send.c).  wr->len counts memory bytes; wr_total() counts both.
 */
#ifndef GREGOR_UTIL_BUF_H
#define GREGOR_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/fdref.h"

/* A view of bytes owned by someone else; len -1 means null. */
struct bytes {
	const uint8_t *p;
	int32_t len;
};

/* A view of a string (not NUL-terminated); len -1 means null. */
struct kstr {
	const char *p;
	int32_t len;
};

#define KSTR_NULL ((struct kstr){ NULL, -1 })
#define KSTR(s) ((struct kstr){ (s), (int32_t)sizeof(s) - 1 })
struct kstr kstr_c(const char *s); /* view of a C string (NULL -> null) */
bool kstr_eq(struct kstr a, struct kstr b);
bool kstr_eq_c(struct kstr a, const char *s);

struct kuuid {
	uint8_t b[16];
};

enum rd_err { RD_OK = 0, RD_UNDERFLOW = 1, RD_INVALID = 2 };

struct rd {
	const uint8_t *p, *end;
	int err; /* sticky: first failure wins */
};

void rd_init(struct rd *r, const void *p, size_t len);
static inline size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}
void rd_fail(struct rd *r, int err);

int8_t rd_i8(struct rd *r);
int16_t rd_i16(struct rd *r);
uint16_t rd_u16(struct rd *r);
int32_t rd_i32(struct rd *r);
uint32_t rd_u32(struct rd *r);
int64_t rd_i64(struct rd *r);
double rd_f64(struct rd *r);
bool rd_bool(struct rd *r);
uint32_t rd_uvarint(struct rd *r); /* unsigned LEB128, at most 5 bytes */
int32_t rd_varint(struct rd *r);   /* zigzag */
int64_t rd_varlong(struct rd *r);  /* zigzag, at most 10 bytes */
void rd_uuid(struct rd *r, struct kuuid *out);
bool rd_view(struct rd *r, size_t n, struct bytes *out); /* no copy */
/* An int16-length string (-1 = null), as in Kafka's internal-topic records; a view. */
struct kstr rd_kstr16(struct rd *r);
bool rd_skip(struct rd *r, size_t n);
/*
 * Reads an array count that must be -1 (null, when nullable) or fit in the
 * bytes left at elem_min_bytes per element; otherwise sets RD_INVALID.
 */
int32_t rd_count(struct rd *r, int32_t n, size_t elem_min_bytes, bool nullable);

/* A slice of a file to be sent with sendfile; holds a reference on ref. */
struct fslice {
	struct fdref *ref;
	int64_t pos;
	int64_t len;
};

struct wr_file {
	size_t at; /* memory offset the slice is inserted before */
	struct fslice s;
};

struct wr {
	uint8_t *buf;
	size_t len, cap;
	struct wr_file *files; /* in stream order */
	int nfiles, files_cap;
	int64_t file_bytes;
	int err; /* -ENOMEM, sticky */
};

void wr_init(struct wr *w);
/* Frees the buffer and drops every file reference. */
void wr_release(struct wr *w);
/* Hands the contents to the caller: w is empty afterwards. */
void wr_reset(struct wr *w);
static inline int64_t wr_total(const struct wr *w)
{
	return (int64_t)w->len + w->file_bytes;
}

size_t wr_i8(struct wr *w, int8_t v);
size_t wr_i16(struct wr *w, int16_t v);
size_t wr_u16(struct wr *w, uint16_t v);
size_t wr_i32(struct wr *w, int32_t v);
size_t wr_u32(struct wr *w, uint32_t v);
size_t wr_i64(struct wr *w, int64_t v);
size_t wr_f64(struct wr *w, double v);
size_t wr_bool(struct wr *w, bool v);
size_t wr_uvarint(struct wr *w, uint32_t v);
size_t wr_varint(struct wr *w, int32_t v);
size_t wr_varlong(struct wr *w, int64_t v);
size_t wr_uuid(struct wr *w, const struct kuuid *u);
size_t wr_raw(struct wr *w, const void *p, size_t n);
/* Reserves n bytes and returns a pointer to them (NULL on ENOMEM). */
uint8_t *wr_reserve(struct wr *w, size_t n);
/* Appends a file slice; takes a new reference on s->ref. */
void wr_file(struct wr *w, const struct fslice *s);
void wr_patch_i32(struct wr *w, size_t at, int32_t v);
void wr_patch_u32(struct wr *w, size_t at, uint32_t v);

size_t uvarint_size(uint32_t v);
size_t varint_size(int32_t v);
size_t varlong_size(int64_t v);

#endif
