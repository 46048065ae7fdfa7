/*
 * quota.c - the client quota settings (quota.h): which entities have
 * which quotas, Kafka's precedence among them, and their file.
 *
 * The file, <first log dir>/client-quotas, is text, one setting a line
 * after a version line:
 *
 *   gregor-client-quotas 1
 *   <user> <client> <key> <value>
 *
 * where a component is "-" (not part of the entity), "d" (<default>) or
 * "n" followed by the name in hex (any byte is allowed in a client id).
 * It is small and replaced whole on each change (durable_replace()).
 */
#include "broker/quota.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/durable.h"
#include "util/log.h"

#define QUOTA_FILE "client-quotas"
#define QUOTA_MAGIC "gregor-client-quotas 1"

struct quota_entry {
	struct quota_entity e;
	double vals[QUOTA_KINDS];
	bool has[QUOTA_KINDS];
};

static const char *const quota_keys[QUOTA_KINDS] = { "producer_byte_rate", "consumer_byte_rate", "request_percentage" };
static struct quota_entry *quota_entries;
static int quota_n, quota_cap;
static char quota_path[PATH_MAX];

const char *quota_key(int kind)
{
	return kind >= 0 && kind < QUOTA_KINDS ? quota_keys[kind] : "";
}

int quota_kind_of(const char *key, int len)
{
	for (int k = 0; k < QUOTA_KINDS; k++)
		if (len >= 0 && (size_t)len == strlen(quota_keys[k]) && !memcmp(key, quota_keys[k], (size_t)len))
			return k;
	return -1;
}

static bool quota_entity_eq(const struct quota_entity *a, const struct quota_entity *b)
{
	return a->user == b->user && a->client == b->client &&
	       (a->user != QUOTA_NAME || !strcmp(a->user_name, b->user_name)) &&
	       (a->client != QUOTA_NAME || !strcmp(a->client_name, b->client_name));
}

static struct quota_entry *quota_find(const struct quota_entity *e)
{
	for (int i = 0; i < quota_n; i++)
		if (quota_entity_eq(&quota_entries[i].e, e))
			return &quota_entries[i];
	return NULL;
}

bool quota_has(const struct quota_entity *e)
{
	return quota_find(e) != NULL;
}

void quota_set(const struct quota_entity *e, int kind, double value, bool remove)
{
	struct quota_entry *q = quota_find(e);

	if (!q && remove)
		return;
	if (!q) {
		if (quota_n == quota_cap) {
			int cap = quota_cap ? quota_cap * 2 : 16;
			struct quota_entry *n = realloc(quota_entries, (size_t)cap * sizeof(*n));

			if (!n) {
				log_error("out of memory storing a client quota");
				abort();
			}
			quota_entries = n;
			quota_cap = cap;
		}
		q = &quota_entries[quota_n++];
		memset(q, 0, sizeof(*q));
		q->e = *e;
	}
	q->has[kind] = !remove;
	q->vals[kind] = remove ? 0 : value;
	if (!q->has[0] && !q->has[1] && !q->has[2])
		*q = quota_entries[--quota_n];
}

struct quota_backup {
	struct quota_entry *entries;
	int n;
};

struct quota_backup *quota_backup(void)
{
	struct quota_backup *b = calloc(1, sizeof(*b));

	if (b)
		b->entries = malloc((size_t)(quota_n ? quota_n : 1) * sizeof(*b->entries)); /* kept when put back */
	if (!b || !b->entries) {
		log_error("out of memory copying the client quotas");
		abort();
	}
	if (quota_n)
		memcpy(b->entries, quota_entries, (size_t)quota_n * sizeof(*b->entries));
	b->n = quota_n;
	return b;
}

void quota_restore(struct quota_backup *b, bool put_back)
{
	if (put_back) {
		free(quota_entries);
		quota_entries = b->entries;
		quota_n = quota_cap = b->n;
	} else {
		free(b->entries);
	}
	free(b);
}

int quota_count(void)
{
	return quota_n;
}

void quota_get(int i, struct quota_entity *e, double vals[QUOTA_KINDS], bool has[QUOTA_KINDS])
{
	*e = quota_entries[i].e;
	memcpy(vals, quota_entries[i].vals, sizeof(quota_entries[i].vals));
	memcpy(has, quota_entries[i].has, sizeof(quota_entries[i].has));
}

/* ---- precedence ---- */

static const struct quota_entry *quota_lookup(uint8_t u, const char *user, uint8_t c, const char *client)
{
	struct quota_entity e = { .user = u, .client = c };

	if (u == QUOTA_NAME)
		snprintf(e.user_name, sizeof(e.user_name), "%s", user);
	if (c == QUOTA_NAME)
		snprintf(e.client_name, sizeof(e.client_name), "%s", client);
	return quota_find(&e);
}

