/*
 * creator.c - the worker thread that makes topics and partitions in
 * rounds (see creator.h).
 *
 * Three FIFO lists of builds under one mutex: queued (added, waiting for
 * a round), the round under way (the worker's, no lock needed while it
 * runs) and finished (waiting for the loop to end them).  The worker
 * sleeps on a condition variable until creator_kick() or creator_stop().
 */
#include "broker/creator.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util/clock.h"
#include "util/log.h"

/* A FIFO list of builds linked by next. */
struct build_list {
	struct reg_build *head, *tail;
};

struct creator {
	struct loop *loop;
	struct registry *reg;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct build_list queued;   /* (mu) added, not yet taken */
	struct build_list finished; /* (mu) rounds done, not yet ended */
	bool kick;                  /* (mu) queued has builds the worker was not told of */
	bool stop;                  /* (mu) */
	bool added;                 /* (loop thread) creator_add since the last creator_kick */
};

static void build_list_append(struct build_list *l, struct build_list *more)
{
	if (!more->head)
		return;
	if (l->tail)
		l->tail->next = more->head;
	else
		l->head = more->head;
	l->tail = more->tail;
	more->head = more->tail = NULL;
}

static void *creator_main(void *arg)
{
	struct creator *c = arg;
	struct build_list round;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		int n = 0;
		int64_t t0;

		while (!(c->kick && c->queued.head) && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		round = c->queued;
		c->queued.head = c->queued.tail = NULL;
		c->kick = false;
		pthread_mutex_unlock(&c->mu);
		t0 = clock_mono_ms();
		registry_build_round(c->reg, round.head);
		for (struct reg_build *b = round.head; b; b = b->next)
			n += b->to - b->from;
		log_info("made %d partition(s) in %lld ms", n, (long long)(clock_mono_ms() - t0));
		pthread_mutex_lock(&c->mu);
		build_list_append(&c->finished, &round);
		loop_wake(c->loop);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int creator_start(struct loop *loop, struct registry *reg, struct creator **out)
{
	struct creator *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->reg = reg;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	rc = pthread_create(&c->thread, NULL, creator_main, c);
	if (rc) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return -rc;
	}
	*out = c;
	return 0;
}

void creator_add(struct creator *c, struct reg_build *b)
{
	struct build_list one = { b, b };

	b->next = NULL;
	pthread_mutex_lock(&c->mu);
	build_list_append(&c->queued, &one);
	pthread_mutex_unlock(&c->mu);
	c->added = true;
}

int creator_create(struct creator *c, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
		   struct reg_build **out)
{
	int err = registry_create_begin(c->reg, name, nparts, tcfg, out);

	if (!err)
		creator_add(c, *out);
	return err;
}

int creator_grow(struct creator *c, struct topic *t, int32_t total, struct reg_build **out)
{
	int err = registry_grow_begin(c->reg, t, total, out);

	if (!err)
		creator_add(c, *out);
	return err;
}

void creator_kick(struct creator *c)
{
	if (!c->added)
		return; /* most loop passes: no lock taken */
	c->added = false;
	pthread_mutex_lock(&c->mu);
	if (c->queued.head && !c->kick) {
		c->kick = true;
		pthread_cond_signal(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
}

/* Ends the builds of list l in order, telling their waiters. */
static void creator_end_all(struct creator *c, struct reg_build *head)
{
	while (head) {
		struct reg_build *b = head;
		void (*done)(void *waiter, int32_t slot, int err) = b->done;
		void *waiter = b->waiter;
		int32_t slot = b->slot;
		int err;

		head = b->next;
		err = registry_build_end(c->reg, b); /* frees b */
		if (done)
			done(waiter, slot, err);
	}
}

void creator_on_wake(struct creator *c)
{
	struct build_list l;

	pthread_mutex_lock(&c->mu);
	l = c->finished;
	c->finished.head = c->finished.tail = NULL;
	pthread_mutex_unlock(&c->mu);
	creator_end_all(c, l.head);
}

void creator_stop(struct creator *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	creator_on_wake(c); /* the rounds done */
	for (struct reg_build *b = c->queued.head; b; b = b->next)
		b->err = -ECANCELED; /* never started: nothing of them on disk */
	creator_end_all(c, c->queued.head);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
