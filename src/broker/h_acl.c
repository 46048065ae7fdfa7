/*
 * h_acl.c - CreateAcls, DescribeAcls and DeleteAcls: the ACLs of
 * broker/authz.h, read and changed by clients (kafka-acls.sh,
 * gregor-acls, the admin APIs of librdkafka and the Java client).
 *
 * As in Kafka: without an authorizer every answer is SECURITY_DISABLED;
 * CreateAcls and DeleteAcls need Alter on the cluster, DescribeAcls
 * Describe (CLUSTER_AUTHORIZATION_FAILED).  A creation or a filter that is
 * not valid gets INVALID_REQUEST on its own and the others go ahead.  The
 * new set is written to disk before the answer; when that fails every
 * entry gets KAFKA_STORAGE_ERROR and nothing changes.
 */
#include <errno.h>
#include <string.h>

#include "broker/api.h"
#include "broker/authz.h"
#include "broker/handlers.h"
#include "proto/kerr.h"
#include "util/log.h"

/* SECURITY_DISABLED or CLUSTER_AUTHORIZATION_FAILED for an ACL request needing op on the cluster; NONE if served. */
static int16_t acl_gate(struct req *rq, int8_t op)
{
	if (!authz_on())
		return KERR_SECURITY_DISABLED;
	return authz_cluster(rq, op) ? KERR_NONE : KERR_CLUSTER_AUTHORIZATION_FAILED;
}

/* A nullable filter string as a C string, NULL for null. */
static const char *acl_opt_cstr(struct req *rq, struct kstr s)
{
	return s.len < 0 ? NULL : req_cstr(rq, s);
}

/* The message of a storage failure, given to every entry that had none. */
static struct kstr acl_storage_msg(struct req *rq, int rc)
{
	log_error("cannot write the ACLs: %s", strerror(-rc));
	return req_printf(rq, "cannot write the ACLs: %s", strerror(-rc));
}

/* The request whose handler runs now: written() then leaves the reply to the handler. */
static struct req *acl_running;
static bool acl_answered; /* written() ran for acl_running */

/* The ACLs a change starts from: a copy of the current ones (none when gated).  0 or -ENOMEM. */
static int acl_next(int16_t gate, struct acl_set *next)
{
	acl_set_init(next);
	return !gate && acl_set_copy(next, authz_acls()) ? -ENOMEM : 0;
}

/* Answers a change now, or lets its handler do it if the write ended while it still runs. */
static void acl_reply(struct req *rq)
{
	if (rq != acl_running)
		req_reply(rq);
	else
		acl_answered = true;
}

/*
 * Ends CreateAcls/DeleteAcls: next (the set after the request) becomes the
 * ACLs when it differs, written before the answer (authz_commit()); rc a
 * failure met while building it.  Takes next's contents.  H_REPLY, or
 * H_PARKED while ZooKeeper writes (written() replies).
 */
static int acl_commit(struct req *rq, int16_t gate, int rc, struct acl_set *next, authz_done_fn *written)
{
	acl_answered = false;
	acl_running = rq;
	if (!gate && !rc && !acl_set_same(next, authz_acls()))
		rc = authz_commit(rq, next, written);
	acl_set_release(next);
	if (rc < 0)
		written(rq, rc);
	acl_running = NULL;
	return rc == 1 && !acl_answered ? H_PARKED : H_REPLY;
}

/* ---- CreateAcls ---- */

static void acl_create_one(struct req *rq, const struct AclCreation *in, struct acl_set *next,
			   struct AclCreationResult *res)
{
	struct acl_binding b = { in->ResourceType,
				 in->ResourcePatternType,
				 in->Operation,
				 in->PermissionType,
				 (char *)req_cstr(rq, in->ResourceName),
				 (char *)req_cstr(rq, in->Principal),
				 (char *)req_cstr(rq, in->Host) };
	const char *why = acl_binding_check(&b);
	int rc;

