/*
 * topic_zk.c - a new topic's znodes in cluster mode (topic_zk.h).
 *
 * Kafka draws the start index and the replica shift of the assignment at
 * random for each topic so that leaders of small topics do not all land
 * on the first broker; so does this.  Manual assignments (CreateTopics
 * Assignments) are written as given, after h_admin.c checked them.
 */
#include "broker/topic_zk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker/broker.h"
#include "cluster/assign.h"
#include "cluster/znode.h"

int topic_zk_live(const struct broker *b)
{
	const struct cluster_broker *cb;

	return b->cluster ? cluster_brokers(b->cluster, &cb) : 1;
}

bool topic_zk_is_live(const struct broker *b, int32_t id)
{
	const struct cluster_broker *cb;
	int n;

	if (!b->cluster)
		return id == b->node_id;
	n = cluster_brokers(b->cluster, &cb);
	for (int i = 0; i < n; i++)
		if (cb[i].id == id)
			return true;
	return false;
}

/* OUT: replicas[nparts * rf], from the request's Assignments or Kafka's algorithm. */
static int topic_zk_assign(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
			   int32_t *replicas)
{
	const struct cluster_broker *cb;
	struct assign_broker *ab;
	int n = cluster_brokers(rq->b->cluster, &cb);
	uint32_t r[2];

	if (in->Assignments.n > 0) {
		for (int32_t i = 0; i < in->Assignments.n; i++) {
			const struct CreateTopicsRequestAssignment *a = &in->Assignments.v[i];

			for (int32_t j = 0; j < rf && j < a->BrokerIds.n; j++)
				replicas[(size_t)a->PartitionIndex * (size_t)rf + (size_t)j] = a->BrokerIds.v[j];
		}
		return 0;
	}
	ab = req_alloc(rq, (size_t)(n > 0 ? n : 1), sizeof(*ab));
	for (int i = 0; i < n; i++) {
		ab[i].id = cb[i].id;
		ab[i].rack = cb[i].has_rack ? cb[i].rack : NULL;
	}
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		r[0] = (uint32_t)random();
		r[1] = (uint32_t)random();
	}
	return assign_replicas(ab, n, 0, nparts, rf, r[0], r[1], replicas);
}

int topic_zk_create(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
		    const struct kuuid *id, cluster_done_fn *done, void *arg)
{
	int32_t *replicas = req_alloc(rq, (size_t)nparts * (size_t)rf, sizeof(*replicas));
	const char **names = req_alloc(rq, (size_t)(in->Configs.n > 0 ? in->Configs.n : 1), sizeof(*names));
	const char **values = req_alloc(rq, (size_t)(in->Configs.n > 0 ? in->Configs.n : 1), sizeof(*values));
	char idtext[UUID_B64_LEN + 1], *assignment = NULL, *config = NULL;
	int rc = topic_zk_assign(rq, in, nparts, rf, replicas);

	if (rc < 0)
		return rc;
	for (int32_t i = 0; i < in->Configs.n; i++) {
		names[i] = req_cstr(rq, in->Configs.v[i].Name);
		values[i] = req_cstr(rq, in->Configs.v[i].Value);
	}
	uuid_to_b64(id, idtext);
	assignment = znode_topic_encode(replicas, nparts, rf, idtext);
	config = znode_topic_config_encode(names, values, in->Configs.n > 0 ? in->Configs.n : 0);
	rc = assignment && config
		     ? cluster_topic_create(rq->b->cluster, req_cstr(rq, in->Name), assignment, config, done, arg)
		     : -ENOMEM;
	free(assignment);
	free(config);
	return rc;
}

int topic_zk_autocreate(struct req *rq, struct kstr name, int32_t nparts, const struct kuuid *id, cluster_done_fn *done,
			void *arg)
{
	struct CreateTopicsRequestTopic in;

	CreateTopicsRequestTopic_init(&in);
	in.Name = name;
	in.NumPartitions = nparts;
	in.ReplicationFactor = 1;
	return topic_zk_create(rq, &in, nparts, 1, id, done, arg);
}
