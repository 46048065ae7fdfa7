/*
 * syncer.c - the fsync group-commit thread (see syncer.h).
 *
 * A failed sync is final (docs/durability.md): on Linux the pages whose
 * writeback failed may be dropped from the page cache and a later fsync of
 * the same file can succeed without them (PostgreSQL's "fsyncgate").  So
 * after the first failure no round syncs anything again: every later
 * round fails at once, the recovery point stays where it was, and the
 * broker takes the log directory offline (on_fail).  A sync that failed
 * outside the rounds (a snapshot, a checkpoint, a directory: util/durable.h)
 * breaks every later round the same way.
 */
#include "broker/syncer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "broker/stats.h"
#include "log/partition.h"
#include "util/clock.h"
#include "util/durable.h"
#include "util/log.h"

struct syncer {
	struct loop *loop;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* work arrived, or stop */
	pthread_cond_t idle_cv; /* a round finished */
	struct part **dirty;    /* protected by mu */
	int ndirty, dirty_cap;
	struct part **busy; /* being synced by the thread */
	int nbusy;
	struct part **synced; /* synced by rounds the loop has not looked at yet (mu); syncer_take_synced */
	int nsynced;
	int next_busy;         /* busy[next_busy..] are not collected yet: appends to them join this round (mu) */
	uint64_t next_round;   /* ticket handed to new work */
	uint64_t done_round;   /* read by the loop without the lock */
	uint64_t failed_round; /* first round with a failed sync (0 = none): all later ones fail too */
	bool stop;
	bool kick;                 /* dirty work marked since the last syncer_kick (mu; also read without it) */
	struct syncer_stats stats; /* mu */
	int64_t kick_us;           /* when syncer_kick last signalled (mu) */
	int64_t done_us;           /* when done_round was last published (mu) */
	uint64_t noted_round;      /* the last round syncer_note_wake saw (mu) */
	syncer_fail_fn *on_fail;   /* called once, from this thread, at the first failure */
	void *fail_arg;
};

/* What part_sync_mark() holds for a partition (under mu). */
enum syncer_mark {
	SYNCER_IDLE,    /* in no list */
	SYNCER_DIRTY,   /* in dirty: the next round takes it */
	SYNCER_PENDING, /* in busy[next_busy..]: the running round has yet to collect it */
};

/* Sets the mark of parts[0..n) that still hold `from` to `to` (mu held). */
static void syncer_mark_all(struct part **parts, int n, int from, int to)
{
	for (int i = 0; i < n; i++)
		if (*part_sync_mark(parts[i]) == from)
			*part_sync_mark(parts[i]) = to;
}

static bool syncer_has(struct part **v, int n, struct part *part)
{
	for (int i = 0; i < n; i++)
		if (v[i] == part)
			return true;
	return false;
}

/* Syncs every partition of a round; once one failed, nothing more is synced. */
static int syncer_round(struct syncer *s, struct part **parts, int n, bool broken, uint64_t *bytes)
{
	int failed = broken;

	for (int i = 0; i < n && !failed; i++) {
		int err;

		pthread_mutex_lock(&s->mu);
		s->next_busy = i + 1; /* from here on part_sync may have collected parts[i] */
		*part_sync_mark(parts[i]) = SYNCER_IDLE;
		pthread_mutex_unlock(&s->mu);
		uint64_t before = part_synced_bytes(parts[i]);

		err = part_sync(parts[i]);
		*bytes += part_synced_bytes(parts[i]) - before;

		if (err) {
			log_error("fdatasync failed: %s: nothing more is synced or acknowledged", strerror(-err));
			failed = 1;
			if (s->on_fail)
				s->on_fail(s->fail_arg, err);
		}
	}
	return failed;
}

/* Moves the finished round's partitions to the synced list (mu held). */
static void syncer_keep_synced(struct syncer *s)
{
	struct part **v = s->nsynced ? realloc(s->synced, (size_t)(s->nsynced + s->nbusy) * sizeof(*v)) : NULL;

	if (!s->nsynced) {
		free(s->synced);
		s->synced = s->busy;
		s->nsynced = s->nbusy;
	} else if (v) {
		memcpy(v + s->nsynced, s->busy, (size_t)s->nbusy * sizeof(*v));
		s->synced = v;
		s->nsynced += s->nbusy;
		free(s->busy);
	} else {
		abort(); /* as syncer_want: the loop cannot go on without knowing what moved */
	}
	s->busy = NULL;
	s->nbusy = 0;
}

