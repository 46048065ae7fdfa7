/*
 * console_http.c - the web console's files and JSON API (see
 * console_http.h and docs/console.md).
 *
 * Every path is parsed here, on the HTTP thread, into a struct
 * console_ask that the event loop answers (broker/console.h); bad input
 * (an unknown path, a partition or limit that is not a number in range, a
 * body that is not the JSON object expected) is answered 4xx with
 * {"error": ...} before the loop is asked anything.  /api/rates needs no
 * loop: the byte and message totals are atomic counters (broker/stats.h);
 * a sample is kept at most once a second, the last CONSOLE_RATE_SAMPLES,
 * and rates are the differences between consecutive samples.
 */
#include "ops/console_http.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/console.h"
#include "broker/stats.h"
#include "ops/web_assets.h"
#include "util/clock.h"

#define CONSOLE_RATE_SAMPLES 120
#define CONSOLE_RATE_EVERY_MS 900

struct rate_sample {
	int64_t t_ms;
	uint64_t bytes_in, bytes_out, messages_in;
};

static pthread_mutex_t rate_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rate_sample rate_ring[CONSOLE_RATE_SAMPLES];
static int rate_n, rate_head; /* samples kept; index of the next one */

static enum MHD_Result chttp_json(struct MHD_Connection *mc, unsigned status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (!text)
		return http_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return http_send(mc, status, "application/json", text, strlen(text), MHD_RESPMEM_MUST_FREE);
}

enum MHD_Result console_http_error(struct MHD_Connection *mc, unsigned status, const char *msg)
{
	return chttp_json(mc, status, json_pack("{ss}", "error", msg));
}

/* Runs ask on the loop and sends its answer. */
static enum MHD_Result chttp_ask(struct MHD_Connection *mc, const struct console_ask *ask)
{
	unsigned status = 0;
	char *body = NULL;
	int rc = console_call(ask, &status, &body);

	if (rc == -ETIMEDOUT)
		return console_http_error(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "the broker did not answer in time");
	if (rc)
		return console_http_error(mc, MHD_HTTP_SERVICE_UNAVAILABLE, "the broker is not serving the console");
	return http_send(mc, status, "application/json", body, strlen(body), MHD_RESPMEM_MUST_FREE);
}