bool quota_resolve(int kind, const char *user, const char *client_id, double *bound, struct quota_entity *e)
{
	static const uint8_t order[8][2] = {
		{ QUOTA_NAME, QUOTA_NAME },    { QUOTA_NAME, QUOTA_DEFAULT },    { QUOTA_NAME, QUOTA_ABSENT },
		{ QUOTA_DEFAULT, QUOTA_NAME }, { QUOTA_DEFAULT, QUOTA_DEFAULT }, { QUOTA_DEFAULT, QUOTA_ABSENT },
		{ QUOTA_ABSENT, QUOTA_NAME },  { QUOTA_ABSENT, QUOTA_DEFAULT },
	};

	for (int i = 0; i < 8 && quota_n; i++) {
		const struct quota_entry *q = quota_lookup(order[i][0], user, order[i][1], client_id);

		if (!q || !q->has[kind])
			continue;
		*bound = q->vals[kind];
		memset(e, 0, sizeof(*e));
		e->user = q->e.user == QUOTA_ABSENT ? QUOTA_ABSENT : QUOTA_NAME;
		e->client = q->e.client == QUOTA_ABSENT ? QUOTA_ABSENT : QUOTA_NAME;
		snprintf(e->user_name, sizeof(e->user_name), "%s", e->user ? user : "");
		snprintf(e->client_name, sizeof(e->client_name), "%s", e->client ? client_id : "");
		return true;
	}
	return false;
}

/* ---- the file ---- */

static void quota_put_comp(FILE *f, uint8_t comp, const char *name)
{
	if (comp == QUOTA_ABSENT)
		fputs("- ", f);
	else if (comp == QUOTA_DEFAULT)
		fputs("d ", f);
	else {
		fputc('n', f);
		for (const unsigned char *p = (const unsigned char *)name; *p; p++)
			fprintf(f, "%02x", *p);
		fputc(' ', f);
	}
}

int quota_save(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		return -ENOMEM;
	fprintf(f, "%s\n", QUOTA_MAGIC);
	for (int i = 0; i < quota_n; i++)
		for (int k = 0; k < QUOTA_KINDS; k++) {
			if (!quota_entries[i].has[k])
				continue;
			quota_put_comp(f, quota_entries[i].e.user, quota_entries[i].e.user_name);
			quota_put_comp(f, quota_entries[i].e.client, quota_entries[i].e.client_name);
			fprintf(f, "%s %.17g\n", quota_keys[k], quota_entries[i].vals[k]);
		}
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	rc = durable_replace_path(quota_path, buf, len);
	free(buf);
	return rc;
}

/* One component token into comp/name; false if malformed. */
static bool quota_parse_comp(const char *tok, uint8_t *comp, char *name)
{
	size_t n = strlen(tok);

	if (!strcmp(tok, "-") || !strcmp(tok, "d")) {
		*comp = tok[0] == '-' ? QUOTA_ABSENT : QUOTA_DEFAULT;
		return true;
	}
	if (tok[0] != 'n' || (n - 1) % 2 || (n - 1) / 2 > QUOTA_NAME_MAX)
		return false;
	for (size_t i = 0; i < (n - 1) / 2; i++) {
		unsigned v;

		if (sscanf(tok + 1 + 2 * i, "%2x", &v) != 1 || !v)
			return false;
		name[i] = (char)v;
	}
	name[(n - 1) / 2] = '\0';
	*comp = QUOTA_NAME;
	return true;
}

static bool quota_parse_line(char *line)
{
	char *save = NULL, *u = strtok_r(line, " \n", &save), *c = strtok_r(NULL, " \n", &save);
	char *key = strtok_r(NULL, " \n", &save), *val = strtok_r(NULL, " \n", &save), *end;
	struct quota_entity e;
	double v;
	int kind;

	memset(&e, 0, sizeof(e));
	if (!val || !quota_parse_comp(u, &e.user, e.user_name) || !quota_parse_comp(c, &e.client, e.client_name))
		return false;
	kind = quota_kind_of(key, (int)strlen(key));
	v = strtod(val, &end);
	if (kind < 0 || *end || !(v > 0) || quota_count() >= QUOTA_ENTRIES_MAX)
		return false;
	quota_set(&e, kind, v, false);
	return true;
}

int quota_open(const char *dir)
{
	char line[2 * QUOTA_NAME_MAX * 2 + 128];
	FILE *f;
	int rc = 0;

	quota_close();
	if (snprintf(quota_path, sizeof(quota_path), "%s/%s", dir, QUOTA_FILE) >= (int)sizeof(quota_path))
		return -ENAMETOOLONG;
	f = fopen(quota_path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (!fgets(line, sizeof(line), f) || strcmp(line, QUOTA_MAGIC "\n"))
		rc = -EINVAL;
	while (!rc && fgets(line, sizeof(line), f))
		if (!quota_parse_line(line))
			rc = -EINVAL;
	fclose(f);
	if (rc) {
		log_error("%s: not a client quota file this broker wrote", quota_path);
		quota_close();
	}
	return rc;
}

void quota_close(void)
{
	free(quota_entries);
	quota_entries = NULL;
	quota_n = quota_cap = 0;
}
