/*
 * conf.c - table-driven settings: defaults, Java-properties parsing,
 * overrides, read-back and markdown docs (see conf.h).
 *
 * Everything goes through one function, conf_set(), so a value accepted
 * from a file, from --override or from an admin request is checked the same
 * way.  Values are parsed into a temporary first and stored only when valid:
 * a rejected setting never leaves the struct half-written.
 */
#include "util/conf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WS " \t\f"

int conf_index(const struct conf_table *t, const char *name)
{
	for (size_t i = 0; i < t->ndefs; i++)
		if (!strcmp(t->defs[i].name, name))
			return (int)i;
	return -1;
}

const struct conf_def *conf_find(const struct conf_table *t, const char *name)
{
	int i = conf_index(t, name);

	return i < 0 ? NULL : &t->defs[i];
}

static void *field(void *obj, const struct conf_def *d)
{
	return (char *)obj + d->offset;
}

static const void *cfield(const void *obj, const struct conf_def *d)
{
	return (const char *)obj + d->offset;
}

static bool *set_flags(const struct conf_table *t, void *obj)
{
	return t->has_set ? (bool *)((char *)obj + t->set_offset) : NULL;
}

static bool is_str(enum conf_type type)
{
	return type == CONF_STRING || type == CONF_LIST;
}

const char *conf_type_name(enum conf_type type)
{
	switch (type) {
	case CONF_BOOL:
		return "boolean";
	case CONF_INT32:
		return "int";
	case CONF_INT64:
		return "long";
	case CONF_STRING:
		return "string";
	case CONF_LIST:
		return "list";
	case CONF_ENUM:
		return "enum";
	}
	return "?";
}