/* A decimal number in [lo, hi], all of s; false otherwise. */
static bool chttp_number(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* Copies the n bytes at p into dst (cap bytes); false if they do not fit or are empty. */
static bool chttp_name(char *dst, size_t cap, const char *p, size_t n)
{
	if (!n || n >= cap || memchr(p, '\0', n))
		return false;
	memcpy(dst, p, n);
	dst[n] = '\0';
	return true;
}

static void rate_sample_take(int64_t now)
{
	struct rate_sample *last =
		rate_n ? &rate_ring[(rate_head + CONSOLE_RATE_SAMPLES - 1) % CONSOLE_RATE_SAMPLES] : NULL;

	if (last && now - last->t_ms < CONSOLE_RATE_EVERY_MS)
		return;
	rate_ring[rate_head] =
		(struct rate_sample){ now, stats_load(&stats_counters.bytes_in), stats_load(&stats_counters.bytes_out),
				      stats_load(&stats_counters.messages_in) };
	rate_head = (rate_head + 1) % CONSOLE_RATE_SAMPLES;
	rate_n += rate_n < CONSOLE_RATE_SAMPLES;
}

/* Per-second rate of the counter at offset off between samples a and b. */
static double rate_of(const struct rate_sample *a, const struct rate_sample *b, uint64_t v_a, uint64_t v_b)
{
	return b->t_ms > a->t_ms ? (double)(v_b - v_a) * 1000.0 / (double)(b->t_ms - a->t_ms) : 0.0;
}

static enum MHD_Result chttp_rates(struct MHD_Connection *mc)
{
	int64_t now = clock_wall_ms();
	json_t *a = json_array(), *o;
	const struct rate_sample *cur = NULL;

	pthread_mutex_lock(&rate_mu);
	rate_sample_take(now);
	for (int i = 1; i < rate_n; i++) {
		const struct rate_sample *p =
			&rate_ring[(rate_head + CONSOLE_RATE_SAMPLES - rate_n + i - 1) % CONSOLE_RATE_SAMPLES];

		cur = &rate_ring[(rate_head + CONSOLE_RATE_SAMPLES - rate_n + i) % CONSOLE_RATE_SAMPLES];
		json_array_append_new(a, json_pack("{sI sf sf sf}", "t_ms", (json_int_t)cur->t_ms, "bytes_in_per_sec",
						   rate_of(p, cur, p->bytes_in, cur->bytes_in), "bytes_out_per_sec",
						   rate_of(p, cur, p->bytes_out, cur->bytes_out), "messages_in_per_sec",
						   rate_of(p, cur, p->messages_in, cur->messages_in)));
	}
	cur = &rate_ring[(rate_head + CONSOLE_RATE_SAMPLES - 1) % CONSOLE_RATE_SAMPLES];
	o = json_pack("{sI sI sI sI so}", "now_ms", (json_int_t)now, "bytes_in", (json_int_t)cur->bytes_in, "bytes_out",
		      (json_int_t)cur->bytes_out, "messages_in", (json_int_t)cur->messages_in, "samples", a);
	pthread_mutex_unlock(&rate_mu);
	return chttp_json(mc, MHD_HTTP_OK, o);
}

/* /api/topics/<t>[/partitions/<p>/records]: rest is what follows "/api/topics/". */
static enum MHD_Result chttp_topic(struct MHD_Connection *mc, const char *rest, struct console_ask *ask)
{
	const char *slash = strchr(rest, '/');
	char part[32];
	long long v;

	if (!chttp_name(ask->name, 250, rest, slash ? (size_t)(slash - rest) : strlen(rest)))
		return console_http_error(mc, MHD_HTTP_BAD_REQUEST, "bad topic name");
	ask->op = CONSOLE_TOPIC;
	if (!slash)
		return chttp_ask(mc, ask);
	if (strncmp(slash, "/partitions/", 12))
		return console_http_error(mc, MHD_HTTP_NOT_FOUND, "no such path");
	rest = slash + 12;
	slash = strchr(rest, '/');
	if (!slash || strcmp(slash, "/records") || !chttp_name(part, sizeof(part), rest, (size_t)(slash - rest)) ||
	    !chttp_number(part, 0, INT32_MAX, &v))
		return console_http_error(mc, MHD_HTTP_BAD_REQUEST,
					  "expected /api/topics/<topic>/partitions/<n>/records");
	ask->op = CONSOLE_RECORDS;
	ask->partition = (int32_t)v;
	ask->limit = 20;
	rest = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "limit");
	if (rest && !chttp_number(rest, 1, CONSOLE_RECORDS_MAX, &v))
		return console_http_error(mc, MHD_HTTP_BAD_REQUEST, "limit must be a number from 1 to 500");
	if (rest)
		ask->limit = (int32_t)v;
	return chttp_ask(mc, ask);
}

static const struct web_asset *chttp_asset(const char *url)
{
	if (!strcmp(url, "/"))
		url = "/index.html";
	for (size_t i = 0; i < web_assets_count; i++)
		if (!strcmp(web_assets[i].path, url))
			return &web_assets[i];
	return NULL;
}

enum MHD_Result console_http_get(struct MHD_Connection *mc, const char *url, bool write)
{
	static struct console_ask ask_zero;
	const struct web_asset *a = chttp_asset(url);
	struct console_ask *ask;
	enum MHD_Result ret;

