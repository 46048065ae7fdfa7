/*
 * console_groups.c - the web console's consumer groups (see
 * console_groups.h), from the group coordinator: the source ListGroups,
 * DescribeGroups and OffsetFetch answer from.
 *
 * As for topics (console_topics.c), the loop only copies: every string
 * and assignment into one buffer, groups, members and offsets into three
 * arrays; the HTTP thread decodes the assignments and builds the JSON.
 * Lag is high watermark minus committed offset, at least 0, as
 * kafka_consumergroup_lag and Kafka's consumer-groups tool give it; it is
 * known for the partitions this broker leads (null otherwise).
 */
#include "broker/console_groups.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/console.h"
#include "broker/console_view.h"
#include "broker/registry.h"
#include "coord/group.h"
#include "coord/group_store.h"
#include "log/partition.h"

/* A string or bytes copied into gsnap.data; len -1: null. */
struct gstr {
	size_t at;
	int32_t len;
};

struct gsnap_group {
	struct gstr id, protocol_type, protocol;
	const char *state; /* group_state_name(): static */
	int32_t generation, members;
	int32_t members_at, nmembers, offsets_at, noffsets; /* the detail: in gsnap's arrays */
};

struct gsnap_member {
	struct gstr member_id, instance_id, client_id, client_host, assignment;
};

struct gsnap_offset {
	struct gstr topic;
	int32_t partition;
	int64_t committed;
	bool held; /* led here: hw and leo are known */
	int64_t high_watermark, log_end_offset;
};

struct gsnap {
	bool one;      /* the answer is the first group, with its detail */
	bool consumer; /* one: protocol type "consumer", its assignments decode */
	int32_t ngroups, nmembers, noffsets, cap_groups, cap_members, cap_offsets;
	struct gsnap_group *groups;
	struct gsnap_member *members;
	struct gsnap_offset *offsets;
	struct wr data;
	bool oom;
};

static void gsnap_free(void *arg)
{
	struct gsnap *s = arg;

	free(s->groups);
	free(s->members);
	free(s->offsets);
	wr_release(&s->data);
	free(s);
}

static struct gstr gsnap_str(struct gsnap *s, const void *p, int32_t len)
{
	struct gstr g = { s->data.len, p ? len : -1 };

	if (p && len > 0)
		wr_raw(&s->data, p, (size_t)len);
	s->oom |= s->data.err != 0;
	return g;
}

static struct gstr gsnap_cstr(struct gsnap *s, const char *p)
{
	return gsnap_str(s, p, p ? (int32_t)strlen(p) : -1);
}

static void gsnap_group_add(struct gsnap *s, const struct group *grp)
{
	struct kstr id = group_name(grp);
	struct gsnap_group *g;

	if (!console_grow((void **)&s->groups, &s->cap_groups, s->ngroups, sizeof(*s->groups))) {
		s->oom = true;
		return;
	}
	g = &s->groups[s->ngroups++];
	memset(g, 0, sizeof(*g));
	g->id = gsnap_str(s, id.p, id.len);
	g->protocol_type = gsnap_cstr(s, group_protocol_type(grp));
	g->protocol = gsnap_cstr(s, group_protocol_name(grp));
	g->state = group_state_name(group_state(grp));
	g->generation = group_generation(grp);
	g->members = group_member_count(grp);
}

static void gsnap_members(struct gsnap *s, const struct group *grp)
{
	int32_t n = group_member_count(grp);
	struct group_member_info *m = calloc(n > 0 ? (size_t)n : 1, sizeof(*m));

	s->oom |= !m;
	if (m)
		group_members(grp, m);
	for (int32_t i = 0; m && i < n && !s->oom; i++) {
		struct gsnap_member *sm;

		if (!console_grow((void **)&s->members, &s->cap_members, s->nmembers, sizeof(*s->members))) {
			s->oom = true;
			break;
		}
		sm = &s->members[s->nmembers++];
		sm->member_id = gsnap_str(s, m[i].member_id.p, m[i].member_id.len);
		sm->instance_id = gsnap_str(s, m[i].group_instance_id.p, m[i].group_instance_id.len);
		sm->client_id = gsnap_str(s, m[i].client_id.p, m[i].client_id.len);
		sm->client_host = gsnap_str(s, m[i].client_host.p, m[i].client_host.len);
		sm->assignment = gsnap_str(s, m[i].assignment.p, m[i].assignment.len);
	}
	free(m);
}

static void gsnap_offsets(struct gsnap *s, struct broker *b, const struct group *grp)
{
	const struct group_offsets *go = group_offsets(grp);

	for (int i = 0; i < go->n && !s->oom; i++) {
		const struct group_offset *o = &go->v[i];
		struct topic *t = registry_find(b->reg, kstr_c(o->topic));
		struct part *part = t ? registry_part(t, o->partition) : NULL;
		struct gsnap_offset *so;

		if (!console_grow((void **)&s->offsets, &s->cap_offsets, s->noffsets, sizeof(*s->offsets))) {
			s->oom = true;
			break;
		}
		so = &s->offsets[s->noffsets++];
		*so = (struct gsnap_offset){ gsnap_cstr(s, o->topic), o->partition, o->offset, part != NULL, 0, 0 };
		if (part) {
			so->high_watermark = part_high_watermark(part);
			so->log_end_offset = part_log_end_offset(part);
		}
	}
}

