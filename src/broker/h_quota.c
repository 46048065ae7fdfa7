/*
 * h_quota.c - DescribeClientQuotas and AlterClientQuotas (KIP-546): the
 * client quota settings of quota.h, read and changed by clients.
 *
 * An entity is one "user" and/or one "client-id" component; a null name
 * is the <default> entity.  AlterClientQuotas answers each entry on its
 * own: an unknown entity type, a repeated component, an unknown key, a
 * value that is not positive (or, for a byte rate, not a whole number)
 * gets INVALID_REQUEST and changes nothing of that entry.  The settings
 * are written to disk before the answer; when that fails every entry gets
 * KAFKA_STORAGE_ERROR and nothing changes.  Cluster mode (quota_zk.h):
 * each entry is written to ZooKeeper before the answer, on its own; one
 * ZooKeeper did not take gets REQUEST_TIMED_OUT (not connected) or
 * UNKNOWN_SERVER_ERROR and changes nothing.  DescribeClientQuotas answers
 * from the cache, which the notifications keep current.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/quota.h"
#include "broker/quota_zk.h"
#include "proto/kerr.h"
#include "util/log.h"

/* Component kind of an entity type name: 0 user, 1 client-id, -1 unknown. */
static int quota_type_of(struct kstr t)
{
	return kstr_eq_c(t, "user") ? 0 : kstr_eq_c(t, "client-id") ? 1 : -1;
}

/* Sets component type (0 user, 1 client-id) of e from name (null = <default>); false if too long. */
static bool quota_comp_set(struct quota_entity *e, int type, struct kstr name)
{
	uint8_t comp = name.len < 0 ? QUOTA_DEFAULT : QUOTA_NAME;
	char *dst = type ? e->client_name : e->user_name;

	if (name.len > QUOTA_NAME_MAX || (name.len > 0 && memchr(name.p, '\0', (size_t)name.len)))
		return false;
	if (name.len > 0)
		memcpy(dst, name.p, (size_t)name.len);
	dst[name.len > 0 ? name.len : 0] = '\0';
	if (type)
		e->client = comp;
	else
		e->user = comp;
	return true;
}

/* The entity of an AlterClientQuotas entry; NULL or an error message. */
static const char *quota_entity_parse(const struct AlterClientQuotasEntity_array *a, struct quota_entity *e)
{
	memset(e, 0, sizeof(*e));
	if (a->n <= 0)
		return "an entity needs a user or a client-id";
	for (int32_t i = 0; i < a->n; i++) {
		int type = quota_type_of(a->v[i].EntityType);

		if (type < 0)
			return "unknown entity type (user or client-id)";
		if ((type ? e->client : e->user) != QUOTA_ABSENT)
			return "an entity type given twice";
		if (!quota_comp_set(e, type, a->v[i].EntityName))
			return "entity name too long or holding a NUL byte";
	}
	return NULL;
}

/* Checks an entry's ops; NULL or an error message. */
static const char *quota_ops_check(const struct AlterClientQuotasOp_array *ops)
{
	bool seen[QUOTA_KINDS] = { false };

	for (int32_t i = 0; i < ops->n; i++) {
		const struct AlterClientQuotasOp *op = &ops->v[i];
		int kind = quota_kind_of(op->Key.p, op->Key.len);

		if (kind < 0)
			return "unknown quota key (producer_byte_rate, consumer_byte_rate, request_percentage)";
		if (seen[kind])
			return "a quota key given twice";
		seen[kind] = true;
		if (op->Remove)
			continue;
		if (!isfinite(op->Value) || op->Value <= 0)
			return "a quota must be a positive number";
		if (kind != QUOTA_REQUEST && (op->Value != floor(op->Value) || op->Value > 9.2e18))
			return "a byte rate must be a whole number of bytes per second";
	}
	return NULL;
}

/* Checks one entry and fills its result; true when its ops are to be applied. */
static bool quota_alter_entry(struct req *rq, const struct AlterClientQuotasEntry *in, bool validate,
			      struct AlterClientQuotasEntryResult *res, struct quota_entity *e)
{
	const char *why = quota_entity_parse(&in->Entity, e);

