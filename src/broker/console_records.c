/*
 * console_records.c - the latest records of a partition for the web
 * console (see console_records.h).
 *
 * Read like a read_uncommitted consumer's fetch (part_read up to the high
 * watermark, one segment slice at a time), then each batch parsed
 * (records_batch_parse), decompressed if it is (codec_decompress, bounded
 * by CONSOLE_READ_BYTES) and walked record by record.  Control batches
 * (transaction markers) are skipped.  Keys, values and header values are
 * given both as text (bytes that are not UTF-8 shown as '?') and as hex,
 * each cut at CONSOLE_RECORD_BYTES (their full size is given).  The read
 * is bounded in records and bytes; the loop only reads and copies what
 * is shown, the JSON is built on the HTTP thread.
 */
#include "broker/console_records.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker.h"
#include "broker/console.h"
#include "broker/console_view.h"
#include "broker/registry.h"
#include "log/partition.h"
#include "proto/codec.h"
#include "proto/records.h"

#define CONSOLE_HEADER_BYTES (4 * CONSOLE_RECORD_BYTES) /* a record's header bytes kept, then cut */

/* One record as copied: its key, value and header bytes (cut) are in rsnap.data. */
struct rsnap_rec {
	int64_t offset, timestamp;
	int32_t key_len, value_len; /* full lengths, -1 null */
	size_t key_at, value_at, headers_at;
	int32_t header_count, headers_len;
};

/* The copy the HTTP thread turns into the answer. */
struct rsnap {
	char topic[CONSOLE_NAME_MAX + 1];
	int32_t partition;
	int64_t log_start_offset, high_watermark;
	int32_t n, cap;
	struct rsnap_rec *v;
	struct wr data;
};

struct rec_walk {
	int64_t from, to; /* offsets wanted: [from, to) */
	struct rsnap *s;
};

static void rsnap_free(void *arg)
{
	struct rsnap *s = arg;

	wr_release(&s->data);
	free(s->v);
	free(s);
}

/* Copies up to max of the len bytes at p (len -1: null); returns where. */
static size_t rsnap_bytes(struct rsnap *s, const uint8_t *p, int32_t len, int32_t max)
{
	size_t at = s->data.len;

	if (len > 0)
		wr_raw(&s->data, p, (size_t)(len < max ? len : max));
	return at;
}

static int rec_one(void *arg, const struct record *rec)
{
	struct rec_walk *w = arg;
	struct rsnap *s = w->s;
	struct rsnap_rec *r;

	if (rec->offset < w->from || rec->offset >= w->to)
		return 0;
	if (!console_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
		return -ENOMEM;
	r = &s->v[s->n++];
	r->offset = rec->offset;
	r->timestamp = rec->timestamp;
	r->key_len = rec->key.len;
	r->value_len = rec->value.len;
	r->header_count = rec->header_count;
	r->headers_len = rec->headers.len < CONSOLE_HEADER_BYTES ? rec->headers.len : CONSOLE_HEADER_BYTES;
	r->key_at = rsnap_bytes(s, rec->key.p, rec->key.len, CONSOLE_RECORD_BYTES);
	r->value_at = rsnap_bytes(s, rec->value.p, rec->value.len, CONSOLE_RECORD_BYTES);
	r->headers_at = rsnap_bytes(s, rec->headers.p, r->headers_len, CONSOLE_HEADER_BYTES);
	return s->data.err;
}

/* {"size": n, "text": ..., "hex": ..., "truncated": bool} of the first bytes of len at p, or null. */
static json_t *rec_bytes(const uint8_t *p, int32_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = len > CONSOLE_RECORD_BYTES ? CONSOLE_RECORD_BYTES : (size_t)(len > 0 ? len : 0);
	char *hex;
	json_t *o;

	if (len < 0)
		return json_null();
	hex = malloc(n * 2 + 1);
	if (!hex)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[p[i] >> 4];
		hex[2 * i + 1] = digits[p[i] & 15];
	}
	hex[2 * n] = '\0';
	o = json_pack("{si so ss sb}", "size", len, "text", console_json_str((const char *)p, n), "hex", hex,
		      "truncated", (size_t)len > n);
	free(hex);
	return o;
}

/* The headers that were kept (a cut one ends the list). */
static json_t *rec_headers(const uint8_t *p, int32_t len, int32_t count)
{
	json_t *a = json_array();
	struct kstr key;
	struct bytes value;
	struct rd r;

	rd_init(&r, p, len > 0 ? (size_t)len : 0);
	for (int32_t i = 0; i < count && records_header_next(&r, &key, &value); i++)
		json_array_append_new(a, json_pack("{so so}", "key", console_json_str(key.p, (size_t)key.len), "value",
						   rec_bytes(value.p, value.len)));
	return a;
}