/* Trimmed copy of [p, p+n): the caller frees it. */
static char *dup_trim(const char *p, size_t n)
{
	char *s;

	while (n && strchr(WS "\r\n\v", *p) && *p) {
		p++;
		n--;
	}
	while (n && strchr(WS "\r\n\v", p[n - 1]) && p[n - 1])
		n--;
	s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

bool conf_list_next(const char **p, struct kstr *out)
{
	const char *s = *p;

	if (!s)
		return false;
	for (;;) {
		size_t n;

		s += strspn(s, WS);
		if (!*s)
			break;
		n = strcspn(s, ",");
		*p = s + n + (s[n] == ',');
		while (n && strchr(WS, s[n - 1]))
			n--;
		if (n) {
			out->p = s;
			out->len = (int32_t)n;
			return true;
		}
		s = *p;
	}
	*p = s;
	return false;
}

/* "a , b,,c" -> "a,b,c" (heap). */
static char *list_normalise(const char *v)
{
	char *s = malloc(strlen(v) + 1), *w = s;
	struct kstr it;

	if (!s)
		return NULL;
	while (conf_list_next(&v, &it)) {
		if (w != s)
			*w++ = ',';
		memcpy(w, it.p, (size_t)it.len);
		w += it.len;
	}
	*w = '\0';
	return s;
}

/* Index of v in "a|b|c" (case-insensitive), or -1. */
static int enum_index(const char *values, const char *v)
{
	size_t vn = strlen(v);
	int i = 0;

	for (const char *p = values; *p; i++) {
		size_t n = strcspn(p, "|");

		if (n == vn && !strncasecmp(p, v, n))
			return i;
		p += n + (p[n] == '|');
	}
	return -1;
}

static void range_text(const struct conf_def *d, char *buf, size_t n)
{
	int64_t tmin = d->type == CONF_INT32 ? INT32_MIN : INT64_MIN;
	int64_t tmax = d->type == CONF_INT32 ? INT32_MAX : INT64_MAX;

	if (d->min <= tmin && d->max >= tmax)
		snprintf(buf, n, "an integer");
	else if (d->max >= tmax)
		snprintf(buf, n, "an integer of at least %" PRId64, d->min);
	else
		snprintf(buf, n, "an integer between %" PRId64 " and %" PRId64, d->min, d->max);
}

static int parse_int(const struct conf_def *d, const char *v, int64_t *out)
{
	int64_t tmin = d->type == CONF_INT32 ? INT32_MIN : INT64_MIN;
	int64_t tmax = d->type == CONF_INT32 ? INT32_MAX : INT64_MAX;
	char *end;
	long long x;

	if (!*v || isspace((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || x < tmin || x > tmax || x < d->min || x > d->max)
		return -EINVAL;
	*out = x;
	return 0;
}

static int bad_value(const struct conf_def *d, const char *v, char *err, size_t errlen)
{
	char what[160];

	switch (d->type) {
	case CONF_BOOL:
		snprintf(what, sizeof(what), "true or false");
		break;
	case CONF_INT32:
	case CONF_INT64:
		range_text(d, what, sizeof(what));
		break;
	case CONF_ENUM: {
		size_t w = (size_t)snprintf(what, sizeof(what), "one of ");

		for (const char *p = d->values; *p && w + 3 < sizeof(what); p++) {
			if (*p == '|') {
				what[w++] = ',';
				what[w++] = ' ';
			} else {
				what[w++] = *p;
			}
		}
		what[w] = '\0';
		break;
	}
	default:
		snprintf(what, sizeof(what), "a string");
		break;
	}
	snprintf(err, errlen, "invalid value '%s' for '%s': expected %s", v, d->name, what);
	return -EINVAL;
}

/* Parses v (already trimmed) for d and stores it; obj unchanged on error. */
static int store(const struct conf_def *d, void *obj, const char *v, char *err, size_t errlen)
{
	void *f = field(obj, d);
	int64_t x = 0;
	char *s = NULL;
	int e;

	switch (d->type) {
	case CONF_BOOL:
		if (!strcasecmp(v, "true"))
			*(bool *)f = true;
		else if (!strcasecmp(v, "false"))
			*(bool *)f = false;
		else
			return bad_value(d, v, err, errlen);
		return 0;
	case CONF_INT32:
	case CONF_INT64:
		if (parse_int(d, v, &x))
			return bad_value(d, v, err, errlen);
		if (d->type == CONF_INT32)
			*(int32_t *)f = (int32_t)x;
		else
			*(int64_t *)f = x;
		return 0;
	case CONF_ENUM:
		e = enum_index(d->values, v);
		if (e < 0)
			return bad_value(d, v, err, errlen);
		*(int *)f = e;
		return 0;
	case CONF_STRING:
		s = strdup(v);
		break;
	case CONF_LIST:
		s = list_normalise(v);
		break;
	}
	if (!s)
		return -ENOMEM;
	free(*(char **)f);
	*(char **)f = s;
	return 0;
}

static int store_default(const struct conf_def *d, void *obj)
{
	void *f = field(obj, d);
	char err[256];
	int rc;

	if (!d->dflt) {
		switch (d->type) {
		case CONF_INT32:
			*(int32_t *)f = CONF_UNSET32;
			break;
		case CONF_INT64:
			*(int64_t *)f = CONF_UNSET64;
			break;
		case CONF_STRING:
		case CONF_LIST:
			free(*(char **)f);
			*(char **)f = NULL;
			break;
		case CONF_BOOL:
			*(bool *)f = false;
			break;
		case CONF_ENUM:
			*(int *)f = 0;
			break;
		}
		return 0;
	}
	rc = store(d, obj, d->dflt, err, sizeof(err));
	/* A default outside its own range is a bug in the table. */
	if (rc == -EINVAL) {
		fprintf(stderr, "conf: bad default for '%s': %s\n", d->name, err);
		abort();
	}
	return rc;
}

int conf_defaults(const struct conf_table *t, void *obj)
{
	bool *set = set_flags(t, obj);

	for (size_t i = 0; i < t->ndefs; i++) {
		if (is_str(t->defs[i].type))
			*(char **)field(obj, &t->defs[i]) = NULL;
		if (store_default(&t->defs[i], obj))
			return -ENOMEM;
	}
	if (set)
		memset(set, 0, t->ndefs * sizeof(*set));
	return 0;
}

void conf_release(const struct conf_table *t, void *obj)
{
	for (size_t i = 0; i < t->ndefs; i++)
		if (is_str(t->defs[i].type)) {
			char **p = field(obj, &t->defs[i]);

			free(*p);
			*p = NULL;
		}
}

int conf_copy(const struct conf_table *t, void *dst, const void *src)
{
	bool *dset = set_flags(t, dst);

	for (size_t i = 0; i < t->ndefs; i++) {
		const struct conf_def *d = &t->defs[i];
		size_t sz = d->type == CONF_BOOL    ? sizeof(bool)
			    : d->type == CONF_INT32 ? sizeof(int32_t)
			    : d->type == CONF_INT64 ? sizeof(int64_t)
			    : d->type == CONF_ENUM  ? sizeof(int)
						    : sizeof(char *);

		if (is_str(d->type)) {
			const char *s = *(char *const *)cfield(src, d);

			*(char **)field(dst, d) = s ? strdup(s) : NULL;
			if (s && !*(char **)field(dst, d))
				return -ENOMEM;
		} else {
			memcpy(field(dst, d), cfield(src, d), sz);
		}
	}
	if (dset)
		memcpy(dset, (const char *)src + t->set_offset, t->ndefs * sizeof(*dset));
	return 0;
}

int conf_set(const struct conf_table *t, void *obj, const char *key, const char *value, char *err, size_t errlen)
{
	int i = conf_index(t, key);
	bool *set = set_flags(t, obj);
	char *v;
	int rc;

	if (i < 0 && t->other) {
		v = dup_trim(value, strlen(value));
		rc = v ? t->other(obj, key, v, err, errlen) : -ENOMEM;
		free(v);
		v = NULL;
		if (rc != -ENOENT)
			return rc;
	}
	if (i < 0) {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -ENOENT;
	}
	v = dup_trim(value, strlen(value));
	if (!v)
		return -ENOMEM;
	rc = store(&t->defs[i], obj, v, err, errlen);
	if (!rc && set)
		set[i] = true;
	free(v);
	v = NULL;
	return rc;
}

int conf_unset(const struct conf_table *t, void *obj, const char *key)
{
	int i = conf_index(t, key);
	bool *set = set_flags(t, obj);

	if (i < 0)
		return -ENOENT;
	if (set)
		set[i] = false;
	return store_default(&t->defs[i], obj);
}

int conf_apply(const struct conf_table *t, void *obj, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char *key;
	int rc;

	if (!eq) {
		snprintf(err, errlen, "expected key=value, got '%s'", kv);
		return -EINVAL;
	}
	key = dup_trim(kv, (size_t)(eq - kv));
	if (!key)
		return -ENOMEM;
	rc = conf_set(t, obj, key, eq + 1, err, errlen);
	free(key);
	key = NULL;
	return rc;
}

/* ---- Java properties ---- */

static void put_utf8(char **w, unsigned cp)
{
	char *o = *w;

	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | (cp >> 6));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xe0 | (cp >> 12));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	*w = o;
}

/* Unescapes [p, p+n) into a new string (never longer than the input). */
static char *unescape(const char *p, size_t n)
{
	char *s = malloc(n + 1), *w = s;
	const char *end = p + n;

	if (!s)
		return NULL;
	while (p < end) {
		char c = *p++;

		if (c != '\\' || p == end) {
			*w++ = c;
			continue;
		}
		c = *p++;
		switch (c) {
		case 't':
			*w++ = '\t';
			break;
		case 'n':
			*w++ = '\n';
			break;
		case 'r':
			*w++ = '\r';
			break;
		case 'f':
			*w++ = '\f';
			break;
		case 'u':
			if (end - p >= 4 && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]) &&
			    isxdigit((unsigned char)p[2]) && isxdigit((unsigned char)p[3])) {
				char hex[5] = { p[0], p[1], p[2], p[3], 0 };

				put_utf8(&w, (unsigned)strtoul(hex, NULL, 16));
				p += 4;
				break;
			}
			/* "\u" without four hex digits is "u" */
			__attribute__((fallthrough));
		default:
			*w++ = c;
			break;
		}
	}
	*w = '\0';
	return s;
}