	res->Entity.n = in->Entity.n;
	res->Entity.v = req_alloc(rq, (size_t)in->Entity.n, sizeof(*res->Entity.v));
	for (int32_t i = 0; i < in->Entity.n; i++) {
		res->Entity.v[i].EntityType = in->Entity.v[i].EntityType;
		res->Entity.v[i].EntityName = in->Entity.v[i].EntityName;
	}
	if (!why)
		why = quota_ops_check(&in->Ops);
	if (!why && !quota_has(e) && quota_count() >= QUOTA_ENTRIES_MAX)
		why = "too many quota entities (100000)";
	if (why) {
		res->ErrorCode = KERR_INVALID_REQUEST;
		res->ErrorMessage = req_printf(rq, "%s", why);
		return false;
	}
	return !validate && in->Ops.n > 0;
}

/* Single node: applies each entry's ops here and writes the file; nothing changes if that fails. */
static void quota_alter_local(struct req *rq, const struct AlterClientQuotasRequest *in,
			      struct AlterClientQuotasResponse *out, const bool *apply, const struct quota_entity *e)
{
	struct quota_backup *before = quota_backup();
	bool changed = false;
	int rc = 0;

	for (int32_t i = 0; i < out->Entries.n; i++)
		for (int32_t j = 0; apply[i] && j < in->Entries.v[i].Ops.n; j++) {
			const struct AlterClientQuotasOp *op = &in->Entries.v[i].Ops.v[j];

			quota_set(&e[i], quota_kind_of(op->Key.p, op->Key.len), op->Value, op->Remove);
			changed = true;
		}
	if (changed)
		rc = quota_save();
	quota_restore(before, rc != 0); /* not written: not changed */
	if (rc) {
		log_error("cannot write the client quotas: %s", strerror(-rc));
		for (int32_t i = 0; i < out->Entries.n; i++)
			if (!out->Entries.v[i].ErrorCode) {
				out->Entries.v[i].ErrorCode = KERR_KAFKA_STORAGE_ERROR;
				out->Entries.v[i].ErrorMessage =
					req_printf(rq, "cannot write the quotas: %s", strerror(-rc));
			}
	}
}

/* Cluster mode: a request whose entries ZooKeeper is writing, answered when the last is written. */
struct quota_zk_wait {
	struct req *rq;
	int pending;
	bool in_call; /* the handler has not returned yet */
};

struct quota_zk_item {
	struct quota_zk_wait *w;
	struct AlterClientQuotasEntryResult *res;
	struct quota_entity e;
	bool change[QUOTA_KINDS];
	double values[QUOTA_KINDS]; /* 0: removed */
};

/* An entry's outcome: the cache takes it at once (the notification brings it again), or an error. */
static void quota_zk_written(void *arg, int err)
{
	struct quota_zk_item *it = arg;
	struct req *rq = it->w->rq;

	if (err) {
		it->res->ErrorCode = err == -ENOTCONN ? KERR_REQUEST_TIMED_OUT : KERR_UNKNOWN_SERVER_ERROR;
		it->res->ErrorMessage = req_printf(rq, "zookeeper did not take the quotas (%s): nothing changed",
						   err == -ENOTCONN ? "not connected" : strerror(-err));
	}
	for (int k = 0; !err && k < QUOTA_KINDS; k++)
		if (it->change[k])
			quota_set(&it->e, k, it->values[k], !(it->values[k] > 0));
	if (--it->w->pending == 0 && !it->w->in_call)
		req_reply(rq);
}

/* Cluster mode: writes each entry to ZooKeeper; H_PARKED while any is being written. */
static int quota_alter_zk(struct req *rq, const struct AlterClientQuotasRequest *in,
			  struct AlterClientQuotasResponse *out, const bool *apply, const struct quota_entity *e)
{
	struct quota_zk_wait *w = req_alloc(rq, 1, sizeof(*w));

