/*
 * console_job.c - the web console's asks crossing from the HTTP thread to
 * the event loop and back (see console.h).
 *
 * A job holds one ask and, once answered, its status and JSON document
 * (built on the loop, turned into text and freed on the HTTP thread).  It
 * has two references: the HTTP thread's (dropped when it has the answer
 * or gives up waiting) and the loop's (dropped when it answers).  Jobs
 * wait in a FIFO under console_mu until the loop's next wake-up; the
 * number waiting is bounded (CONSOLE_QUEUED_MAX, then 503).  console.c
 * hands each one to the file that answers its kind of ask.
 */
#include "broker/console.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "net/loop.h"
#include "util/clock.h"

#define CONSOLE_QUEUED_MAX 64

struct console_job {
	struct console_job *next; /* the queue (console_mu) */
	struct console_ask ask;
	unsigned status;
	json_t *doc; /* the answer, owned; turned into text by the HTTP thread */
	/* or a copy of loop state the HTTP thread turns into the answer (console_job_answer_snap) */
	void *snap;
	console_render_fn *render;
	console_release_fn *release;
	bool done; /* under console_mu */
	int refs;  /* under console_mu */
};

static pthread_mutex_t console_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t console_cv;
static bool console_cv_ready;
static struct broker *console_broker; /* NULL: no loop to ask (mu) */
static struct console_job *console_head, **console_tail = &console_head;
static int console_queued;

static void console_job_put(struct console_job *j)
{
	bool last;

	pthread_mutex_lock(&console_mu);
	last = --j->refs == 0;
	pthread_mutex_unlock(&console_mu);
	if (last) {
		json_decref(j->doc);
		if (j->snap)
			j->release(j->snap);
		free(j);
	}
}

void console_attach(struct broker *b)
{
	pthread_mutex_lock(&console_mu);
	if (!console_cv_ready) {
		clock_cond_init(&console_cv);
		console_cv_ready = true;
	}
	console_broker = b;
	pthread_mutex_unlock(&console_mu);
}

struct console_job *console_jobs_take(bool detach)
{
	struct console_job *head;

	pthread_mutex_lock(&console_mu);
	if (detach)
		console_broker = NULL;
	head = console_head;
	console_head = NULL;
	console_tail = &console_head;
	console_queued = 0;
	pthread_mutex_unlock(&console_mu);
	return head;
}

void console_jobs_fail_all(void)
{
	struct console_job *head = console_jobs_take(true);

	while (head) {
		struct console_job *j = head;

		head = j->next;
		console_job_error(j, 503, "the broker is shutting down");
	}
}

void console_jobs_wake_all(void)
{
	pthread_mutex_lock(&console_mu);
	if (console_cv_ready)
		pthread_cond_broadcast(&console_cv);
	pthread_mutex_unlock(&console_mu);
}

struct console_job *console_jobs_next(struct console_job *j)
{
	return j->next;
}

bool console_grow(void **v, int32_t *cap, int32_t n, size_t size)
{
	int32_t want = *cap ? *cap * 2 : 64;
	void *p;

	if (n < *cap)
		return true;
	p = realloc(*v, (size_t)want * size);
	if (!p)
		return false;
	*v = p;
	*cap = want;
	return true;
}

const struct console_ask *console_job_ask(const struct console_job *j)
{
	return &j->ask;
}

void console_job_answer(struct console_job *j, unsigned status, json_t *body)
{
	pthread_mutex_lock(&console_mu);
	j->status = body ? status : 500;
	j->doc = body;
	j->done = true;
	pthread_cond_broadcast(&console_cv);
	pthread_mutex_unlock(&console_mu);
	console_job_put(j);
}

void console_job_answer_snap(struct console_job *j, unsigned status, void *snap, console_render_fn *render,
			     console_release_fn *release)
{
	pthread_mutex_lock(&console_mu);
	j->snap = snap;
	j->render = render;
	j->release = release;
	pthread_mutex_unlock(&console_mu);
	console_job_answer(j, status, snap ? json_null() : NULL);
}

void console_job_error(struct console_job *j, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	console_job_answer(j, status, json_pack("{ss}", "error", msg));
}

/* Queues j for the loop (taking a reference for it); false if there is no loop or the queue is full. */
static bool console_enqueue(struct console_job *j)
{
	if (!console_broker || console_queued >= CONSOLE_QUEUED_MAX)
		return false;
	j->refs++;
	*console_tail = j;
	console_tail = &j->next;
	console_queued++;
	loop_wake(console_broker->loop);
	return true;
}

int console_call(const struct console_ask *ask, unsigned *status, char **body)
{
	struct console_job *j = calloc(1, sizeof(*j));
	struct timespec until = clock_mono_deadline(CONSOLE_WAIT_MS);
	json_t *doc = NULL;
	void *snap = NULL;
	int rc = 0;

	if (!j)
		return -ENOMEM;
	j->ask = *ask;
	j->refs = 1;
	pthread_mutex_lock(&console_mu);
	if (!console_enqueue(j)) {
		rc = -ESHUTDOWN;
	} else {
		while (!j->done && console_broker)
			if (pthread_cond_timedwait(&console_cv, &console_mu, &until))
				break;
		if (j->done) {
			*status = j->status;
			doc = j->doc;
			j->doc = NULL;
			snap = j->snap;
			j->snap = NULL;
		} else {
			rc = console_broker ? -ETIMEDOUT : -ESHUTDOWN;
		}
	}
	pthread_mutex_unlock(&console_mu);
	if (snap) {
		json_decref(doc);
		doc = j->render(snap);
		j->release(snap);
	}
	console_job_put(j);
	if (!rc) {
		/* here, not on the loop: the text of every partition takes milliseconds */
		*body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		if (!*body) {
			*status = 500;
			*body = strdup("{\"error\":\"out of memory\"}");
		}
		rc = *body ? 0 : -ENOMEM;
	}
	return rc;
}
