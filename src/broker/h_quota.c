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
 * KAFKA_STORAGE_ERROR and nothing changes.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/quota.h"
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

static void quota_alter_entry(struct req *rq, const struct AlterClientQuotasEntry *in, bool validate,
			      struct AlterClientQuotasEntryResult *res, bool *changed)
{
	struct quota_entity e;
	const char *why = quota_entity_parse(&in->Entity, &e);

	res->Entity.n = in->Entity.n;
	res->Entity.v = req_alloc(rq, (size_t)in->Entity.n, sizeof(*res->Entity.v));
	for (int32_t i = 0; i < in->Entity.n; i++) {
		res->Entity.v[i].EntityType = in->Entity.v[i].EntityType;
		res->Entity.v[i].EntityName = in->Entity.v[i].EntityName;
	}
	if (!why)
		why = quota_ops_check(&in->Ops);
	if (!why && !quota_has(&e) && quota_count() >= QUOTA_ENTRIES_MAX)
		why = "too many quota entities (100000)";
	if (why) {
		res->ErrorCode = KERR_INVALID_REQUEST;
		res->ErrorMessage = req_printf(rq, "%s", why);
		return;
	}
	if (validate)
		return;
	for (int32_t i = 0; i < in->Ops.n; i++)
		quota_set(&e, quota_kind_of(in->Ops.v[i].Key.p, in->Ops.v[i].Key.len), in->Ops.v[i].Value,
			  in->Ops.v[i].Remove);
	*changed = *changed || in->Ops.n > 0;
}

int h_alter_client_quotas(struct req *rq, const void *in_, void *out_)
{
	const struct AlterClientQuotasRequest *in = in_;
	struct AlterClientQuotasResponse *out = out_;
	struct quota_backup *before = quota_backup();
	bool changed = false;
	int rc = 0;

	out->Entries.n = in->Entries.n > 0 ? in->Entries.n : 0;
	out->Entries.v = req_alloc(rq, (size_t)out->Entries.n, sizeof(*out->Entries.v));
	for (int32_t i = 0; i < out->Entries.n; i++) {
		AlterClientQuotasEntryResult_init(&out->Entries.v[i]);
		quota_alter_entry(rq, &in->Entries.v[i], in->ValidateOnly, &out->Entries.v[i], &changed);
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
	size_t n = strcspn(b->cfg.log_dirs, ",");
	int rc;

	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, b->cfg.log_dirs, n);
	dir[n] = '\0';
	quota_windows_set(b->cfg.quota_window_num, b->cfg.quota_window_size_seconds);
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