	*w = (struct quota_zk_wait){ .rq = rq, .in_call = true };
	for (int32_t i = 0; i < out->Entries.n; i++) {
		struct quota_zk_item *it;

		if (!apply[i])
			continue;
		it = req_alloc(rq, 1, sizeof(*it));
		*it = (struct quota_zk_item){ .w = w, .res = &out->Entries.v[i], .e = e[i] };
		for (int32_t j = 0; j < in->Entries.v[i].Ops.n; j++) {
			const struct AlterClientQuotasOp *op = &in->Entries.v[i].Ops.v[j];
			int k = quota_kind_of(op->Key.p, op->Key.len);

			it->change[k] = true;
			it->values[k] = op->Remove ? 0 : op->Value;
		}
		w->pending++;
		if (quota_zk_write(rq->b, &e[i], it->change, it->values, quota_zk_written, it))
			quota_zk_written(it, -ENOTCONN); /* counted, so answered like a failed write */
	}
	w->in_call = false;
	return w->pending ? H_PARKED : H_REPLY;
}

int h_alter_client_quotas(struct req *rq, const void *in_, void *out_)
{
	const struct AlterClientQuotasRequest *in = in_;
	struct AlterClientQuotasResponse *out = out_;
	int16_t deny = authz_cluster_kerr(rq, ACL_OP_ALTER_CONFIGS);
	int32_t n = in->Entries.n > 0 ? in->Entries.n : 0;
	struct quota_entity *e = req_alloc(rq, (size_t)n, sizeof(*e));
	bool *apply = req_alloc(rq, (size_t)n, sizeof(*apply));

	out->Entries.n = n;
	out->Entries.v = req_alloc(rq, (size_t)n, sizeof(*out->Entries.v));
	for (int32_t i = 0; i < n; i++) {
		AlterClientQuotasEntryResult_init(&out->Entries.v[i]);
		apply[i] =
			quota_alter_entry(rq, &in->Entries.v[i], in->ValidateOnly || deny, &out->Entries.v[i], &e[i]);
		if (deny) /* checked only: nothing changes */
			out->Entries.v[i].ErrorCode = deny;
	}
	if (rq->b->cluster)
		return quota_alter_zk(rq, in, out, apply, e);
	quota_alter_local(rq, in, out, apply, e);
	return H_REPLY;
}

/* ---- DescribeClientQuotas ---- */

enum { MATCH_EXACT = 0, MATCH_DEFAULT = 1, MATCH_SPECIFIED = 2 };

/* Whether component comp/name passes filter f. */
static bool quota_comp_match(uint8_t comp, const char *name, const struct DescribeClientQuotasComponent *f)
{
	if (comp == QUOTA_ABSENT)
		return false;
	switch (f->MatchType) {
	case MATCH_EXACT:
		if (f->Match.len < 0)
			return comp == QUOTA_DEFAULT;
		return comp == QUOTA_NAME && strlen(name) == (size_t)f->Match.len &&
		       !memcmp(name, f->Match.p, (size_t)f->Match.len);
	case MATCH_DEFAULT:
		return comp == QUOTA_DEFAULT;
	default:
		return comp == QUOTA_NAME;
	}
}

static bool quota_entity_match(const struct quota_entity *e, const struct DescribeClientQuotasRequest *in)
{
	bool filtered[2] = { false, false };

	for (int32_t i = 0; i < in->Components.n; i++) {
		const struct DescribeClientQuotasComponent *f = &in->Components.v[i];
		int type = quota_type_of(f->EntityType) > 0; /* checked by quota_filter_check() */

		filtered[type] = true;
		if (!quota_comp_match(type ? e->client : e->user, type ? e->client_name : e->user_name, f))
			return false;
	}
	return !in->Strict || ((e->user == QUOTA_ABSENT || filtered[0]) && (e->client == QUOTA_ABSENT || filtered[1]));
}