	if (a)
		return http_send(mc, MHD_HTTP_OK, a->type, (char *)a->data, a->len, MHD_RESPMEM_PERSISTENT);
	if (strncmp(url, "/api/", 5))
		return http_text(mc, MHD_HTTP_NOT_FOUND, "not found\n");
	if (!strcmp(url, "/api/rates"))
		return chttp_rates(mc);
	if (!strcmp(url, "/api/console"))
		return chttp_json(mc, MHD_HTTP_OK, json_pack("{sb}", "write_enabled", write));
	ask = malloc(sizeof(*ask)); /* too big for the HTTP thread's stack budget */
	if (!ask)
		return console_http_error(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	*ask = ask_zero;
	ask->op = CONSOLE_BROKERS;
	if (!strcmp(url, "/api/brokers") || !strcmp(url, "/api/topics") || !strcmp(url, "/api/groups")) {
		ask->op = url[5] == 'b' ? CONSOLE_BROKERS : url[5] == 't' ? CONSOLE_TOPICS : CONSOLE_GROUPS;
		ret = chttp_ask(mc, ask);
	} else if (!strncmp(url, "/api/topics/", 12)) {
		ret = chttp_topic(mc, url + 12, ask);
	} else if (!strncmp(url, "/api/groups/", 12)) {
		ask->op = CONSOLE_GROUP;
		ret = chttp_name(ask->name, sizeof(ask->name), url + 12, strlen(url + 12))
			      ? chttp_ask(mc, ask)
			      : console_http_error(mc, MHD_HTTP_BAD_REQUEST, "bad group id");
	} else {
		ret = console_http_error(mc, MHD_HTTP_NOT_FOUND, "no such path");
	}
	free(ask);
	return ret;
}

/* POST /api/topics {"name": "t", "partitions": n}. */
static const char *chttp_create_args(json_t *body, struct console_ask *ask)
{
	const char *name = NULL;
	json_int_t n = 0;

	if (json_unpack(body, "{s:s, s:I !}", "name", &name, "partitions", &n))
		return "expected {\"name\": string, \"partitions\": number}";
	if (!chttp_name(ask->name, 250, name, strlen(name)))
		return "bad topic name";
	if (n < 1 || n > CONSOLE_PARTITIONS_MAX)
		return "partitions must be from 1 to 10000";
	ask->op = CONSOLE_CREATE_TOPIC;
	ask->partitions = (int32_t)n;
	return NULL;
}

/* POST /api/groups/<g>/offsets {"to": "earliest"|"latest"|"offset", "offset": n, "topic": "t"}. */
static const char *chttp_reset_args(json_t *body, struct console_ask *ask)
{
	const char *to = NULL, *topic = NULL;
	json_int_t off = -1;

	if (json_unpack(body, "{s:s, s?I, s?s !}", "to", &to, "offset", &off, "topic", &topic))
		return "expected {\"to\": \"earliest\"|\"latest\"|\"offset\", \"offset\": number, \"topic\": string}";
	if (topic && !chttp_name(ask->topic, sizeof(ask->topic), topic, strlen(topic)))
		return "bad topic name";
	if (!strcmp(to, "earliest"))
		ask->reset = CONSOLE_RESET_EARLIEST;
	else if (!strcmp(to, "latest"))
		ask->reset = CONSOLE_RESET_LATEST;
	else if (!strcmp(to, "offset") && off >= 0)
		ask->reset = CONSOLE_RESET_OFFSET;
	else
		return "\"to\" must be earliest, latest, or offset with a non-negative \"offset\"";
	ask->offset = off;
	ask->op = CONSOLE_RESET_OFFSETS;
	return NULL;
}

/* Which write url is, its arguments from body into ask; NULL or what is wrong (*status set). */
static const char *chttp_post_args(const char *url, json_t *body, struct console_ask *ask, unsigned *status)
{
	size_t n = strlen(url);

	*status = MHD_HTTP_BAD_REQUEST;
	if (!strcmp(url, "/api/topics"))
		return chttp_create_args(body, ask);
	if (strncmp(url, "/api/groups/", 12) || n < 12 + 8 || strcmp(url + n - 8, "/offsets")) {
		*status = MHD_HTTP_NOT_FOUND;
		return "no such path";
	}
	if (!chttp_name(ask->name, sizeof(ask->name), url + 12, n - 12 - 8))
		return "bad group id";
	return chttp_reset_args(body, ask);
}

enum MHD_Result console_http_post(struct MHD_Connection *mc, const char *url, const char *body, size_t len, bool write)
{
	struct console_ask *ask;
	json_error_t jerr;
	json_t *j;
	const char *why;
	unsigned status;
	enum MHD_Result ret;

	if (!write)
		return console_http_error(mc, MHD_HTTP_FORBIDDEN,
					  "the console is read-only (console.write.enable=false)");
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return console_http_error(mc, MHD_HTTP_BAD_REQUEST, "the body must be a JSON object");
	}
	ask = calloc(1, sizeof(*ask));
	if (!ask) {
		json_decref(j);
		return console_http_error(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	why = chttp_post_args(url, j, ask, &status);
	ret = why ? console_http_error(mc, status, why) : chttp_ask(mc, ask);
	json_decref(j);
	free(ask);
	return ret;
}
