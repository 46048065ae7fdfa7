/*
 * aclzk.h - the ACLs of a cluster in ZooKeeper, in Kafka's ZooKeeper-mode
 * layout, so every broker enforces the same ACLs and Kafka's tools read
 * them:
 *
 *   /kafka-acl/<ResourceType>/<name>                    LITERAL patterns
 *   /kafka-acl-extended/prefixed/<ResourceType>/<name>  PREFIXED patterns
 *       {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
 *                             "operation":"Read","host":"*"}, ...]}
 *   /kafka-acl-changes/acl_changes_<seq>                 a LITERAL resource changed: "Topic:t1"
 *   /kafka-acl-extended-changes/acl_changes_<seq>        a PREFIXED one changed:
 *       {"version":1,"resourceType":"Topic","name":"logs-","patternType":"PREFIXED"}
 *
 * <ResourceType> is Kafka's name (Topic, Group, Cluster, TransactionalId).
 * Every broker watches both change paths; any notification (and every new
 * session) makes it read all the ACL znodes again and hand the whole set
 * to on_loaded, so a broker that was away catches up.  A change written
 * here sets each changed resource's znode to its whole ACL list (an empty
 * list when its last ACL went) and adds a notification, per resource in one
 * multi-op.  Two brokers changing the same resource at the same moment may
 * lose one change (Kafka retries on the znode version; not done here).
 * Notifications are not purged.  Loop thread only.
 */
#ifndef GREGOR_CLUSTER_ACLZK_H
#define GREGOR_CLUSTER_ACLZK_H

#include <stdbool.h>

#include "sec/acl.h"

struct zk;

/* The ACLs read from ZooKeeper; set is the callee's to keep (acl_set_release when done). */
typedef void aclzk_loaded_fn(void *arg, struct acl_set *set);
/* A write finished: err 0, or -EIO / -ENOTCONN. */
typedef void aclzk_done_fn(void *arg, int err);

struct aclzk {
	struct zk *zk;
	aclzk_loaded_fn *on_loaded; /* NULL: ACLs not followed (no authorizer) */
	void *arg;
	unsigned seq; /* the latest reload begun; older ones are dropped */
	bool stopped;
};

void aclzk_init(struct aclzk *az, struct zk *zk, aclzk_loaded_fn *on_loaded, void *arg);
/* Watches the change paths and reads every ACL (at registration, and on a change event). */
void aclzk_run(struct aclzk *az);
/* True for the paths whose child events aclzk_run() follows. */
bool aclzk_watches(const char *path);
void aclzk_stop(struct aclzk *az);
/*
 * Writes the resources whose ACLs differ between prev and next.  done runs
 * once on the loop thread (at once with 0 when nothing differs); 0, or
 * -ENOMEM / -ENOTCONN (done never runs).
 */
int aclzk_write(struct aclzk *az, const struct acl_set *prev, const struct acl_set *next, aclzk_done_fn *done,
		void *arg);

#endif
