/*
 * scram_store.c - the SCRAM credential store and its file (scram_store.h).
 * A small array searched linearly: users are counted in tens or hundreds,
 * and a lookup happens once per authentication.
 */
#include "sec/scram_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/durable.h"
#include "util/log.h"

#define SCRAM_STORE_MAGIC "# gregor scram credentials v1"

struct scram_user {
	char *name;
	bool has[3]; /* by enum scram_mech */
	struct scram_cred cred[3];
};

struct scram_store {
	char *dir; /* NULL: memory only */
	struct scram_user *users;
	int n, cap;
};

static struct scram_user *scram_store_find(const struct scram_store *st, const char *user)
{
	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->users[i].name, user))
			return &st->users[i];
	return NULL;
}

int scram_store_get(const struct scram_store *st, enum scram_mech m, const char *user, struct scram_cred *out)
{
	const struct scram_user *u = st ? scram_store_find(st, user) : NULL;

	if (!u || !u->has[m])
		return -ENOENT;
	*out = u->cred[m];
	return 0;
}

/* Removes users[i] (its last credential went). */
static void scram_store_drop(struct scram_store *st, int i)
{
	free(st->users[i].name);
	st->users[i] = st->users[--st->n];
}

int scram_store_set(struct scram_store *st, const char *user, enum scram_mech m, const struct scram_cred *cred)
{
	struct scram_user *u = scram_store_find(st, user);

	if (!u && !cred)
		return 0;
	if (!u) {
		if (st->n == st->cap) {
			int cap = st->cap ? 2 * st->cap : 16;
			struct scram_user *nu = realloc(st->users, (size_t)cap * sizeof(*nu));

			if (!nu)
				return -ENOMEM;
			st->users = nu;
			st->cap = cap;
		}
		u = &st->users[st->n];
		memset(u, 0, sizeof(*u));
		u->name = strdup(user);
		if (!u->name)
			return -ENOMEM;
		st->n++;
	}
	u->has[m] = cred != NULL;
	if (cred)
		u->cred[m] = *cred;
	if (!u->has[SCRAM_SHA_256] && !u->has[SCRAM_SHA_512])
		scram_store_drop(st, (int)(u - st->users));
	return 0;
}

int scram_store_count(const struct scram_store *st)
{
	return st ? st->n : 0;
}

const char *scram_store_user(const struct scram_store *st, int i)
{
	return st && i >= 0 && i < st->n ? st->users[i].name : NULL;
}

/* One line of the file: "<mech> <credential> <user>\n".  0 or -EINVAL. */
static int scram_store_parse_line(struct scram_store *st, char *line)
{
	char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL, *nl = strchr(line, '\n');
	struct scram_cred cred;
	enum scram_mech m;

	if (!sp1 || !sp2 || !nl || nl == sp2 + 1 || nl - sp2 - 1 > SCRAM_USER_MAX)
		return -EINVAL;
	*nl = 0;
	m = scram_mech_of(line, (size_t)(sp1 - line));
	if (!m || scram_cred_parse(m, sp1 + 1, (size_t)(sp2 - sp1 - 1), &cred))
		return -EINVAL;
	return scram_store_set(st, sp2 + 1, m, &cred);
}

static int scram_store_load(struct scram_store *st)
{
	char path[4096], line[SCRAM_CRED_TEXT_MAX + SCRAM_USER_MAX + 32];
	FILE *f;
	int rc = 0;

	if (snprintf(path, sizeof(path), "%s/%s", st->dir, SCRAM_STORE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (!fgets(line, sizeof(line), f) || strcmp(line, SCRAM_STORE_MAGIC "\n"))
		rc = -EINVAL;
	while (!rc && fgets(line, sizeof(line), f))
		rc = scram_store_parse_line(st, line);
	fclose(f);
	if (rc)
		log_error("%s: not a SCRAM credential file this broker wrote", path);
	return rc;
}

int scram_store_open(const char *dir, struct scram_store **out)
{
	struct scram_store *st = calloc(1, sizeof(*st));
	int rc;

	if (!st || (dir && !(st->dir = strdup(dir)))) {
		free(st);
		return -ENOMEM;
	}
	rc = dir ? scram_store_load(st) : 0;
	if (rc) {
		scram_store_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

void scram_store_close(struct scram_store *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->n; i++)
		free(st->users[i].name);
	free(st->users);
	free(st->dir);
	free(st);
}

int scram_store_save(struct scram_store *st)
{
	char path[4096], text[SCRAM_CRED_TEXT_MAX];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if (!st->dir)
		return 0;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs(SCRAM_STORE_MAGIC "\n", f);
	for (int i = 0; i < st->n; i++)
		for (int m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++)
			if (st->users[i].has[m]) {
				scram_cred_format(m, &st->users[i].cred[m], text, sizeof(text));
				fprintf(f, "%s %s %s\n", scram_mech_name(m), text, st->users[i].name);
			}
	rc = fclose(f) ? -ENOMEM : 0;
	snprintf(path, sizeof(path), "%s/%s", st->dir, SCRAM_STORE_FILE);
	if (!rc)
		rc = durable_replace_path(path, buf, len);
	free(buf);
	if (rc)
		log_error("%s: cannot save the SCRAM credentials: %s", path, strerror(-rc));
	return rc;
}
