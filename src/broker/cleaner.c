/*
 * cleaner.c - the log cleaner thread and its scheduling on the event loop
 * (cleaner.h).  One pass at a time: the loop plans it, the thread runs
 * it, the loop swaps its output in, the thread syncs the directory.
 */
#include "broker/cleaner.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "log/compact.h"
#include "log/partition.h"
#include "net/loop.h"
#include "proto/validate.h"
#include "util/clock.h"
#include "util/log.h"

/* Decompressed records of one batch a pass accepts at least (cleaner_inflate_max). */
#define CLEANER_MAX_RECORDS_BYTES (128u << 20)

struct cleaner {
	struct broker *b;
	struct clean_map *map; /* the thread's */
	double rate;           /* log.cleaner.io.max.bytes.per.second */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct compact_job *todo, *done, *finish; /* (mu) */
	bool stop;                                /* (mu) */
	volatile int cancel;                      /* the pass in progress should give up */
	struct compact_job *inflight;             /* loop thread: planned, not yet swapped */
	struct loop_timer timer;
};

/* ---- the thread ---- */

static void *cleaner_main(void *arg)
{
	struct cleaner *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct compact_job *job;

		if ((job = c->finish)) {
			c->finish = NULL;
			pthread_mutex_unlock(&c->mu);
			if (compact_finish(job))
				log_warn("cleaner: '%s': cannot sync the directory after a swap", job->dir);
			compact_free(job);
			pthread_mutex_lock(&c->mu);
		} else if ((job = c->todo)) {
			c->todo = NULL;
			pthread_mutex_unlock(&c->mu);
			compact_run(job, c->map, &c->cancel, c->rate);
			clean_map_clear(c->map); /* gives its pages back until the next pass */
			pthread_mutex_lock(&c->mu);
			c->done = job;
			loop_wake(c->b->loop);
		} else {
			pthread_cond_wait(&c->cv, &c->mu);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- choosing a log (loop thread) ---- */

/* What a batch of t may inflate to: what Produce accepted (validate.h), and never less than the floor. */
static size_t cleaner_inflate_max(const struct topic *t)
{
	size_t produce_max = VALIDATE_INFLATE_MAX(t->cfg.max_message_bytes);

	return produce_max > CLEANER_MAX_RECORDS_BYTES ? produce_max : CLEANER_MAX_RECORDS_BYTES;
}

static void cleaner_topic_cfg(const struct broker *b, const struct topic *t, struct compact_cfg *cc)
{
	const char *ratio = t->cfg.min_cleanable_dirty_ratio ? t->cfg.min_cleanable_dirty_ratio
							     : b->cfg.log_cleaner_min_cleanable_ratio;

	*cc = (struct compact_cfg){ .min_ratio = ratio ? strtod(ratio, NULL) : 0.5,
				    .min_lag_ms = t->cfg.min_compaction_lag_ms,
				    .max_lag_ms = t->cfg.max_compaction_lag_ms,
				    .delete_retention_ms = t->cfg.delete_retention_ms,
				    .max_records_bytes = cleaner_inflate_max(t) };
}

/* The compacted partitions and their descriptions. */
struct cleaner_cands {
	struct part **parts;
	struct compact_cfg *cfgs;
	struct cleanable_log *logs;
	struct cleanable_seg **segs;
	struct cleanable *m;
	int n, cap;
};

static void cleaner_cands_free(struct cleaner_cands *cs)
{
	for (int i = 0; i < cs->n; i++)
		free(cs->segs[i]);
	free(cs->parts);
	free(cs->cfgs);
	free(cs->logs);
	free(cs->segs);
	free(cs->m);
}

/* Forgets candidate i (the last one takes its place). */
static void cleaner_cands_drop(struct cleaner_cands *cs, int i)
{
	int last = --cs->n;

	free(cs->segs[i]);
	cs->parts[i] = cs->parts[last];
	cs->cfgs[i] = cs->cfgs[last];
	cs->logs[i] = cs->logs[last];
	cs->segs[i] = cs->segs[last];
}

static int cleaner_cands_grow(struct cleaner_cands *cs)
{
	int cap = cs->cap ? cs->cap * 2 : 16;
	void *p[5] = { realloc(cs->parts, (size_t)cap * sizeof(*cs->parts)),
		       realloc(cs->cfgs, (size_t)cap * sizeof(*cs->cfgs)),
		       realloc(cs->logs, (size_t)cap * sizeof(*cs->logs)),
		       realloc(cs->segs, (size_t)cap * sizeof(*cs->segs)),
		       realloc(cs->m, (size_t)cap * sizeof(*cs->m)) };

	cs->parts = p[0] ? p[0] : cs->parts;
	cs->cfgs = p[1] ? p[1] : cs->cfgs;
	cs->logs = p[2] ? p[2] : cs->logs;
	cs->segs = p[3] ? p[3] : cs->segs;
	cs->m = p[4] ? p[4] : cs->m;
	if (!p[0] || !p[1] || !p[2] || !p[3] || !p[4])
		return -ENOMEM;
	cs->cap = cap;
	return 0;
}

static int cleaner_collect(struct cleaner *c, struct cleaner_cands *cs)
{
	int nt;
	struct topic **ts = registry_topics(c->b->reg, &nt);

	for (int i = 0; i < nt; i++) {
		struct compact_cfg cc;

		if (ts[i]->cfg.cleanup_policy == CONFIG_CLEANUP_DELETE)
			continue;
		cleaner_topic_cfg(c->b, ts[i], &cc);
		for (int32_t p = 0; p < ts[i]->nparts; p++) {
			struct part *part = ts[i]->parts[p];

			if (!part || part_segment_count(part) < 2)
				continue;
			if (cs->n == cs->cap && cleaner_cands_grow(cs))
				return -ENOMEM;
			if (compact_describe(part, &cc, &cs->logs[cs->n], &cs->segs[cs->n]))
				continue;
			cs->parts[cs->n] = part;
			cs->cfgs[cs->n++] = cc;
		}
	}
	return 0;
}

/* The log to clean now: the dirtiest due one, else one whose kept tombstones expired.  -1: none. */
static int cleaner_choose(struct cleaner_cands *cs, int64_t now_ms)
{
	int i = cleanable_pick(cs->logs, cs->n, now_ms, cs->m);

	for (int k = 0; i < 0 && k < cs->n; k++)
		if (part_clean_due(cs->parts[k]) <= now_ms)
			i = k;
	return i;
}

/* Plans and hands over a pass if a log is due.  True if one started. */
static bool cleaner_schedule(struct cleaner *c)
{
	struct cleaner_cands cs = { 0 };
	int64_t now = clock_wall_ms();
	struct compact_job *job = NULL;
	int i;

	if (c->inflight || registry_dir_failed(c->b->reg))
		return c->inflight != NULL;
	if (cleaner_collect(c, &cs) == 0)
		while (!job && (i = cleaner_choose(&cs, now)) >= 0)
			if (!(job = compact_plan(cs.parts[i], &cs.cfgs[i], &cs.m[i], now)))
				cleaner_cands_drop(&cs, i); /* nothing sealed below its LSO: try the next */
	cleaner_cands_free(&cs);
	if (!job)
		return false;
	c->inflight = job;
	c->cancel = 0;
	pthread_mutex_lock(&c->mu);
	c->todo = job;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return true;
}

static void cleaner_tick(struct loop_timer *t)
{
	struct cleaner *c = (struct cleaner *)((char *)t - offsetof(struct cleaner, timer));

	if (!cleaner_schedule(c))
		loop_timer_set(c->b->loop, t, clock_mono_ms() + c->b->cfg.log_cleaner_backoff_ms);
}

/* ---- installing a pass (loop thread) ---- */

static void cleaner_report(const struct compact_job *job)
{
	log_info("cleaner: '%s': cleaned [%" PRId64 ", %" PRId64 ") in %d -> %d segment(s): read %" PRId64
		 " bytes, wrote %" PRId64 " bytes, dirty ratio %.3f, %" PRId64 " ms",
		 job->dir, job->m.first_dirty, job->covered_end, job->nout ? job->out[job->nout - 1].last + 1 : 0,
		 job->nout, job->bytes_read, job->bytes_written, job->m.ratio, job->run_ms);
}

void cleaner_on_wake(struct cleaner *c)
{
	struct compact_job *job;
	int rc;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	job = c->done;
	c->done = NULL;
	pthread_mutex_unlock(&c->mu);
	if (!job)
		return;
	c->inflight = NULL;
	if (!job->part) { /* forgotten meanwhile */
		compact_swap_discard(job);
		compact_free(job);
	} else if ((rc = compact_swap(job->part, job)) == 0) {
		cleaner_report(job);
		pthread_mutex_lock(&c->mu);
		c->finish = job;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
	} else {
		if (rc != -ESTALE && rc != -ECANCELED)
			log_error("cleaner: '%s': pass failed: %s%s", job->dir, strerror(-rc),
				  rc == -EBADMSG ? " (corrupt batch: the partition is not cleaned again until restart)"
						 : "");
		compact_free(job);
	}
	if (!cleaner_schedule(c))
		loop_timer_set(c->b->loop, &c->timer, clock_mono_ms() + c->b->cfg.log_cleaner_backoff_ms);
}

void cleaner_forget(struct cleaner *c, struct part *part)
{
	if (c && c->inflight && c->inflight->part == part) {
		c->inflight->part = NULL; /* dropped when it comes back */
		c->cancel = 1;
	}
}

/* ---- start and stop ---- */

int cleaner_start(struct broker *b, struct cleaner **out)
{
	struct cleaner *c;
	int rc;

	*out = NULL;
	if (!b->cfg.log_cleaner_enable)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->b = b;
	c->rate = strtod(b->cfg.log_cleaner_io_max_bytes_per_second, NULL);
	rc = clean_map_new((size_t)b->cfg.log_cleaner_dedupe_buffer_size, CLEAN_LOAD_FACTOR_DEFAULT, &c->map);
	if (rc) {
		free(c);
		return rc;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	rc = -pthread_create(&c->th, NULL, cleaner_main, c);
	if (rc) {
		clean_map_free(c->map);
		free(c);
		return rc;
	}
	loop_timer_init(&c->timer, cleaner_tick);
	loop_timer_set(b->loop, &c->timer, clock_mono_ms() + b->cfg.log_cleaner_backoff_ms);
	*out = c;
	return 0;
}

void cleaner_stop(struct cleaner *c)
{
	if (!c)
		return;
	loop_timer_cancel(c->b->loop, &c->timer);
	c->cancel = 1;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->th, NULL);
	/* a finished pass not yet swapped keeps its *.swap files: the next start completes it */
	compact_free(c->todo);
	compact_free(c->done);
	if (c->finish) {
		compact_finish(c->finish);
		compact_free(c->finish);
	}
	clean_map_free(c->map);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}
