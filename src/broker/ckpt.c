/*
 * ckpt.c - the per-partition checkpoint files (see ckpt.h).
 *
 * The map is open addressing over a power-of-two table of entry indexes,
 * at most half full, keyed by FNV-1a of the topic name mixed with the
 * partition.  The writer is one thread and a one-slot mailbox (the newest
 * snapshot), like util/dirdel.c's thread with a queue of one.
 */
#include "broker/ckpt.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/durable.h"
#include "util/log.h"

#define CKPT_COUNT_MAX 10000000 /* lines a file may claim before it is called malformed */

struct ckpt_entry {
	char *topic;
	int32_t partition;
	int64_t offset;
};

struct ckpt_map {
	struct ckpt_entry *v;
	int n;
	int *slots; /* index into v, -1 empty */
	uint32_t mask;
};

static uint32_t ckpt_hash(const char *topic, int32_t partition)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)topic; *p; p++)
		h = (h ^ *p) * 16777619u;
	h ^= (uint32_t)partition * 0x9e3779b9u;
	return h ^ (h >> 15);
}

static int ckpt_map_index(struct ckpt_map *m)
{
	uint32_t cap = 16;

	while (cap < (uint32_t)m->n * 2)
		cap *= 2;
	m->slots = malloc(cap * sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	memset(m->slots, 0xff, cap * sizeof(*m->slots));
	m->mask = cap - 1;
	for (int i = 0; i < m->n; i++) {
		uint32_t h = ckpt_hash(m->v[i].topic, m->v[i].partition) & m->mask;

		while (m->slots[h] >= 0)
			h = (h + 1) & m->mask;
		m->slots[h] = i; /* a duplicate line: the first one is found */
	}
	return 0;
}

/* Reads the lines after the header into m->v (count of them at most). */
static int ckpt_map_read(struct ckpt_map *m, FILE *f, int count)
{
	char topic[256];
	long long off;
	int p;

	m->v = calloc((size_t)count + 1, sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	while (m->n < count && fscanf(f, "%255s %d %lld", topic, &p, &off) == 3) {
		m->v[m->n].topic = strdup(topic);
		if (!m->v[m->n].topic)
			return -ENOMEM;
		m->v[m->n].partition = p;
		m->v[m->n].offset = off;
		m->n++;
	}
	return 0;
}

int ckpt_map_load(const char *dir, const char *name, struct ckpt_map **out)
{
	char path[PATH_MAX];
	struct ckpt_map *m;
	int version, count, rc;
	FILE *f;

	*out = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	if (fscanf(f, "%d %d", &version, &count) != 2 || version != 0 || count < 0 || count > CKPT_COUNT_MAX) {
		fclose(f);
		log_warn("'%s' is malformed: it is ignored", path);
		return -EBADMSG;
	}
	m = calloc(1, sizeof(*m));
	rc = m ? ckpt_map_read(m, f, count) : -ENOMEM;
	fclose(f);
	if (!rc)
		rc = ckpt_map_index(m);
	if (rc) {
		ckpt_map_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int64_t ckpt_map_find(const struct ckpt_map *m, const char *topic, int32_t partition)
{
	uint32_t h;

	if (!m)
		return -1;
	for (h = ckpt_hash(topic, partition) & m->mask; m->slots[h] >= 0; h = (h + 1) & m->mask) {
		const struct ckpt_entry *e = &m->v[m->slots[h]];

		if (e->partition == partition && !strcmp(e->topic, topic))
			return e->offset;
	}
	return -1;
}

void ckpt_map_free(struct ckpt_map *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n; i++)
		free(m->v[i].topic);
	free(m->v);
	free(m->slots);
	free(m);
}

/* ---- snapshots ---- */

struct ckpt_part {
	size_t topic; /* offset of the NUL-terminated name in names */
	int32_t partition;
	int64_t recovery_point, clean_offset;
};

struct ckpt_snap {
	struct wr names;
	size_t topic; /* the current topic's offset in names */
	struct ckpt_part *v;
	int n, cap;
	int err; /* sticky */
};

struct ckpt_snap *ckpt_snap_new(void)
{
	struct ckpt_snap *s = calloc(1, sizeof(*s));

	if (s)
		wr_init(&s->names);
	return s;
}

int ckpt_snap_topic(struct ckpt_snap *s, const char *topic)
{
	s->topic = s->names.len;
	wr_raw(&s->names, topic, strlen(topic) + 1);
	if (s->names.err && !s->err)
		s->err = -ENOMEM;
	return s->err;
}

int ckpt_snap_part(struct ckpt_snap *s, int32_t p, int64_t recovery_point, int64_t clean_offset)
{
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 64;
		struct ckpt_part *nv = realloc(s->v, (size_t)cap * sizeof(*nv));

		if (!nv) {
			s->err = -ENOMEM;
			return s->err;
		}
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = (struct ckpt_part){ s->topic, p, recovery_point, clean_offset };
	return s->err;
}

/* Formats and replaces one file: recovery points (cleaner false) or cleaner offsets. */
static int ckpt_snap_write_one(const struct ckpt_snap *s, const char *dir, const char *name, bool cleaner)
{
	struct wr lines, txt;
	char path[PATH_MAX], line[300];
	int count = 0, err;

	wr_init(&lines);
	wr_init(&txt);
	for (int i = 0; i < s->n; i++) {
		const struct ckpt_part *e = &s->v[i];
		int64_t v = cleaner ? e->clean_offset : e->recovery_point;

		if (v < 0)
			continue;
		wr_raw(&lines, line,
		       (size_t)snprintf(line, sizeof(line), "%s %d %lld\n", (const char *)s->names.buf + e->topic,
					e->partition, (long long)v));
		count++;
	}
	wr_raw(&txt, line, (size_t)snprintf(line, sizeof(line), "0\n%d\n", count));
	wr_raw(&txt, lines.buf, lines.len);
	err = txt.err ? txt.err : lines.err;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!err)
		err = durable_replace_path(path, (const char *)txt.buf, txt.len);
	wr_release(&lines);
	wr_release(&txt);
	return err;
}

int ckpt_snap_write(const struct ckpt_snap *s, const char *dir)
{
	int err = s->err;

	if (!err)
		err = ckpt_snap_write_one(s, dir, CKPT_RECOVERY_FILE, false);
	if (!err)
		err = ckpt_snap_write_one(s, dir, CKPT_CLEANER_FILE, true);
	return err;
}

void ckpt_snap_free(struct ckpt_snap *s)
{
	if (!s)
		return;
	wr_release(&s->names);
	free(s->v);
	free(s);
}

/* ---- the writer thread ---- */

struct ckpt_writer {
	char *dir;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ckpt_snap *next; /* (mu) the newest snapshot not written yet */
	bool stop;              /* (mu) */
};

static void *ckpt_writer_main(void *arg)
{
	struct ckpt_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct ckpt_snap *s;
		int rc;

		while (!w->next && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		s = w->next;
		w->next = NULL;
		pthread_mutex_unlock(&w->mu);
		rc = durable_failed() ? 0 : ckpt_snap_write(s, w->dir);
		if (rc)
			log_warn("cannot write the checkpoints in '%s': %s", w->dir, strerror(-rc));
		ckpt_snap_free(s);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int ckpt_writer_start(const char *dir, struct ckpt_writer **out)
{
	struct ckpt_writer *w = calloc(1, sizeof(*w));
	int rc;

	if (!w || !(w->dir = strdup(dir))) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	rc = pthread_create(&w->thread, NULL, ckpt_writer_main, w);
	if (rc) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w->dir);
		free(w);
		return -rc;
	}
	*out = w;
	return 0;
}

void ckpt_writer_submit(struct ckpt_writer *w, struct ckpt_snap *s)
{
	struct ckpt_snap *old;

	pthread_mutex_lock(&w->mu);
	old = w->next;
	w->next = s;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	ckpt_snap_free(old); /* superseded before it was written */
}

void ckpt_writer_stop(struct ckpt_writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	ckpt_snap_free(w->next);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->dir);
	free(w);
}