/* HTTP thread: the answer. */
static json_t *rsnap_render(void *arg)
{
	const struct rsnap *s = arg;
	json_t *a = json_array();

	for (int32_t i = 0; i < s->n; i++) {
		const struct rsnap_rec *r = &s->v[i];
		static const uint8_t none[1];
		const uint8_t *d = s->data.buf ? s->data.buf : none; /* nothing copied: every length is 0 or -1 */

		json_array_append_new(a,
				      json_pack("{sI sI so so so}", "offset", (json_int_t)r->offset, "timestamp",
						(json_int_t)r->timestamp, "key", rec_bytes(d + r->key_at, r->key_len),
						"value", rec_bytes(d + r->value_at, r->value_len), "headers",
						rec_headers(d + r->headers_at, r->headers_len, r->header_count)));
	}
	return json_pack("{ss si sI sI so}", "topic", s->topic, "partition", s->partition, "log_start_offset",
			 (json_int_t)s->log_start_offset, "high_watermark", (json_int_t)s->high_watermark, "records",
			 a);
}

/* One whole batch p (header h): its records in [w->from, w->to). */
static int rec_batch(const uint8_t *p, const struct batch_hdr *h, struct rec_walk *w)
{
	int codec = h->attributes & RECORDS_ATTR_CODEC_MASK;
	struct wr plain;
	int rc;

	if (records_is_control(h))
		return 0;
	if (!codec)
		return records_foreach(p, h, rec_one, w);
	wr_init(&plain);
	rc = codec_decompress(codec, p + RECORDS_HDR_SIZE, (size_t)(h->size - RECORDS_HDR_SIZE), &plain,
			      CONSOLE_READ_BYTES);
	if (!rc)
		rc = records_foreach_body(plain.buf, plain.len, h, rec_one, w);
	wr_release(&plain);
	return rc;
}

/* Reads s (whole batches from part_read) into buf and walks them; OUT *next: the offset after the last. */
static int rec_slice(const struct fslice *s, struct rec_walk *w, int64_t *next)
{
	uint8_t *buf = malloc(s->len > 0 ? (size_t)s->len : 1);
	size_t off = 0, got = 0;
	struct batch_hdr h;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (got < (size_t)s->len) {
		ssize_t n = pread(s->ref->fd, buf + got, (size_t)s->len - got, (off_t)(s->pos + (int64_t)got));

		if (n <= 0 && !(n < 0 && errno == EINTR)) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		got += n > 0 ? (size_t)n : 0;
	}
	while (!rc && off < got && !records_batch_parse(buf + off, got - off, &h)) {
		rc = rec_batch(buf + off, &h, w);
		*next = records_last_offset(&h) + 1;
		off += (size_t)h.size;
	}
	free(buf);
	return rc;
}

/* Walks the log from w->from up to w->to, at most CONSOLE_READ_BYTES of it. */
static int rec_read(struct part *part, struct rec_walk *w)
{
	int64_t at = w->from, budget = CONSOLE_READ_BYTES;
	int rc = 0;

	while (!rc && at < w->to && budget > 0) {
		struct fslice s = { 0 };
		int64_t next = at;

		rc = part_read(part, at, w->to, (int32_t)budget, false, &s);
		if (rc || !s.ref || s.len == 0) {
			fdref_put(s.ref);
			break;
		}
		budget -= s.len;
		rc = rec_slice(&s, w, &next);
		fdref_put(s.ref);
		if (next <= at)
			break;
		at = next;
	}
	return rc;
}

void console_records_run(struct broker *b, struct console_job *j)
{
	const struct console_ask *a = console_job_ask(j);
	struct topic *t = registry_find(b->reg, kstr_c(a->name));
	struct part *part = t && !t->creating ? registry_part(t, a->partition) : NULL;
	struct rec_walk w;
	struct rsnap *s;
	int rc;

	if (!part) {
		console_job_error(j, 404, "partition %d of topic '%s' is not held by this broker", a->partition,
				  a->name);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		console_job_error(j, 500, "out of memory");
		return;
	}
	wr_init(&s->data);
	snprintf(s->topic, sizeof(s->topic), "%s", a->name);
	s->partition = a->partition;
	s->log_start_offset = part_log_start_offset(part);
	s->high_watermark = w.to = part_high_watermark(part);
	w.from = w.to - a->limit > s->log_start_offset ? w.to - a->limit : s->log_start_offset;
	w.s = s;
	rc = rec_read(part, &w);
	if (rc && rc != -ERANGE) {
		rsnap_free(s);
		console_job_error(j, 500, "cannot read the log: %s", strerror(-rc));
		return;
	}
	console_job_answer_snap(j, 200, s, rsnap_render, rsnap_free);
}
