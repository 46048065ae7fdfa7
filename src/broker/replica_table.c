/*
 * replica_table.c - the partition states of replication (struct replica,
 * replica.h) in their hash by (topic, partition), and what every part of
 * replication asks of them: find one, visit all, the partition's log.
 * replica.c makes and forgets the states; replica_fetch.c, replica_isr.c
 * and replica_stats.c only read them through here.
 */
#include "broker/replica.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/registry.h"
#include "broker/replica_int.h"

static uint32_t repl_hash(const char *topic, int32_t len, int32_t partition)
{
	uint32_t h = 2166136261u;

	for (int32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)topic[i]) * 16777619u;
	return (h ^ (uint32_t)partition) * 16777619u;
}

struct replica **repl_slot(struct repl *rp, const char *topic, int32_t len, int32_t partition)
{
	struct replica **pp = &rp->buckets[repl_hash(topic, len, partition) % REPL_BUCKETS];

	while (*pp && !((*pp)->partition == partition && strlen((*pp)->topic) == (size_t)len &&
			memcmp((*pp)->topic, topic, (size_t)len) == 0))
		pp = &(*pp)->next;
	return pp;
}

struct replica *replica_find(struct broker *b, const char *topic, int32_t partition)
{
	return b->repl ? *repl_slot(b->repl, topic, (int32_t)strlen(topic), partition) : NULL;
}

int32_t replica_leader(void *arg, const char *topic, int32_t len, int32_t partition)
{
	struct broker *b = arg;
	struct replica *r = b->repl ? *repl_slot(b->repl, topic, len, partition) : NULL;

	if (r && r->leader == b->node_id && r->applied_epoch != r->leader_epoch)
		return -1; /* not serving until the role is applied to the log (its high watermark bound) */
	return r ? r->leader : -2;
}

int32_t replica_isr_size(struct broker *b, const char *topic, int32_t partition)
{
	struct replica *r = replica_find(b, topic, partition);

	return r ? r->isr.n : 1;
}

bool replica_acks_all_waits(struct broker *b, const char *topic, int32_t partition)
{
	struct replica *r = replica_find(b, topic, partition);

	return r && r->isr.n > 1;
}

void repl_foreach(struct repl *rp, void (*fn)(struct repl *rp, struct replica *r, void *arg), void *arg)
{
	for (int i = 0; i < REPL_BUCKETS; i++)
		for (struct replica *r = rp->buckets[i], *next; r; r = next) {
			next = r->next;
			fn(rp, r, arg);
		}
}

struct part *repl_part(struct repl *rp, const struct replica *r)
{
	struct topic *t = registry_find(rp->b->reg, kstr_c(r->topic));

	if (!t || r->partition >= t->nparts || registry_dir_failed(rp->b->reg))
		return NULL;
	return t->parts[r->partition];
}

int repl_ids_set(struct replica_ids *ids, const struct int32_array *in)
{
	int32_t n = in->n > 0 ? in->n : 0;
	int32_t *v = malloc((size_t)(n ? n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (n)
		memcpy(v, in->v, (size_t)n * sizeof(*v));
	free(ids->v);
	ids->v = v;
	ids->n = n;
	return 0;
}
