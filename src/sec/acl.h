/*
 * acl.h - Kafka's ACL model: bindings, filters and the authorization
 * decision, with no knowledge of requests, sockets or files.
 *
 * A binding says: principal P from host H is allowed (or denied) operation
 * O on the resources of one type whose name matches a pattern (literal,
 * the literal wildcard "*", or a prefix).  The numbers are Kafka's wire
 * values (CreateAcls, DescribeAcls, DeleteAcls), so bindings go to and from
 * the protocol without translation.
 *
 * The decision (acl_authorize) follows Kafka's AclAuthorizer:
 *   1. a super user is allowed everything;
 *   2. a deny binding matching principal (or User:*), host (or *) and
 *      operation (or All) refuses, whatever allows;
 *   3. with no binding at all on the resource, allow.everyone.if.no.acl.found
 *      decides;
 *   4. an allow binding matching principal, host and operation allows;
 *      Describe is allowed by an allow of Read, Write, Delete or Alter,
 *      DescribeConfigs by an allow of AlterConfigs (never for deny).
 *   5. otherwise refused.
 */
#ifndef GREGOR_SEC_ACL_H
#define GREGOR_SEC_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's ResourceType values */
enum {
	ACL_RES_UNKNOWN = 0,
	ACL_RES_ANY = 1,
	ACL_RES_TOPIC = 2,
	ACL_RES_GROUP = 3,
	ACL_RES_CLUSTER = 4,
	ACL_RES_TRANSACTIONAL_ID = 5,
};
/* Kafka's PatternType values */
enum {
	ACL_PAT_UNKNOWN = 0,
	ACL_PAT_ANY = 1,
	ACL_PAT_MATCH = 2,
	ACL_PAT_LITERAL = 3,
	ACL_PAT_PREFIXED = 4,
};
/* Kafka's AclOperation values */
enum {
	ACL_OP_UNKNOWN = 0,
	ACL_OP_ANY = 1,
	ACL_OP_ALL = 2,
	ACL_OP_READ = 3,
	ACL_OP_WRITE = 4,
	ACL_OP_CREATE = 5,
	ACL_OP_DELETE = 6,
	ACL_OP_ALTER = 7,
	ACL_OP_DESCRIBE = 8,
	ACL_OP_CLUSTER_ACTION = 9,
	ACL_OP_DESCRIBE_CONFIGS = 10,
	ACL_OP_ALTER_CONFIGS = 11,
	ACL_OP_IDEMPOTENT_WRITE = 12,
};
/* Kafka's AclPermissionType values */
enum {
	ACL_PERM_UNKNOWN = 0,
	ACL_PERM_ANY = 1,
	ACL_PERM_DENY = 2,
	ACL_PERM_ALLOW = 3,
};

#define ACL_WILDCARD "*"
#define ACL_CLUSTER_NAME "kafka-cluster" /* the one cluster resource's name */
#define ACL_BINDINGS_MAX 100000          /* bound on the bindings kept */

/* One binding; the strings are NUL-terminated (malloc()ed inside a set). */
struct acl_binding {
	int8_t res_type;
	int8_t pattern; /* LITERAL or PREFIXED */
	int8_t op;
	int8_t perm; /* ALLOW or DENY */
	char *name;
	char *principal; /* "User:alice", "User:*" */
	char *host;      /* "*" or an IP address */
};

/*
 * A filter (DescribeAcls, DeleteAcls): ANY values and NULL strings match
 * everything; pattern MATCH matches the literal name, the literal "*" and
 * every prefix of name (what applies to that resource).
 */
struct acl_filter {
	int8_t res_type, pattern, op, perm;
	const char *name, *principal, *host; /* NULL: any */
};

/* A set of distinct bindings: acl_set_init ... acl_set_release. */
struct acl_set {
	struct acl_binding *v;
	int n, cap;
};

/* The question: may principal from host do op on resource res_type/name? */
struct acl_request {
	const char *principal; /* "User:alice", "User:ANONYMOUS" */
	const char *host;
	int8_t res_type;
	const char *name;
	int8_t op;
};

/* The authorizer's settings. */
struct acl_policy {
	const char *super_users; /* super.users: principals separated by ';', NULL: none */
	bool allow_everyone_if_no_acl_found;
};

void acl_set_init(struct acl_set *s);
void acl_set_release(struct acl_set *s);
/* Adds a copy of b unless an equal binding is there: 1 added, 0 already there, -ENOMEM, -ENOSPC (full). */
int acl_set_add(struct acl_set *s, const struct acl_binding *b);
/* Index of a binding equal to b, or -1. */
int acl_set_find(const struct acl_set *s, const struct acl_binding *b);
/* Removes binding i (the last one takes its place). */
void acl_set_remove(struct acl_set *s, int i);
/* Whether a and b hold the same bindings (in any order). */
bool acl_set_same(const struct acl_set *a, const struct acl_set *b);
/* Makes dst a copy of src (dst initialised, emptied first): 0 or -ENOMEM (dst then empty). */
int acl_set_copy(struct acl_set *dst, const struct acl_set *src);

/*
 * NULL if b may be stored (CreateAcls), else why not: a type, pattern,
 * operation or permission that is not a concrete one, a cluster resource
 * not named kafka-cluster, an empty name, a principal without a type.
 */
const char *acl_binding_check(const struct acl_binding *b);
/* NULL if f is a usable filter, else why not (an UNKNOWN value). */
const char *acl_filter_check(const struct acl_filter *f);
bool acl_filter_match(const struct acl_filter *f, const struct acl_binding *b);
/* Whether binding b applies to resource res_type/name (pattern matching). */
bool acl_applies(const struct acl_binding *b, int8_t res_type, const char *name);
/* Whether principal is one of policy's super users. */
bool acl_is_super(const struct acl_policy *p, const char *principal);
/* The decision described at the top. */
bool acl_authorize(const struct acl_set *s, const struct acl_policy *p, const struct acl_request *rq);

/*
 * Whether rq's principal may do rq->op on some resource of rq->res_type
 * (rq->name unused), as Kafka's authorizeByResourceType: a super user, or
 * an allow binding of that type for principal, host and op (or All) whose
 * pattern no deny binding covers (a deny on the literal "*" covers all; a
 * deny on a prefix covers the literals and prefixes starting with it).
 */
bool acl_authorize_any(const struct acl_set *s, const struct acl_policy *p, const struct acl_request *rq);

/* Kafka's names ("Topic", "LITERAL", "Read", "Allow") and back (-1: unknown; case-insensitive). */
const char *acl_res_name(int8_t res_type);
const char *acl_pattern_name(int8_t pattern);
const char *acl_op_name(int8_t op);
const char *acl_perm_name(int8_t perm);
int acl_res_parse(const char *s);
int acl_pattern_parse(const char *s);
int acl_op_parse(const char *s);
int acl_perm_parse(const char *s);

#endif
