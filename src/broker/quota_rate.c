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
 * unused for an hour are dropped (Kafka expires its quota sensors so), and
 * at most QUOTA_SENSORS_MAX are kept: past that, clients under no quota
 * are not measured and a client under one takes the least recently used
 * rate's place, so churning client ids cannot grow memory without bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/quota.h"
#include "util/log.h"

static int quota_window_num = 11;      /* quota.window.num */
static int64_t quota_window_ms = 1000; /* quota.window.size.seconds x 1000 */
#define QUOTA_IDLE_MS 3600000          /* a rate unused this long is dropped */
#define QUOTA_SENSORS_MAX 10000        /* rates kept (stats_snap.h's STATS_QUOTAS_MAX) */
#define QUOTA_WINDOWS_MAX 1000         /* quota.window.num upper bound */

struct quota_window {
	int64_t start_ms;
	double value;
	double throttle_ms;
};

struct quota_sensor {
	int kind;
	struct quota_entity e;
	struct quota_window *w; /* quota_window_num */
	int cur;
	int64_t used_ms;
	uint64_t hash; /* of kind and names, compared first */
};

static struct quota_sensor *sensors;
static int nsensors, capsensors;

void quota_windows_set(int num, int size_s)
{
	quota_rates_clear();
	quota_window_num = num < 1 ? 1 : num > QUOTA_WINDOWS_MAX ? QUOTA_WINDOWS_MAX : num;
	quota_window_ms = (int64_t)(size_s < 1 ? 1 : size_s) * 1000;
}

void quota_rates_clear(void)
{
	for (int i = 0; i < nsensors; i++)
		free(sensors[i].w);
	free(sensors);
	sensors = NULL;
	nsensors = capsensors = 0;
}

static void quota_sensor_drop(int i)
{
	free(sensors[i].w);
	sensors[i] = sensors[--nsensors];
}

static uint64_t quota_hash(int kind, const struct quota_entity *e)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind;

	for (const char *p = e->user_name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL; /* between the names: ("ab", "c") is not ("a", "bc") */
	for (const char *p = e->client_name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

static struct quota_sensor *quota_sensor_find(int kind, const struct quota_entity *e, uint64_t h)
{
	for (int i = 0; i < nsensors; i++)
		if (sensors[i].hash == h && sensors[i].kind == kind && !strcmp(sensors[i].e.user_name, e->user_name) &&
		    !strcmp(sensors[i].e.client_name, e->client_name))
			return &sensors[i];
	return NULL;
}

/*
 * Room for a new rate: rates idle for an hour are dropped first; past
 * QUOTA_SENSORS_MAX the least recently used one is reused for a client
 * under a quota, and a client under none is not measured (NULL).
 */
static struct quota_sensor *quota_sensor_slot(bool limited, int64_t now_ms)
{
	int lru = -1;

	for (int i = 0; i < nsensors; i++) {
		if (now_ms - sensors[i].used_ms > QUOTA_IDLE_MS)
			quota_sensor_drop(i--);
		else if (lru < 0 || sensors[i].used_ms < sensors[lru].used_ms)
			lru = i;
	}
	if (nsensors >= QUOTA_SENSORS_MAX) {
		if (!limited)
			return NULL;
		quota_sensor_drop(lru);
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
	return &sensors[nsensors++];
}

static struct quota_sensor *quota_sensor(int kind, const struct quota_entity *e, bool limited, int64_t now_ms)
{
	uint64_t h = quota_hash(kind, e);
	struct quota_sensor *s = quota_sensor_find(kind, e, h);

	if (s)
		return s;
	s = quota_sensor_slot(limited, now_ms);
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->w = calloc((size_t)quota_window_num, sizeof(*s->w));
	if (!s->w) {
		log_error("out of memory measuring a client quota");
		abort();
	}
	s->kind = kind;
	s->hash = h;
	s->e = *e;
	for (int i = 0; i < quota_window_num; i++)
		s->w[i].start_ms = now_ms - (int64_t)quota_window_num * quota_window_ms * 2;
	s->w[0].start_ms = now_ms;
	return s;
}

/* Moves to a new window when the current one is full; forgets obsolete windows. */
static void quota_advance(struct quota_sensor *s, int64_t now_ms)
{
	if (now_ms - s->w[s->cur].start_ms >= quota_window_ms) {
		s->cur = (s->cur + 1) % quota_window_num;
		s->w[s->cur] = (struct quota_window){ .start_ms = now_ms };
	}
	for (int i = 0; i < quota_window_num; i++)
		if (now_ms - s->w[i].start_ms >= (int64_t)quota_window_num * quota_window_ms && i != s->cur)
			s->w[i] = (struct quota_window){ .start_ms = now_ms -
								     (int64_t)quota_window_num * quota_window_ms * 2 };
	s->used_ms = now_ms;
}

/* The span the windows cover, in ms, at least (num - 1) windows; *sum and *thr their totals. */
static double quota_span(const struct quota_sensor *s, int64_t now_ms, double *sum, double *thr)
{
	int64_t oldest = now_ms;
	int64_t span, full;

	*sum = *thr = 0;
	for (int i = 0; i < quota_window_num; i++) {
		if (now_ms - s->w[i].start_ms >= (int64_t)quota_window_num * quota_window_ms)
			continue;
		*sum += s->w[i].value;
		*thr += s->w[i].throttle_ms;
		if (s->w[i].start_ms < oldest)
			oldest = s->w[i].start_ms;
	}
	span = now_ms - oldest;
	full = span / quota_window_ms;
	if (full < quota_window_num - 1)
		span += (quota_window_num - 1 - full) * quota_window_ms;
	return (double)span;
}

int64_t quota_record(int kind, const struct quota_entity *e, double value, double bound, int64_t now_ms)
{
	struct quota_sensor *s = quota_sensor(kind, e, bound > 0, now_ms);
	double sum, thr, span, rate;

	if (!s)
		return 0;
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
	struct quota_sensor *s = quota_sensor_find(kind, e, quota_hash(kind, e));

	if (s)
		s->w[s->cur].throttle_ms += (double)throttle_ms;
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
	m->throttle_ms = thr / (span / quota_window_ms);
}