/* Adds the finished round to the stats (mu held). */
static void syncer_count(struct syncer *s, int64_t us)
{
	s->stats.rounds++;
	s->stats.part_syncs += (uint64_t)s->nbusy;
	s->stats.busy_us += us > 0 ? (uint64_t)us : 0;
	if ((uint64_t)s->nbusy > s->stats.max_parts)
		s->stats.max_parts = (uint64_t)s->nbusy;
}

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		uint64_t round, bytes;
		int64_t t0;
		int failed;
		bool broken, slept = false;

		while (!s->ndirty && !s->stop) {
			pthread_cond_wait(&s->cv, &s->mu);
			slept = true;
		}
		if (!s->ndirty && s->stop)
			break;
		if (slept && !s->stop) { /* the loop's kick to this thread running: a wake-up's cost */
			s->stats.wakes++;
			s->stats.wake_us += (uint64_t)(clock_mono_us() - s->kick_us);
		}
		s->busy = s->dirty;
		s->nbusy = s->ndirty;
		s->next_busy = 0;
		s->dirty = NULL;
		s->ndirty = s->dirty_cap = 0;
		round = s->next_round++;
		syncer_mark_all(s->busy, s->nbusy, SYNCER_DIRTY, SYNCER_PENDING);
		broken = s->failed_round != 0 || durable_failed(); /* a sync outside the rounds failed */
		pthread_mutex_unlock(&s->mu);
		t0 = clock_mono_us();
		bytes = 0;
		failed = syncer_round(s, s->busy, s->nbusy, broken, &bytes);
		pthread_mutex_lock(&s->mu);
		syncer_count(s, clock_mono_us() - t0);
		stats_sync_round(clock_mono_us() - t0, (uint64_t)s->nbusy, bytes);
		syncer_mark_all(s->busy, s->nbusy, SYNCER_PENDING, SYNCER_IDLE); /* a failed round stops early */
		syncer_keep_synced(s);
		if (failed && !s->failed_round)
			s->failed_round = round;
		s->done_us = clock_mono_us();
		__atomic_store_n(&s->done_round, round, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&s->idle_cv);
		loop_wake(s->loop);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int syncer_start(struct loop *loop, syncer_fail_fn *on_fail, void *fail_arg, struct syncer **out)
{
	struct syncer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->on_fail = on_fail;
	s->fail_arg = fail_arg;
	s->next_round = 1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->idle_cv, NULL);
	err = pthread_create(&s->thread, NULL, syncer_main, s);
	if (err) {
		free(s);
		return -err;
	}
	*out = s;
	return 0;
}

void syncer_stop(struct syncer *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	free(s->dirty);
	free(s->synced);
	free(s);
}

uint64_t syncer_want(struct syncer *s, struct part *part)
{
	uint64_t ticket;

	pthread_mutex_lock(&s->mu);
	if (*part_sync_mark(part) == SYNCER_PENDING) {
		ticket = s->next_round - 1; /* the running round has yet to collect part: it covers this append */
		pthread_mutex_unlock(&s->mu);
		return ticket;
	}
	if (*part_sync_mark(part) == SYNCER_IDLE) {
		if (s->ndirty == s->dirty_cap) {
			int cap = s->dirty_cap ? s->dirty_cap * 2 : 16;
			struct part **nd = realloc(s->dirty, (size_t)cap * sizeof(*nd));

			if (!nd)
				abort();
			s->dirty = nd;
			s->dirty_cap = cap;
		}
		s->dirty[s->ndirty++] = part;
		*part_sync_mark(part) = SYNCER_DIRTY;
		__atomic_store_n(&s->kick, true, __ATOMIC_RELAXED); /* signalled by syncer_kick */
	}
	ticket = s->next_round;
	pthread_mutex_unlock(&s->mu);
	return ticket;
}

void syncer_kick(struct syncer *s)
{
	if (!__atomic_load_n(&s->kick, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&s->mu);
	s->kick = false;
	s->kick_us = clock_mono_us();
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void syncer_stats(struct syncer *s, struct syncer_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->stats;
	pthread_mutex_unlock(&s->mu);
}

void syncer_note_wake(struct syncer *s)
{
	pthread_mutex_lock(&s->mu);
	if (s->done_round > s->noted_round) {
		s->noted_round = s->done_round;
		s->stats.handbacks++;
		s->stats.handback_us += (uint64_t)(clock_mono_us() - s->done_us);
	}
	pthread_mutex_unlock(&s->mu);
}

uint64_t syncer_done(struct syncer *s)
{
	return __atomic_load_n(&s->done_round, __ATOMIC_ACQUIRE);
}

bool syncer_failed(struct syncer *s, uint64_t ticket)
{
	bool failed;

	pthread_mutex_lock(&s->mu);
	failed = s->failed_round && ticket >= s->failed_round;
	pthread_mutex_unlock(&s->mu);
	return failed;
}

void syncer_forget(struct syncer *s, struct part *part)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->ndirty; i++)
		if (s->dirty[i] == part)
			s->dirty[i--] = s->dirty[--s->ndirty];
	if (*part_sync_mark(part) == SYNCER_DIRTY)
		*part_sync_mark(part) = SYNCER_IDLE;
	for (int i = 0; i < s->nsynced; i++)
		if (s->synced[i] == part)
			s->synced[i--] = s->synced[--s->nsynced];
	while (syncer_has(s->busy, s->nbusy, part))
		pthread_cond_wait(&s->idle_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

void syncer_take_synced(struct syncer *s, void (*fn)(const struct part *part))
{
	struct part **v;
	int n;

	pthread_mutex_lock(&s->mu);
	v = s->synced;
	n = s->nsynced;
	s->synced = NULL;
	s->nsynced = 0;
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < n; i++)
		fn(v[i]);
	free(v);
}