	if (!why && ((in->ResourceName.len >= 0 && memchr(in->ResourceName.p, '\0', (size_t)in->ResourceName.len)) ||
		     in->Principal.len < 0 || in->Host.len < 0))
		why = "a null field or a NUL byte in the resource name";
	if (!why && (rc = acl_set_add(next, &b)) < 0)
		why = rc == -ENOSPC ? "too many ACLs" : "out of memory";
	if (why) {
		res->ErrorCode = KERR_INVALID_REQUEST;
		res->ErrorMessage = req_printf(rq, "%s", why);
	}
}

/* The new set could not be written (err -errno): every creation without an error of its own gets one. */
static void acl_create_written(struct req *rq, int err)
{
	struct CreateAclsResponse *out = rq->out;
	struct kstr msg;

	if (err) {
		msg = acl_storage_msg(rq, err);
		for (int32_t i = 0; i < out->Results.n; i++)
			if (!out->Results.v[i].ErrorCode) {
				out->Results.v[i].ErrorCode = KERR_KAFKA_STORAGE_ERROR;
				out->Results.v[i].ErrorMessage = msg;
			}
	}
	acl_reply(rq);
}

int h_create_acls(struct req *rq, const void *in_, void *out_)
{
	const struct CreateAclsRequest *in = in_;
	struct CreateAclsResponse *out = out_;
	int32_t n = in->Creations.n > 0 ? in->Creations.n : 0;
	int16_t gate = acl_gate(rq, ACL_OP_ALTER);
	struct acl_set next;
	int rc;

	out->Results.n = n;
	out->Results.v = req_alloc(rq, (size_t)n, sizeof(*out->Results.v));
	rc = acl_next(gate, &next);
	for (int32_t i = 0; i < n; i++) {
		AclCreationResult_init(&out->Results.v[i]);
		out->Results.v[i].ErrorCode = gate;
		if (!gate && !rc)
			acl_create_one(rq, &in->Creations.v[i], &next, &out->Results.v[i]);
	}
	return acl_commit(rq, gate, rc, &next, acl_create_written);
}

/* ---- DescribeAcls ---- */

/* The resource entry of out for b's pattern, added if new. */
static struct DescribeAclsResource *acl_resource_of(struct req *rq, struct DescribeAclsResponse *out,
						    const struct acl_binding *b)
{
	struct DescribeAclsResource *r;

	for (int32_t i = 0; i < out->Resources.n; i++) {
		r = &out->Resources.v[i];
		if (r->ResourceType == b->res_type && r->PatternType == b->pattern &&
		    kstr_eq_c(r->ResourceName, b->name))
			return r;
	}
	r = &out->Resources.v[out->Resources.n++];
	DescribeAclsResource_init(r);
	r->ResourceType = b->res_type;
	r->PatternType = b->pattern;
	r->ResourceName = req_printf(rq, "%s", b->name);
	r->Acls.v = req_alloc(rq, (size_t)authz_acls()->n, sizeof(*r->Acls.v));
	return r;
}

int h_describe_acls(struct req *rq, const void *in_, void *out_)
{
	const struct DescribeAclsRequest *in = in_;
	struct DescribeAclsResponse *out = out_;
	const struct acl_set *s = authz_acls();
	struct acl_filter f = { in->ResourceTypeFilter,
				in->PatternTypeFilter,
				in->Operation,
				in->PermissionType,
				acl_opt_cstr(rq, in->ResourceNameFilter),
				acl_opt_cstr(rq, in->PrincipalFilter),
				acl_opt_cstr(rq, in->HostFilter) };
	const char *why;

	out->ErrorCode = acl_gate(rq, ACL_OP_DESCRIBE);
	if (out->ErrorCode)
		return H_REPLY;
	why = acl_filter_check(&f);
	if (why) {
		out->ErrorCode = KERR_INVALID_REQUEST;
		out->ErrorMessage = req_printf(rq, "%s", why);
		return H_REPLY;
	}
	out->Resources.v = req_alloc(rq, (size_t)s->n, sizeof(*out->Resources.v));
	for (int i = 0; i < s->n; i++) {
		const struct acl_binding *b = &s->v[i];
		struct DescribeAclsResource *r;

		if (!acl_filter_match(&f, b))
			continue;
		r = acl_resource_of(rq, out, b);
		r->Acls.v[r->Acls.n++] = (struct AclDescription){ req_printf(rq, "%s", b->principal),
								  req_printf(rq, "%s", b->host), b->op, b->perm };
	}
	return H_REPLY;
}

