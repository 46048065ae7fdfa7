/*
 * acl.c - the ACL model of acl.h: sets of bindings, filters, and Kafka's
 * authorization decision.  Pure logic (no I/O), so it is unit tested on its
 * own (tests/unit/sec/test_acl.c); the broker keeps the set and its file
 * (broker/authz.c).
 *
 * A set is a plain array searched linearly: ACLs number in the tens or
 * hundreds, and a decision walks them once.
 */
#include "sec/acl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void acl_set_init(struct acl_set *s)
{
	memset(s, 0, sizeof(*s));
}

static void acl_binding_free(struct acl_binding *b)
{
	free(b->name);
	b->name = NULL;
	free(b->principal);
	b->principal = NULL;
	free(b->host);
	b->host = NULL;
}

void acl_set_release(struct acl_set *s)
{
	for (int i = 0; i < s->n; i++)
		acl_binding_free(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static bool acl_binding_eq(const struct acl_binding *a, const struct acl_binding *b)
{
	return a->res_type == b->res_type && a->pattern == b->pattern && a->op == b->op && a->perm == b->perm &&
	       !strcmp(a->name, b->name) && !strcmp(a->principal, b->principal) && !strcmp(a->host, b->host);
}

int acl_set_find(const struct acl_set *s, const struct acl_binding *b)
{
	for (int i = 0; i < s->n; i++)
		if (acl_binding_eq(&s->v[i], b))
			return i;
	return -1;
}

int acl_set_add(struct acl_set *s, const struct acl_binding *b)
{
	struct acl_binding *d;

	if (acl_set_find(s, b) >= 0)
		return 0;
	if (s->n >= ACL_BINDINGS_MAX)
		return -ENOSPC;
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct acl_binding *v = realloc(s->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	d = &s->v[s->n];
	*d = *b;
	d->name = strdup(b->name);
	d->principal = strdup(b->principal);
	d->host = strdup(b->host);
	if (!d->name || !d->principal || !d->host) {
		acl_binding_free(d);
		return -ENOMEM;
	}
	s->n++;
	return 1;
}

void acl_set_remove(struct acl_set *s, int i)
{
	acl_binding_free(&s->v[i]);
	s->v[i] = s->v[--s->n];
}

bool acl_set_same(const struct acl_set *a, const struct acl_set *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (acl_set_find(b, &a->v[i]) < 0)
			return false;
	return true;
}

int acl_set_copy(struct acl_set *dst, const struct acl_set *src)
{
	acl_set_release(dst);
	for (int i = 0; i < src->n; i++)
		if (acl_set_add(dst, &src->v[i]) < 0) {
			acl_set_release(dst);
			return -ENOMEM;
		}
	return 0;
}

static bool acl_concrete_res(int8_t t)
{
	return t >= ACL_RES_TOPIC && t <= ACL_RES_TRANSACTIONAL_ID;
}

const char *acl_binding_check(const struct acl_binding *b)
{
	if (!acl_concrete_res(b->res_type))
		return "resource type must be topic, group, cluster or transactional id";
	if (b->pattern != ACL_PAT_LITERAL && b->pattern != ACL_PAT_PREFIXED)
		return "pattern type must be LITERAL or PREFIXED";
	if (b->op < ACL_OP_ALL || b->op > ACL_OP_IDEMPOTENT_WRITE)
		return "unknown or ANY operation";
	if (b->perm != ACL_PERM_ALLOW && b->perm != ACL_PERM_DENY)
		return "permission type must be ALLOW or DENY";
	if (!b->name[0])
		return "resource name must not be empty";
	if (b->res_type == ACL_RES_CLUSTER && strcmp(b->name, ACL_CLUSTER_NAME))
		return "the cluster resource is named kafka-cluster";
	if (b->pattern == ACL_PAT_PREFIXED && !strcmp(b->name, ACL_WILDCARD))
		return "a prefixed pattern cannot be the wildcard";
	if (!strchr(b->principal, ':') || strchr(b->principal, ':') == b->principal)
		return "principal must be <type>:<name>, e.g. User:alice";
	if (!b->host[0])
		return "host must be * or an address";
	return NULL;
}

const char *acl_filter_check(const struct acl_filter *f)
{
	if (f->res_type <= ACL_RES_UNKNOWN || f->res_type > ACL_RES_TRANSACTIONAL_ID + 2)
		return "unknown resource type";
	if (f->pattern <= ACL_PAT_UNKNOWN || f->pattern > ACL_PAT_PREFIXED)
		return "unknown pattern type";
	if (f->op <= ACL_OP_UNKNOWN || f->op > ACL_OP_IDEMPOTENT_WRITE + 2)
		return "unknown operation";
	if (f->perm <= ACL_PERM_UNKNOWN || f->perm > ACL_PERM_ALLOW)
		return "unknown permission type";
	return NULL;
}

/* Whether pattern/pname (a binding's) applies to the resource named name. */
static bool acl_pattern_applies(int8_t pattern, const char *pname, const char *name)
{
	if (pattern == ACL_PAT_PREFIXED)
		return !strncmp(name, pname, strlen(pname));
	return !strcmp(pname, ACL_WILDCARD) || !strcmp(pname, name);
}

bool acl_applies(const struct acl_binding *b, int8_t res_type, const char *name)
{
	return b->res_type == res_type && acl_pattern_applies(b->pattern, b->name, name);
}

static bool acl_filter_name_match(const struct acl_filter *f, const struct acl_binding *b)
{
	if (f->pattern == ACL_PAT_MATCH)
		return !f->name || acl_pattern_applies(b->pattern, b->name, f->name);
	if (f->pattern != ACL_PAT_ANY && f->pattern != b->pattern)
		return false;
	return !f->name || !strcmp(f->name, b->name);
}

bool acl_filter_match(const struct acl_filter *f, const struct acl_binding *b)
{
	return (f->res_type == ACL_RES_ANY || f->res_type == b->res_type) && acl_filter_name_match(f, b) &&
	       (!f->principal || !strcmp(f->principal, b->principal)) && (!f->host || !strcmp(f->host, b->host)) &&
	       (f->op == ACL_OP_ANY || f->op == b->op) && (f->perm == ACL_PERM_ANY || f->perm == b->perm);
}

bool acl_is_super(const struct acl_policy *p, const char *principal)
{
	const char *s = p->super_users;
	size_t len = strlen(principal);

	while (s && *s) {
		const char *end = strchr(s, ';');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		const char *q = s;

		while (n && isspace((unsigned char)*q))
			q++, n--;
		while (n && isspace((unsigned char)q[n - 1]))
			n--;
		if (n == len && !memcmp(q, principal, n))
			return true;
		s = end ? end + 1 : NULL;
	}
	return false;
}

/* Whether a binding granting op_acl grants op (Kafka's implied operations; allow only). */
static bool acl_op_implies(int8_t op_acl, int8_t op)
{
	if (op_acl == ACL_OP_ALL || op_acl == op)
		return true;
	if (op == ACL_OP_DESCRIBE)
		return op_acl == ACL_OP_READ || op_acl == ACL_OP_WRITE || op_acl == ACL_OP_DELETE ||
		       op_acl == ACL_OP_ALTER;
	if (op == ACL_OP_DESCRIBE_CONFIGS)
		return op_acl == ACL_OP_ALTER_CONFIGS;
	return false;
}

/* Whether b names rq's principal and host (or their wildcards). */
static bool acl_who_matches(const struct acl_binding *b, const struct acl_request *rq)
{
	return (!strcmp(b->principal, rq->principal) || !strcmp(b->principal, "User:*")) &&
	       (!strcmp(b->host, ACL_WILDCARD) || !strcmp(b->host, rq->host));
}

bool acl_authorize(const struct acl_set *s, const struct acl_policy *p, const struct acl_request *rq)
{
	bool any = false, allowed = false;

	if (acl_is_super(p, rq->principal))
		return true;
	for (int i = 0; i < s->n; i++) {
		const struct acl_binding *b = &s->v[i];

		if (!acl_applies(b, rq->res_type, rq->name))
			continue;
		any = true;
		if (!acl_who_matches(b, rq))
			continue;
		if (b->perm == ACL_PERM_DENY && (b->op == ACL_OP_ALL || b->op == rq->op))
			return false;
		if (b->perm == ACL_PERM_ALLOW && acl_op_implies(b->op, rq->op))
			allowed = true;
	}
	return any ? allowed : p->allow_everyone_if_no_acl_found;
}

/* Whether deny binding d (matching the principal and op) covers every resource allow binding a applies to. */
static bool acl_deny_covers(const struct acl_binding *d, const struct acl_binding *a)
{
	if (d->pattern == ACL_PAT_LITERAL)
		return !strcmp(d->name, ACL_WILDCARD) || (a->pattern == ACL_PAT_LITERAL && !strcmp(d->name, a->name));
	return !strncmp(a->name, d->name, strlen(d->name)) && strcmp(a->name, ACL_WILDCARD);
}

static bool acl_allow_survives(const struct acl_set *s, const struct acl_binding *a, const struct acl_request *rq)
{
	for (int i = 0; i < s->n; i++) {
		const struct acl_binding *d = &s->v[i];

		if (d->perm == ACL_PERM_DENY && d->res_type == rq->res_type && acl_who_matches(d, rq) &&
		    (d->op == ACL_OP_ALL || d->op == rq->op) && acl_deny_covers(d, a))
			return false;
	}
	return true;
}

bool acl_authorize_any(const struct acl_set *s, const struct acl_policy *p, const struct acl_request *rq)
{
	if (acl_is_super(p, rq->principal))
		return true;
	for (int i = 0; i < s->n; i++) {
		const struct acl_binding *a = &s->v[i];

		if (a->perm == ACL_PERM_ALLOW && a->res_type == rq->res_type && acl_who_matches(a, rq) &&
		    acl_op_implies(a->op, rq->op) && acl_allow_survives(s, a, rq))
			return true;
	}
	return false;
}

/* ---- names ---- */

static const char *const res_names[] = { "Unknown", "Any", "Topic", "Group", "Cluster", "TransactionalId" };
static const char *const pattern_names[] = { "UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED" };
static const char *const op_names[] = {
	"Unknown",        "Any",   "All",      "Read",          "Write",           "Create",
	"Delete",         "Alter", "Describe", "ClusterAction", "DescribeConfigs", "AlterConfigs",
	"IdempotentWrite"
};
static const char *const perm_names[] = { "Unknown", "Any", "Deny", "Allow" };

#define ACL_NAME(tab, v) ((v) >= 0 && (size_t)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "Unknown")

const char *acl_res_name(int8_t v)
{
	return ACL_NAME(res_names, v);
}
const char *acl_pattern_name(int8_t v)
{
	return ACL_NAME(pattern_names, v);
}
const char *acl_op_name(int8_t v)
{
	return ACL_NAME(op_names, v);
}
const char *acl_perm_name(int8_t v)
{
	return ACL_NAME(perm_names, v);
}

/* Case-insensitive equality ignoring '_' and '-' (ClusterAction = CLUSTER_ACTION = cluster-action). */
static bool acl_name_eq(const char *a, const char *b)
{
	for (;;) {
		while (*a == '_' || *a == '-')
			a++;
		while (*b == '_' || *b == '-')
			b++;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		if (!*a)
			return true;
		a++, b++;
	}
}

static int acl_lookup(const char *const *tab, int n, const char *s)
{
	for (int i = 1; i < n; i++)
		if (acl_name_eq(tab[i], s))
			return i;
	return -1;
}

#define ACL_PARSE(tab, s) acl_lookup(tab, (int)(sizeof(tab) / sizeof(tab[0])), s)

int acl_res_parse(const char *s)
{
	return ACL_PARSE(res_names, s);
}
int acl_pattern_parse(const char *s)
{
	return ACL_PARSE(pattern_names, s);
}
int acl_op_parse(const char *s)
{
	return ACL_PARSE(op_names, s);
}
int acl_perm_parse(const char *s)
{
	return ACL_PARSE(perm_names, s);
}