/* Splits one logical line into key and value and applies it. */
static int load_entry(const struct conf_table *t, void *obj, const char *line, size_t n, char *err, size_t errlen)
{
	size_t k = 0, v;
	char *key = NULL, *val = NULL;
	int rc = -ENOMEM;

	while (k < n && !strchr("=:" WS, line[k]))
		k += line[k] == '\\' && k + 1 < n ? 2 : 1;
	v = k;
	while (v < n && strchr(WS, line[v]))
		v++;
	if (v < n && (line[v] == '=' || line[v] == ':'))
		v++;
	while (v < n && strchr(WS, line[v]))
		v++;
	key = unescape(line, k);
	val = unescape(line + v, n - v);
	if (key && val)
		rc = conf_set(t, obj, key, val, err, errlen);
	free(key);
	key = NULL;
	free(val);
	val = NULL;
	return rc;
}

/* Appends [p, p+n) to the growable logical-line buffer. */
static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*len + n + 1) * 2;
		char *nb = realloc(*buf, c);

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	return 0;
}

int conf_load_text(const struct conf_table *t, void *obj, const char *text, size_t len, const char *name, char *err,
		   size_t errlen)
{
	const char *p = text, *end = text + len;
	char *buf = NULL, msg[512];
	size_t blen = 0, cap = 0;
	int lineno = 0, start_line = 0, rc = 0;
	bool cont = false;

	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		size_t n, bs = 0;

		lineno++;
		while (p < le && strchr(WS, *p))
			p++;
		n = (size_t)(le - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (!cont) {
			start_line = lineno;
			blen = 0;
			if (!n || *p == '#' || *p == '!')
				goto next;
		}
		while (bs < n && p[n - 1 - bs] == '\\')
			bs++;
		cont = bs & 1;
		rc = append(&buf, &blen, &cap, p, n - (cont ? 1 : 0));
		if (rc || cont)
			goto next;
		rc = load_entry(t, obj, buf, blen, msg, sizeof(msg));
		if (rc && rc != -ENOMEM) {
			snprintf(err, errlen, "%s:%d: %s", name, start_line, msg);
			rc = -EINVAL;
		}
	next:
		p = nl ? nl + 1 : end;
	}
	if (!rc && cont && blen) {
		rc = load_entry(t, obj, buf, blen, msg, sizeof(msg));
		if (rc && rc != -ENOMEM) {
			snprintf(err, errlen, "%s:%d: %s", name, start_line, msg);
			rc = -EINVAL;
		}
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", name);
	free(buf);
	buf = NULL;
	return rc;
}

int conf_load_file(const struct conf_table *t, void *obj, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	for (;;) {
		size_t got;

		if (len + 4096 > cap) {
			char *nt = realloc(text, cap = (cap + 4096) * 2);

			if (!nt) {
				rc = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				goto out_free;
			}
			text = nt;
		}
		got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto out_free;
	}
	rc = conf_load_text(t, obj, text, len, path, err, errlen);
out_free:
	free(text);
	text = NULL;
	fclose(f);
	return rc;
}

/* ---- reading back ---- */

int conf_get_def(const struct conf_def *d, const void *obj, char *buf, size_t n)
{
	const void *f = cfield(obj, d);

	switch (d->type) {
	case CONF_BOOL:
		snprintf(buf, n, "%s", *(const bool *)f ? "true" : "false");
		return 0;
	case CONF_INT32:
		if (*(const int32_t *)f == CONF_UNSET32)
			break;
		snprintf(buf, n, "%" PRId32, *(const int32_t *)f);
		return 0;
	case CONF_INT64:
		if (*(const int64_t *)f == CONF_UNSET64)
			break;
		snprintf(buf, n, "%" PRId64, *(const int64_t *)f);
		return 0;
	case CONF_ENUM: {
		const char *p = d->values;

		for (int i = *(const int *)f; i > 0 && *p; i--)
			p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
		snprintf(buf, n, "%.*s", (int)strcspn(p, "|"), p);
		return 0;
	}
	case CONF_STRING:
	case CONF_LIST:
		if (!*(char *const *)f)
			break;
		snprintf(buf, n, "%s", *(char *const *)f);
		return 0;
	}
	if (n)
		buf[0] = '\0';
	return 1;
}

int conf_get(const struct conf_table *t, const void *obj, const char *key, char *buf, size_t n)
{
	const struct conf_def *d = conf_find(t, key);

	if (!d) {
		if (n)
			buf[0] = '\0';
		return -ENOENT;
	}
	return conf_get_def(d, obj, buf, n);
}

bool conf_is_set(const struct conf_table *t, const void *obj, const char *key)
{
	int i = conf_index(t, key);

	return t->has_set && i >= 0 && ((const bool *)((const char *)obj + t->set_offset))[i];
}

/* ---- markdown ---- */

/* Writes s with '|' escaped, as table cells require. */
static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

static void md_default(FILE *f, const struct conf_def *d)
{
	if (!d->dflt)
		fputs("*null*", f);
	else if (!*d->dflt)
		fputs("\"\"", f);
	else {
		fputc('`', f);
		md_cell(f, d->dflt);
		fputc('`', f);
	}
}

static void md_range(FILE *f, const struct conf_def *d)
{
	int64_t tmin = d->type == CONF_INT32 ? INT32_MIN : INT64_MIN;
	int64_t tmax = d->type == CONF_INT32 ? INT32_MAX : INT64_MAX;

	if (d->type == CONF_ENUM) {
		for (const char *p = d->values; *p;) {
			size_t n = strcspn(p, "|");

			fprintf(f, "%s`%.*s`", p == d->values ? "" : ", ", (int)n, p);
			p += n + (p[n] == '|');
		}
	} else if (d->type == CONF_INT32 || d->type == CONF_INT64) {
		if (d->min <= tmin && d->max >= tmax)
			fputs("any", f);
		else if (d->max >= tmax)
			fprintf(f, "&ge; %" PRId64, d->min);
		else
			fprintf(f, "%" PRId64 " &hellip; %" PRId64, d->min, d->max);
	}
}

int conf_write_doc(const struct conf_table *t, FILE *f)
{
	fputs("| Name | Type | Default | Valid values | Dynamic | Description |\n", f);
	fputs("|---|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < t->ndefs; i++) {
		const struct conf_def *d = &t->defs[i];

		fprintf(f, "| `%s` | %s | ", d->name, conf_type_name(d->type));
		md_default(f, d);
		fputs(" | ", f);
		md_range(f, d);
		fprintf(f, " | %s | ", d->dynamic ? "yes" : "no");
		md_cell(f, d->doc ? d->doc : "");
		fputs(" |\n", f);
	}
	return ferror(f) ? -EIO : 0;
}