/* ---- DeleteAcls ---- */

/* Removes from next what filter in matches, listing it in res. */
static void acl_delete_filter(struct req *rq, const struct DeleteAclsFilter *in, struct acl_set *next,
			      struct DeleteAclsFilterResult *res)
{
	struct acl_filter f = { in->ResourceTypeFilter,
				in->PatternTypeFilter,
				in->Operation,
				in->PermissionType,
				acl_opt_cstr(rq, in->ResourceNameFilter),
				acl_opt_cstr(rq, in->PrincipalFilter),
				acl_opt_cstr(rq, in->HostFilter) };
	const char *why = acl_filter_check(&f);

	if (why) {
		res->ErrorCode = KERR_INVALID_REQUEST;
		res->ErrorMessage = req_printf(rq, "%s", why);
		return;
	}
	res->MatchingAcls.v = req_alloc(rq, (size_t)next->n, sizeof(*res->MatchingAcls.v));
	for (int i = 0; i < next->n;) {
		const struct acl_binding *b = &next->v[i];
		struct DeleteAclsMatchingAcl *m;

		if (!acl_filter_match(&f, b)) {
			i++;
			continue;
		}
		m = &res->MatchingAcls.v[res->MatchingAcls.n++];
		DeleteAclsMatchingAcl_init(m);
		m->ResourceType = b->res_type;
		m->ResourceName = req_printf(rq, "%s", b->name);
		m->PatternType = b->pattern;
		m->Principal = req_printf(rq, "%s", b->principal);
		m->Host = req_printf(rq, "%s", b->host);
		m->Operation = b->op;
		m->PermissionType = b->perm;
		acl_set_remove(next, i); /* the last one moves to i: looked at next */
	}
}

/* The new set could not be written (err -errno): every filter without an error of its own gets one. */
static void acl_delete_written(struct req *rq, int err)
{
	struct DeleteAclsResponse *out = rq->out;
	struct kstr msg;

	if (err) {
		msg = acl_storage_msg(rq, err);
		for (int32_t i = 0; i < out->FilterResults.n; i++)
			if (!out->FilterResults.v[i].ErrorCode) {
				out->FilterResults.v[i].ErrorCode = KERR_KAFKA_STORAGE_ERROR;
				out->FilterResults.v[i].ErrorMessage = msg;
				out->FilterResults.v[i].MatchingAcls.n = 0;
			}
	}
	acl_reply(rq);
}

int h_delete_acls(struct req *rq, const void *in_, void *out_)
{
	const struct DeleteAclsRequest *in = in_;
	struct DeleteAclsResponse *out = out_;
	int32_t n = in->Filters.n > 0 ? in->Filters.n : 0;
	int16_t gate = acl_gate(rq, ACL_OP_ALTER);
	struct acl_set next;
	int rc;

	out->FilterResults.n = n;
	out->FilterResults.v = req_alloc(rq, (size_t)n, sizeof(*out->FilterResults.v));
	rc = acl_next(gate, &next);
	for (int32_t i = 0; i < n; i++) {
		DeleteAclsFilterResult_init(&out->FilterResults.v[i]);
		out->FilterResults.v[i].ErrorCode = gate;
		if (!gate && !rc)
			acl_delete_filter(rq, &in->Filters.v[i], &next, &out->FilterResults.v[i]);
	}
	return acl_commit(rq, gate, rc, &next, acl_delete_written);
}
