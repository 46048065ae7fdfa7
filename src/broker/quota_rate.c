/*
 * quota_rate.c - the rate each quota is measured by, and the throttle time
 * of a client over its quota (quota.h).
 *
 * As Kafka's sampled Rate: quota.window.num (11) windows of
 * quota.window.size.seconds (1 s); a value goes into the current window; a
 * window older than all of them together is forgotten.  The rate is the
 * windows' sum over the time they span, counted as at least
 * (num - 1) whole windows so a new client is not judged on a few ms.  Over
 * the bound, the throttle time is what brings the rate back to it:
 * (rate - bound) / bound x that span.
 *
 * One rate per (kind, user, client-id) as quota_resolve() names it; rates
 * unused for an hour are dropped (Kafka expires its quota sensors so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quota.h"
#include "util/log.h"

#define QUOTA_WINDOW_NUM 11   /* quota.window.num */
#define QUOTA_WINDOW_MS 1000  /* quota.window.size.seconds */
#define QUOTA_IDLE_MS 3600000 /* a rate unused this long is dropped */

struct quota_window {
	int64_t start_ms;
	double value;
	double throttle_ms;
};

struct quota_sensor {
	int kind;
	struct quota_entity e;
	struct quota_window w[QUOTA_WINDOW_NUM];
	int cur;
	int64_t used_ms;
};

static struct quota_sensor *sensors;
static int nsensors, capsensors;

static struct quota_sensor *quota_sensor(int kind, const struct quota_entity *e, int64_t now_ms)
{
	for (int i = 0; i < nsensors; i++) {
		struct quota_sensor *s = &sensors[i];

		if (s->kind == kind && !strcmp(s->e.user_name, e->user_name) &&
		    !strcmp(s->e.client_name, e->client_name))
			return s;
		if (now_ms - s->used_ms > QUOTA_IDLE_MS)
			sensors[i--] = sensors[--nsensors];
	}
	if (nsensors == capsensors) {
		int cap = capsensors ? capsensors * 2 : 16;
		struct quota_sensor *n = realloc(sensors, (size_t)cap * sizeof(*n));

		if (!n) {
			log_error("out of memory measuring a client quota");
			abort();
		}
		sensors = n;
		capsensors = cap;
	}
	struct quota_sensor *s = &sensors[nsensors++];

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->e = *e;
	for (int i = 0; i < QUOTA_WINDOW_NUM; i++)
		s->w[i].start_ms = now_ms - (int64_t)QUOTA_WINDOW_NUM * QUOTA_WINDOW_MS * 2;
	s->w[0].start_ms = now_ms;
	return s;
}

/* Moves to a new window when the current one is full; forgets obsolete windows. */
static void quota_advance(struct quota_sensor *s, int64_t now_ms)
{
	if (now_ms - s->w[s->cur].start_ms >= QUOTA_WINDOW_MS) {
		s->cur = (s->cur + 1) % QUOTA_WINDOW_NUM;
		s->w[s->cur] = (struct quota_window){ .start_ms = now_ms };
	}
	for (int i = 0; i < QUOTA_WINDOW_NUM; i++)
		if (now_ms - s->w[i].start_ms >= (int64_t)QUOTA_WINDOW_NUM * QUOTA_WINDOW_MS && i != s->cur)
			s->w[i] = (struct quota_window){ .start_ms = now_ms -
								     (int64_t)QUOTA_WINDOW_NUM * QUOTA_WINDOW_MS * 2 };
	s->used_ms = now_ms;
}

/* The span the windows cover, in ms, at least (num - 1) windows; *sum and *thr their totals. */
static double quota_span(const struct quota_sensor *s, int64_t now_ms, double *sum, double *thr)
{
	int64_t oldest = now_ms;
	int64_t span, full;

	*sum = *thr = 0;
	for (int i = 0; i < QUOTA_WINDOW_NUM; i++) {
		if (now_ms - s->w[i].start_ms >= (int64_t)QUOTA_WINDOW_NUM * QUOTA_WINDOW_MS)
			continue;
		*sum += s->w[i].value;
		*thr += s->w[i].throttle_ms;
		if (s->w[i].start_ms < oldest)
			oldest = s->w[i].start_ms;
	}
	span = now_ms - oldest;
	full = span / QUOTA_WINDOW_MS;
	if (full < QUOTA_WINDOW_NUM - 1)
		span += (QUOTA_WINDOW_NUM - 1 - full) * QUOTA_WINDOW_MS;
	return (double)span;
}

int64_t quota_record(int kind, const struct quota_entity *e, double value, double bound, int64_t now_ms)
{
	struct quota_sensor *s = quota_sensor(kind, e, now_ms);
	double sum, thr, span, rate;

	quota_advance(s, now_ms);
	s->w[s->cur].value += value;
	span = quota_span(s, now_ms, &sum, &thr);
	rate = sum * 1000.0 / span;
	if (bound <= 0 || rate <= bound)
		return 0;
	return (int64_t)((rate - bound) / bound * span);
}

void quota_note_throttle(int kind, const struct quota_entity *e, int64_t throttle_ms)
{
	for (int i = 0; i < nsensors; i++)
		if (sensors[i].kind == kind && !strcmp(sensors[i].e.user_name, e->user_name) &&
		    !strcmp(sensors[i].e.client_name, e->client_name)) {
			sensors[i].w[sensors[i].cur].throttle_ms += (double)throttle_ms;
			return;
		}
}

int quota_metric_count(void)
{
	return nsensors;
}

void quota_metric_get(int i, int64_t now_ms, struct quota_metric *m)
{
	const struct quota_sensor *s = &sensors[i];
	double sum, thr, span = quota_span(s, now_ms, &sum, &thr);

	m->kind = s->kind;
	snprintf(m->user, sizeof(m->user), "%s", s->e.user_name);
	snprintf(m->client_id, sizeof(m->client_id), "%s", s->e.client_name);
	m->rate = sum * 1000.0 / span;
	m->throttle_ms = thr / (span / QUOTA_WINDOW_MS);
}