static json_t *render_str(const struct gsnap *s, struct gstr g)
{
	if (g.len <= 0)
		return g.len < 0 ? json_null() : json_string("");
	return console_json_str((const char *)s->data.buf + g.at, (size_t)g.len);
}

/*
 * The consumer protocol's assignment (version i16, [topic string,
 * [partition i32]], user data bytes) as [{topic, partitions}]; null if
 * it does not parse.
 */
static json_t *render_assignment(const struct gsnap *s, struct gstr g)
{
	struct rd r;
	json_t *a = json_array();
	int32_t nt;

	rd_init(&r, s->data.buf + g.at, (size_t)g.len); /* g.len > 0 (render_member) */
	rd_i16(&r);
	nt = rd_count(&r, rd_i32(&r), 6, false);
	for (int32_t i = 0; !r.err && i < nt; i++) {
		struct kstr topic = rd_kstr16(&r);
		int32_t np = rd_count(&r, rd_i32(&r), 4, false);
		json_t *parts = json_array();

		for (int32_t k = 0; !r.err && k < np; k++)
			json_array_append_new(parts, json_integer(rd_i32(&r)));
		json_array_append_new(a, json_pack("{so so}", "topic",
						   console_json_str(topic.p, topic.len > 0 ? (size_t)topic.len : 0),
						   "partitions", parts));
	}
	if (r.err) {
		json_decref(a);
		return json_null();
	}
	return a;
}

static json_t *render_member(const struct gsnap *s, const struct gsnap_member *m)
{
	return json_pack("{so so so so so}", "member_id", render_str(s, m->member_id), "group_instance_id",
			 render_str(s, m->instance_id), "client_id", render_str(s, m->client_id), "client_host",
			 render_str(s, m->client_host), "assignments",
			 s->consumer && m->assignment.len > 0 ? render_assignment(s, m->assignment) : json_null());
}

static json_t *render_offset(const struct gsnap *s, const struct gsnap_offset *o)
{
	int64_t lag = o->high_watermark > o->committed ? o->high_watermark - o->committed : 0;

	return json_pack("{so si sI so so so}", "topic", render_str(s, o->topic), "partition", o->partition,
			 "committed_offset", (json_int_t)o->committed, "high_watermark",
			 o->held ? json_integer(o->high_watermark) : json_null(), "log_end_offset",
			 o->held ? json_integer(o->log_end_offset) : json_null(), "lag",
			 o->held ? json_integer(lag) : json_null());
}

static json_t *render_group(const struct gsnap *s, const struct gsnap_group *g)
{
	return json_pack("{so ss so so si si}", "group_id", render_str(s, g->id), "state", g->state, "protocol_type",
			 render_str(s, g->protocol_type), "protocol", render_str(s, g->protocol), "generation",
			 g->generation, "members", g->members);
}

/* HTTP thread: the answer. */
static json_t *gsnap_render(void *arg)
{
	const struct gsnap *s = arg;
	json_t *a = json_array(), *o;

	if (!s->one) {
		for (int32_t i = 0; i < s->ngroups; i++)
			json_array_append_new(a, render_group(s, &s->groups[i]));
		return json_pack("{so}", "groups", a);
	}
	o = render_group(s, &s->groups[0]);
	for (int32_t i = 0; i < s->nmembers; i++)
		json_array_append_new(a, render_member(s, &s->members[i]));
	json_object_set_new(o, "member_list", a);
	a = json_array();
	for (int32_t i = 0; i < s->noffsets; i++)
		json_array_append_new(a, render_offset(s, &s->offsets[i]));
	json_object_set_new(o, "offsets", a);
	return o;
}

/* Copies the group j names; false (j answered 404) if it is unknown here. */
static bool groups_one(struct broker *b, struct console_job *j, struct gsnap *s)
{
	const char *name = console_job_ask(j)->name;
	struct group *grp = b->groups ? group_find(b->groups, kstr_c(name)) : NULL;
	const char *pt = grp ? group_protocol_type(grp) : NULL;

	if (!grp) {
		console_job_error(j, 404, "unknown group '%s' (or its coordinator is another broker)", name);
		return false;
	}
	s->one = true;
	s->consumer = pt && !strcmp(pt, "consumer");
	gsnap_group_add(s, grp);
	gsnap_members(s, grp);
	gsnap_offsets(s, b, grp);
	return true;
}

void console_groups_run(struct broker *b, struct console_job *j)
{
	struct gsnap *s = calloc(1, sizeof(*s));
	struct group **groups;
	int n = 0;

	if (!s) {
		console_job_error(j, 500, "out of memory");
		return;
	}
	wr_init(&s->data);
	if (console_job_ask(j)->op == CONSOLE_GROUP) {
		if (!groups_one(b, j, s)) {
			gsnap_free(s);
			return;
		}
	} else {
		groups = b->groups ? group_coord_groups(b->groups, &n) : NULL;
		for (int i = 0; groups && i < n && !s->oom; i++)
			gsnap_group_add(s, groups[i]);
	}
	if (s->oom) {
		gsnap_free(s);
		console_job_error(j, 500, "out of memory");
		return;
	}
	console_job_answer_snap(j, 200, s, gsnap_render, gsnap_free);
}