/* The filter's error message, NULL if it is valid. */
static const char *quota_filter_check(const struct DescribeClientQuotasRequest *in)
{
	bool seen[2] = { false, false };

	for (int32_t i = 0; i < in->Components.n; i++) {
		int type = quota_type_of(in->Components.v[i].EntityType);

		if (type < 0)
			return "unknown entity type (user or client-id)";
		if (seen[type])
			return "an entity type filtered twice";
		seen[type] = true;
		if (in->Components.v[i].MatchType < MATCH_EXACT || in->Components.v[i].MatchType > MATCH_SPECIFIED)
			return "unknown match type";
	}
	return NULL;
}

static struct kstr quota_name_kstr(uint8_t comp, const char *name)
{
	return comp == QUOTA_DEFAULT ? KSTR_NULL : (struct kstr){ name, (int32_t)strlen(name) };
}

static void quota_describe_entry(struct req *rq, int i, struct DescribeClientQuotasEntry *d)
{
	struct quota_entity *e = req_alloc(rq, 1, sizeof(*e));
	double vals[QUOTA_KINDS];
	bool has[QUOTA_KINDS];
	int n = 0;

	quota_get(i, e, vals, has);
	d->Entity.v = req_alloc(rq, 2, sizeof(*d->Entity.v));
	if (e->user != QUOTA_ABSENT)
		d->Entity.v[n++] =
			(struct DescribeClientQuotasEntity){ { "user", 4 }, quota_name_kstr(e->user, e->user_name) };
	if (e->client != QUOTA_ABSENT)
		d->Entity.v[n++] = (struct DescribeClientQuotasEntity){ { "client-id", 9 },
									quota_name_kstr(e->client, e->client_name) };
	d->Entity.n = n;
	d->Values.v = req_alloc(rq, QUOTA_KINDS, sizeof(*d->Values.v));
	d->Values.n = 0;
	for (int k = 0; k < QUOTA_KINDS; k++)
		if (has[k])
			d->Values.v[d->Values.n++] =
				(struct DescribeClientQuotasValue){ { quota_key(k), (int32_t)strlen(quota_key(k)) },
								    vals[k] };
}

int h_describe_client_quotas(struct req *rq, const void *in_, void *out_)
{
	const struct DescribeClientQuotasRequest *in = in_;
	struct DescribeClientQuotasResponse *out = out_;
	const char *why = quota_filter_check(in);
	struct quota_entity e;
	double vals[QUOTA_KINDS];
	bool has[QUOTA_KINDS];

	if ((out->ErrorCode = authz_cluster_kerr(rq, ACL_OP_DESCRIBE_CONFIGS))) {
		out->Entries.n = -1;
		return H_REPLY;
	}
	if (why) {
		out->ErrorCode = KERR_INVALID_REQUEST;
		out->ErrorMessage = req_printf(rq, "%s", why);
		out->Entries.n = -1;
		return H_REPLY;
	}
	out->Entries.v = req_alloc(rq, (size_t)quota_count(), sizeof(*out->Entries.v));
	out->Entries.n = 0;
	for (int i = 0; i < quota_count(); i++) {
		quota_get(i, &e, vals, has);
		if (quota_entity_match(&e, in))
			quota_describe_entry(rq, i, &out->Entries.v[out->Entries.n++]);
	}
	return H_REPLY;
}

int quotas_start(struct broker *b)
{
	char dir[PATH_MAX];
	int rc = config_first_log_dir(&b->cfg, dir, sizeof(dir));

	quota_windows_set(b->cfg.quota_window_num, b->cfg.quota_window_size_seconds);
	if (b->cfg.zookeeper_connect)
		return 0; /* the quotas are ZooKeeper's, read when the session starts (quota_zk.h) */
	if (rc)
		return rc;
	rc = quota_open(dir);
	if (rc)
		log_error("cannot load the client quotas from '%s': %s", dir, strerror(-rc));
	else if (quota_count())
		log_info("client quotas: %d entities", quota_count());
	return rc;
}

void quotas_stop(void)
{
	quota_close();
	quota_rates_clear();
}
