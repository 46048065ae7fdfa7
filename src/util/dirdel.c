/*
 * dirdel.c - background removal of renamed-away directories and files (see
 * dirdel.h).
 *
 * A mutex-protected list of heap strings, each with the monotonic time it
 * is due, and one thread that sleeps on a condition variable (on the
 * monotonic clock) until the earliest item is due, something is queued or
 * it is told to stop.  The list is short (one item per deleted partition
 * or segment file waiting out its delay), so finding the earliest is a
 * scan.
 */
#include "util/dirdel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

struct dirdel_item {
	struct dirdel_item *next;
	int64_t due_ms; /* clock_mono_ms() from which it may be removed */
	bool file;      /* a regular file (dirdel_add_file), else a directory */
	char path[];    /* NUL-terminated */
};

struct dirdel {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct dirdel_item *head;  /* (mu) in the order queued */
	struct dirdel_item **tail; /* (mu) the last item's next link (&head when empty): queuing is O(1) */
	bool stop;                 /* (mu) */
};

int dirdel_remove(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return -errno;
	while ((de = readdir(dir)))
		if (de->d_type != DT_DIR && unlinkat(dirfd(dir), de->d_name, 0) < 0 && !rc)
			rc = -errno;
	closedir(dir);
	if (rmdir(path) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* The link pointing at the earliest-due item (mu held, list not empty). */
static struct dirdel_item **dirdel_earliest(struct dirdel *d)
{
	struct dirdel_item **best = &d->head;

	for (struct dirdel_item **pp = &d->head; *pp; pp = &(*pp)->next)
		if ((*pp)->due_ms < (*best)->due_ms)
			best = pp;
	return best;
}

/* Sleeps on cond until due_ms (monotonic), a dirdel_add or dirdel_stop (mu held). */
static void dirdel_wait_until(struct dirdel *d, int64_t due_ms)
{
	struct timespec ts;

	due_ms -= clock_mono_ms();
	if (due_ms > 3600 * 1000)
		due_ms = 3600 * 1000; /* a far delay: wake once an hour to look again */
	ts = clock_mono_deadline(due_ms);
	pthread_cond_timedwait(&d->cond, &d->mu, &ts);
}

/* Unlinks and returns the next due item, waiting for it; NULL once stopped (mu held). */
static struct dirdel_item *dirdel_take(struct dirdel *d)
{
	for (;;) {
		struct dirdel_item **pp, *it;

		while (!d->head && !d->stop)
			pthread_cond_wait(&d->cond, &d->mu);
		if (d->stop)
			return NULL;
		pp = dirdel_earliest(d);
		it = *pp;
		if (it->due_ms > clock_mono_ms()) {
			dirdel_wait_until(d, it->due_ms);
			continue;
		}
		*pp = it->next;
		if (d->tail == &it->next)
			d->tail = pp;
		return it;
	}
}

static void *dirdel_main(void *arg)
{
	struct dirdel *d = arg;
	struct dirdel_item *it;

	pthread_mutex_lock(&d->mu);
	while ((it = dirdel_take(d))) {
		int rc;

		pthread_mutex_unlock(&d->mu);
		rc = it->file ? (unlink(it->path) < 0 && errno != ENOENT ? -errno : 0) : dirdel_remove(it->path);
		if (rc)
			log_warn("cannot remove '%s': %s", it->path, strerror(-rc));
		else if (it->file)
			log_debug(LOGC_LOG, "log", "removed '%s'", it->path);
		else
			log_info("removed '%s'", it->path);
		free(it);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int dirdel_start(struct dirdel **out)
{
	struct dirdel *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	d->tail = &d->head;
	pthread_mutex_init(&d->mu, NULL);
	clock_cond_init(&d->cond); /* delays unaffected by wall-clock steps */
	rc = pthread_create(&d->thread, NULL, dirdel_main, d);
	if (rc) {
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->mu);
		free(d);
		return -rc;
	}
	*out = d;
	return 0;
}

void dirdel_stop(struct dirdel *d)
{
	struct dirdel_item *it;

	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	while ((it = d->head)) {
		d->head = it->next;
		free(it);
	}
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

/* Queues path, a directory or (file) a regular file, for removal delay_ms from now. */
static int dirdel_queue(struct dirdel *d, const char *path, int64_t delay_ms, bool file)
{
	size_t n = strlen(path) + 1;
	struct dirdel_item *it = malloc(sizeof(*it) + n);

	if (!it)
		return -ENOMEM;
	it->next = NULL;
	it->due_ms = delay_ms > 0 && delay_ms < INT64_MAX / 2 ? clock_mono_ms() + delay_ms
		     : delay_ms > 0                           ? INT64_MAX
							      : 0;
	it->file = file;
	memcpy(it->path, path, n);
	pthread_mutex_lock(&d->mu);
	*d->tail = it;
	d->tail = &it->next;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

int dirdel_add(struct dirdel *d, const char *path, int64_t delay_ms)
{
	return dirdel_queue(d, path, delay_ms, false);
}

int dirdel_add_file(struct dirdel *d, const char *path, int64_t delay_ms)
{
	return dirdel_queue(d, path, delay_ms, true);
}
