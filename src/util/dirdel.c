/*
 * dirdel.c - background removal of renamed-away directories (see dirdel.h).
 *
 * A mutex-protected FIFO of heap strings and one thread that sleeps on a
 * condition variable until something is queued or it is told to stop.
 */
#include "util/dirdel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

struct dirdel_item {
	struct dirdel_item *next;
	char path[]; /* NUL-terminated */
};

struct dirdel {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct dirdel_item *head, *tail; /* (mu) */
	bool stop;                       /* (mu) */
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

static void *dirdel_main(void *arg)
{
	struct dirdel *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct dirdel_item *it;
		int rc;

		while (!d->head && !d->stop)
			pthread_cond_wait(&d->cond, &d->mu);
		if (d->stop)
			break;
		it = d->head;
		d->head = it->next;
		if (!d->head)
			d->tail = NULL;
		pthread_mutex_unlock(&d->mu);
		rc = dirdel_remove(it->path);
		if (rc)
			log_warn("cannot remove '%s': %s", it->path, strerror(-rc));
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
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cond, NULL);
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

int dirdel_add(struct dirdel *d, const char *path)
{
	size_t n = strlen(path) + 1;
	struct dirdel_item *it = malloc(sizeof(*it) + n);

	if (!it)
		return -ENOMEM;
	it->next = NULL;
	memcpy(it->path, path, n);
	pthread_mutex_lock(&d->mu);
	if (d->tail)
		d->tail->next = it;
	else
		d->head = it;
	d->tail = it;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->mu);
	return 0;
}
