/*
 * conf.h - a table-driven settings engine (knows nothing of Kafka).
 *
 * A module describes its settings once, as an array of struct conf_def
 * (name, type, offsetof(field), range, default, dynamic, doc), and every
 * other use is derived from that table: defaults, the Java-properties file
 * parser, one-off "key=value" overrides, reading a value back as a string
 * (DescribeConfigs), and the markdown reference in docs/.  This follows
 * librdkafka's rd_kafka_properties[] and Redis' static_configs[].
 *
 * Storage per type, at def->offset inside the caller's struct:
 *   CONF_BOOL    bool
 *   CONF_INT32   int32_t   plain decimal integer (Kafka style: no units)
 *   CONF_INT64   int64_t
 *   CONF_STRING  char *    heap copy, NULL when the value is null
 *   CONF_LIST    char *    heap copy of a comma separated list, items
 *                          trimmed ("a, b" is stored as "a,b"); walk it
 *                          with conf_list_next()
 *   CONF_ENUM    int       index into def->values ("a|b|c": a=0, b=1, c=2),
 *                          matched case-insensitively, reported as spelt
 *                          in the table
 *
 * A NULL default means "null / not set": strings and lists are NULL,
 * integers hold CONF_UNSET32 / CONF_UNSET64 (Kafka's nullable longs such
 * as log.retention.ms).  An unset value cannot be assigned from text.
 *
 * Optionally the table records which keys were set explicitly (by a file,
 * an override or conf_set): set_offset names a bool[ndefs] array inside
 * the caller's struct, indexed like defs.
 */
#ifndef GREGOR_UTIL_CONF_H
#define GREGOR_UTIL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/buf.h"

enum conf_type { CONF_BOOL, CONF_INT32, CONF_INT64, CONF_STRING, CONF_LIST, CONF_ENUM };

#define CONF_UNSET32 INT32_MIN
#define CONF_UNSET64 INT64_MIN

struct conf_def {
	const char *name; /* the key, e.g. "num.partitions" */
	enum conf_type type;
	size_t offset;      /* offsetof(struct ..., field) */
	int64_t min, max;   /* inclusive range for CONF_INT32/INT64 */
	const char *dflt;   /* default as text; NULL = null/unset */
	bool dynamic;       /* may change without a restart */
	const char *doc;    /* one or two sentences, markdown allowed */
	const char *values; /* CONF_ENUM only: allowed values "a|b|c" */
};

struct conf_table {
	const struct conf_def *defs;
	size_t ndefs;
	size_t set_offset; /* offsetof a bool[ndefs] in the struct ... */
	bool has_set;      /* ... used only when this is true */
	/*
	 * Keys not in defs: NULL, or a function that takes them (0), refuses
	 * them (-ENOENT: "unknown setting") or fails (-errno, message in err).
	 */
	int (*other)(void *obj, const char *key, const char *value, char *err, size_t errlen);
};

/* Index of name in the table (exact match), or -1. */
int conf_index(const struct conf_table *t, const char *name);
const struct conf_def *conf_find(const struct conf_table *t, const char *name);

/*
 * Writes every default into obj and clears the set flags.  obj must not
 * hold heap strings yet (zeroed or released).  Returns 0 or -ENOMEM.
 */
int conf_defaults(const struct conf_table *t, void *obj);
/* Frees every string of obj and NULLs it; integers are left alone. */
void conf_release(const struct conf_table *t, void *obj);
/* Deep copy of src into dst (dst must not hold strings). 0 or -ENOMEM. */
int conf_copy(const struct conf_table *t, void *dst, const void *src);

/*
 * Parses value for key and stores it in obj, marking it set.  Leading and
 * trailing whitespace of value is ignored.  On failure obj is unchanged and
 * err holds one line without a final period:
 *   -ENOENT  unknown setting 'foo.bar'
 *   -EINVAL  invalid value 'x' for 'num.partitions': expected an integer
 *            between 1 and 1000000
 *   -ENOMEM
 */
int conf_set(const struct conf_table *t, void *obj, const char *key, const char *value, char *err, size_t errlen);
/* Restores key's default and clears its set flag.  0 or -ENOENT/-ENOMEM. */
int conf_unset(const struct conf_table *t, void *obj, const char *key);
/* "key=value" (as given to --override); -EINVAL if there is no '='. */
int conf_apply(const struct conf_table *t, void *obj, const char *kv, char *err, size_t errlen);

/*
 * Reads a Java-properties file into obj: "key=value", "key: value" or
 * "key value"; '#' or '!' starts a comment line; blank lines ignored;
 * whitespace around key and value trimmed; a line ending in an odd number
 * of backslashes continues on the next (leading whitespace of the next line
 * dropped); escapes \t \n \r \f \\ \uXXXX, any other "\c" is c.
 * Errors name the file and the line the entry starts on:
 *   "server.properties:12: unknown setting 'foo.bar'"
 * Entries before a bad one stay applied.  Returns 0; -EINVAL for the first
 * unknown key or bad value; -ENOMEM; or -errno if the file cannot be read
 * ("path: No such file or directory", -ENOENT).
 */
int conf_load_file(const struct conf_table *t, void *obj, const char *path, char *err, size_t errlen);
/* Same for text already in memory; name is used in messages. */
int conf_load_text(const struct conf_table *t, void *obj, const char *text, size_t len, const char *name, char *err,
		   size_t errlen);

/*
 * Formats key's current value into buf (always NUL-terminated, truncated to
 * n-1 bytes).  Booleans are "true"/"false", enums their table spelling.
 * Returns 0, 1 if the value is null/unset (buf is ""), or -ENOENT.
 */
int conf_get(const struct conf_table *t, const void *obj, const char *key, char *buf, size_t n);
int conf_get_def(const struct conf_def *d, const void *obj, char *buf, size_t n);
/* Whether key was set explicitly (false if the table does not track it). */
bool conf_is_set(const struct conf_table *t, const void *obj, const char *key);

/*
 * Iterates a CONF_LIST value: *p starts at the string; each call stores the
 * next non-empty trimmed item in out (a view into the string) and returns
 * true, false at the end.  A NULL string is an empty list.
 */
bool conf_list_next(const char **p, struct kstr *out);

/* Writes the table as markdown (name, type, default, range, dynamic, doc). */
int conf_write_doc(const struct conf_table *t, FILE *f);

/* Human-readable type name: "boolean", "int", "long", "string", "list", "enum". */
const char *conf_type_name(enum conf_type type);

#endif
