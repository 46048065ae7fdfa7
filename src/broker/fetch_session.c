/*
 * fetch_session.c - the incremental fetch session cache (see
 * fetch_session.h).
 *
 * Sessions are found by id through a chained hash table that doubles with
 * the session count, and kept on one least-recently-used list, so touching
 * and expiring are O(1) per session.  Choosing a victim among sessions
 * that are not stale walks every session, which happens only when the
 * cache is full and a new session is asked for.
 *
 * Each session keeps its partitions in one array: a doubly linked list
 * through the entries gives the order the fetch is served in, a chained
 * hash on (topic, partition) finds an entry, and freed entries are reused
 * through a free list, so a session that adds and forgets partitions does
 * not grow.
 */
#include "broker/fetch_session.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_SESSION_IDS_MIN 64

static uint32_t fetch_session_hash(const char *topic, int32_t topic_len, int32_t partition)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int32_t i = 0; i < topic_len; i++)
		h = (h ^ (uint8_t)topic[i]) * 16777619u;
	for (int i = 0; i < 4; i++)
		h = (h ^ (uint8_t)((uint32_t)partition >> (8 * i))) * 16777619u;
	return h;
}

int32_t fetch_session_next_epoch(int32_t e)
{
	if (e < 0)
		return FETCH_SESSION_FINAL_EPOCH;
	return e == INT32_MAX ? 1 : e + 1;
}

/* ---- the cache: ids and the LRU list ---- */

int fetch_session_cache_init(struct fetch_session_cache *cache, int32_t slots_max, int64_t eviction_ms, uint64_t seed)
{
	*cache = (struct fetch_session_cache){ .slots_max = slots_max,
					       .eviction_ms = eviction_ms,
					       .partitions_max = FETCH_SESSION_PARTITIONS_MAX };
	cache->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	cache->nids = FETCH_SESSION_IDS_MIN;
	cache->ids = calloc((size_t)cache->nids, sizeof(*cache->ids));
	return cache->ids ? 0 : -ENOMEM;
}

static void fetch_session_free(struct fetch_session *sess)
{
	for (int32_t i = 0; i < sess->used; i++)
		free(sess->parts[i].topic);
	free(sess->parts);
	free(sess->buckets);
	free(sess);
}

void fetch_session_cache_release(struct fetch_session_cache *cache)
{
	struct fetch_session *sess = cache->lru_head;

	while (sess) {
		struct fetch_session *next = sess->lru_next;

		fetch_session_free(sess);
		sess = next;
	}
	free(cache->ids);
	cache->ids = NULL;
}

static struct fetch_session **fetch_session_id_head(struct fetch_session_cache *cache, int32_t id)
{
	return &cache->ids[((uint32_t)id * 2654435761u) & (uint32_t)(cache->nids - 1)];
}

struct fetch_session *fetch_session_find(struct fetch_session_cache *cache, int32_t id)
{
	struct fetch_session *sess = *fetch_session_id_head(cache, id);

	while (sess && sess->id != id)
		sess = sess->id_next;
	return sess;
}

static void fetch_session_lru_unlink(struct fetch_session_cache *cache, struct fetch_session *sess)
{
	if (sess->lru_prev)
		sess->lru_prev->lru_next = sess->lru_next;
	else
		cache->lru_head = sess->lru_next;
	if (sess->lru_next)
		sess->lru_next->lru_prev = sess->lru_prev;
	else
		cache->lru_tail = sess->lru_prev;
	sess->lru_prev = sess->lru_next = NULL;
}

static void fetch_session_lru_append(struct fetch_session_cache *cache, struct fetch_session *sess)
{
	sess->lru_prev = cache->lru_tail;
	sess->lru_next = NULL;
	if (cache->lru_tail)
		cache->lru_tail->lru_next = sess;
	else
		cache->lru_head = sess;
	cache->lru_tail = sess;
}

void fetch_session_remove(struct fetch_session_cache *cache, struct fetch_session *sess)
{
	struct fetch_session **pp = fetch_session_id_head(cache, sess->id);

	while (*pp != sess)
		pp = &(*pp)->id_next;
	*pp = sess->id_next;
	fetch_session_lru_unlink(cache, sess);
	cache->count--;
	cache->partitions -= sess->n;
	fetch_session_free(sess);
}

void fetch_session_touch(struct fetch_session_cache *cache, struct fetch_session *sess, int64_t now_ms)
{
	sess->last_used_ms = now_ms;
	fetch_session_lru_unlink(cache, sess);
	fetch_session_lru_append(cache, sess);
}

int32_t fetch_session_expire(struct fetch_session_cache *cache, int64_t now_ms)
{
	int32_t n = 0;

	while (cache->lru_head && now_ms - cache->lru_head->last_used_ms > cache->eviction_ms) {
		fetch_session_remove(cache, cache->lru_head);
		cache->evictions++;
		n++;
	}
	return n;
}

/* Kafka's EvictableKey order: (privileged, size, id). */
static int fetch_session_worth_cmp(bool priv_a, int32_t n_a, int32_t id_a, const struct fetch_session *b)
{
	if (priv_a != b->privileged)
		return priv_a ? 1 : -1;
	if (n_a != b->n)
		return n_a < b->n ? -1 : 1;
	return id_a < b->id ? -1 : id_a > b->id;
}

/* May a new session (privileged or not) take sess's slot, if worth enough? */
static bool fetch_session_evictable(const struct fetch_session_cache *cache, const struct fetch_session *sess,
				    bool privileged, int64_t now_ms)
{
	bool old = now_ms - sess->created_ms > cache->eviction_ms;

	return old || (privileged && !sess->privileged);
}

/* Frees a slot for a new session of nparts partitions if the eviction rules allow; true if one was freed. */
static bool fetch_session_evict(struct fetch_session_cache *cache, int64_t now_ms, bool privileged, int32_t nparts)
{
	struct fetch_session *victim = NULL;

	if (!cache->lru_head)
		return false;
	if (now_ms - cache->lru_head->last_used_ms > cache->eviction_ms) {
		victim = cache->lru_head; /* stale */
	} else {
		for (struct fetch_session *s = cache->lru_head; s; s = s->lru_next)
			if (fetch_session_evictable(cache, s, privileged, now_ms) &&
			    (!victim || fetch_session_worth_cmp(s->privileged, s->n, s->id, victim) < 0))
				victim = s;
		if (!victim || fetch_session_worth_cmp(privileged, nparts, 0, victim) < 0)
			return false;
	}
	fetch_session_remove(cache, victim);
	cache->evictions++;
	return true;
}

static int fetch_session_ids_grow(struct fetch_session_cache *cache)
{
	int32_t nids = cache->nids * 2;
	struct fetch_session **ids = calloc((size_t)nids, sizeof(*ids));
	struct fetch_session **old = cache->ids;

	if (!ids)
		return -ENOMEM;
	cache->ids = ids;
	cache->nids = nids;
	for (struct fetch_session *s = cache->lru_head; s; s = s->lru_next) {
		struct fetch_session **head = fetch_session_id_head(cache, s->id);

		s->id_next = *head;
		*head = s;
	}
	free(old);
	return 0;
}

static int32_t fetch_session_new_id(struct fetch_session_cache *cache)
{
	int32_t id;

	do {
		cache->rng ^= cache->rng << 13;
		cache->rng ^= cache->rng >> 7;
		cache->rng ^= cache->rng << 17;
		id = (int32_t)(cache->rng >> 33); /* 31 bits: positive */
	} while (id == FETCH_SESSION_INVALID_ID || fetch_session_find(cache, id));
	return id;
}

int fetch_session_create(struct fetch_session_cache *cache, int64_t now_ms, bool privileged, int32_t nparts,
			 struct fetch_session **sess_out)
{
	struct fetch_session *sess;
	struct fetch_session **head;

	*sess_out = NULL;
	if (cache->count >= cache->slots_max && !fetch_session_evict(cache, now_ms, privileged, nparts))
		return -ENOSPC;
	if (cache->partitions + nparts > cache->partitions_max)
		return -ENOSPC;
	if (cache->count >= cache->nids && fetch_session_ids_grow(cache))
		return -ENOMEM;
	sess = calloc(1, sizeof(*sess));
	if (!sess)
		return -ENOMEM;
	sess->id = fetch_session_new_id(cache);
	sess->epoch = fetch_session_next_epoch(FETCH_SESSION_INITIAL_EPOCH);
	sess->privileged = privileged;
	sess->created_ms = sess->last_used_ms = now_ms;
	sess->generation = ++cache->generation;
	sess->head = sess->tail = sess->free_list = -1;
	head = fetch_session_id_head(cache, sess->id);
	sess->id_next = *head;
	*head = sess;
	fetch_session_lru_append(cache, sess);
	cache->count++;
	*sess_out = sess;
	return 0;
}

/* ---- a session's partitions ---- */

int32_t fetch_session_lookup(const struct fetch_session *sess, const char *topic, int32_t topic_len, int32_t partition)
{
	uint32_t h;

	if (!sess->nbuckets)
		return -1;
	h = fetch_session_hash(topic, topic_len, partition);
	for (int32_t i = sess->buckets[h & (uint32_t)(sess->nbuckets - 1)]; i >= 0; i = sess->parts[i].hnext) {
		const struct fetch_session_part *p = &sess->parts[i];

		if (p->hash == h && p->partition == partition && p->topic_len == topic_len &&
		    memcmp(p->topic, topic, (size_t)topic_len) == 0)
			return i;
	}
	return -1;
}

static void fetch_session_bucket_add(struct fetch_session *sess, int32_t idx)
{
	int32_t *head = &sess->buckets[sess->parts[idx].hash & (uint32_t)(sess->nbuckets - 1)];

	sess->parts[idx].hnext = *head;
	*head = idx;
}

/* Room for one more entry: doubles parts[] and the hash table when full. */
static int fetch_session_reserve(struct fetch_session *sess)
{
	int32_t cap, *buckets;
	struct fetch_session_part *parts;

	if (sess->free_list >= 0 || sess->used < sess->cap)
		return 0;
	cap = sess->cap ? sess->cap * 2 : 8;
	parts = realloc(sess->parts, (size_t)cap * sizeof(*parts));
	if (!parts)
		return -ENOMEM;
	sess->parts = parts;
	sess->cap = cap;
	buckets = malloc((size_t)cap * sizeof(*buckets));
	if (!buckets)
		return -ENOMEM;
	free(sess->buckets);
	sess->buckets = buckets;
	sess->nbuckets = cap;
	for (int32_t i = 0; i < cap; i++)
		buckets[i] = -1;
	for (int32_t i = 0; i < sess->used; i++)
		if (sess->parts[i].topic)
			fetch_session_bucket_add(sess, i);
	return 0;
}

static void fetch_session_order_append(struct fetch_session *sess, int32_t idx)
{
	sess->parts[idx].prev = sess->tail;
	sess->parts[idx].next = -1;
	if (sess->tail >= 0)
		sess->parts[sess->tail].next = idx;
	else
		sess->head = idx;
	sess->tail = idx;
}

static void fetch_session_order_unlink(struct fetch_session *sess, int32_t idx)
{
	struct fetch_session_part *p = &sess->parts[idx];

	if (p->prev >= 0)
		sess->parts[p->prev].next = p->next;
	else
		sess->head = p->next;
	if (p->next >= 0)
		sess->parts[p->next].prev = p->prev;
	else
		sess->tail = p->prev;
}

static void fetch_session_set_req(struct fetch_session_part *p, const struct fetch_session_req *req)
{
	p->fetch_offset = req->fetch_offset;
	p->fetcher_log_start_offset = req->fetcher_log_start_offset;
	p->max_bytes = req->max_bytes;
	p->leader_epoch = req->leader_epoch;
}

int32_t fetch_session_upsert(struct fetch_session_cache *cache, struct fetch_session *sess, const char *topic,
			     int32_t topic_len, int32_t partition, const struct fetch_session_req *req, bool *added)
{
	int32_t idx = fetch_session_lookup(sess, topic, topic_len, partition);
	char *name;

	if (added)
		*added = idx < 0;
	if (idx >= 0) {
		fetch_session_set_req(&sess->parts[idx], req);
		return idx;
	}
	if (cache->partitions >= cache->partitions_max)
		return -ENOSPC;
	name = malloc((size_t)topic_len + 1);
	if (!name || fetch_session_reserve(sess)) {
		free(name);
		return -ENOMEM;
	}
	memcpy(name, topic, (size_t)topic_len);
	name[topic_len] = '\0';
	if (sess->free_list >= 0) {
		idx = sess->free_list;
		sess->free_list = sess->parts[idx].next;
	} else {
		idx = sess->used++;
	}
	sess->parts[idx] = (struct fetch_session_part){ .topic = name,
							.topic_len = topic_len,
							.partition = partition,
							.told = { -1, -1, -1 },
							.hash = fetch_session_hash(topic, topic_len, partition) };
	fetch_session_set_req(&sess->parts[idx], req);
	fetch_session_bucket_add(sess, idx);
	fetch_session_order_append(sess, idx);
	sess->n++;
	cache->partitions++;
	return idx;
}

bool fetch_session_forget(struct fetch_session_cache *cache, struct fetch_session *sess, const char *topic,
			  int32_t topic_len, int32_t partition)
{
	int32_t idx = fetch_session_lookup(sess, topic, topic_len, partition);
	struct fetch_session_part *p;
	int32_t *pp;

	if (idx < 0)
		return false;
	p = &sess->parts[idx];
	pp = &sess->buckets[p->hash & (uint32_t)(sess->nbuckets - 1)];
	while (*pp != idx)
		pp = &sess->parts[*pp].hnext;
	*pp = p->hnext;
	fetch_session_order_unlink(sess, idx);
	free(p->topic);
	p->topic = NULL;
	p->next = sess->free_list;
	sess->free_list = idx;
	sess->n--;
	cache->partitions--;
	return true;
}

void fetch_session_move_last(struct fetch_session *sess, int32_t idx)
{
	assert(sess->parts[idx].topic);
	if (sess->tail == idx)
		return;
	fetch_session_order_unlink(sess, idx);
	fetch_session_order_append(sess, idx);
}

bool fetch_session_must_respond(struct fetch_session_told *told, const struct fetch_session_state *st, bool update)
{
	bool must = st->records_bytes > 0 || st->error_code != 0;

	if (told->high_watermark != st->high_watermark || told->last_stable_offset != st->last_stable_offset ||
	    told->log_start_offset != st->log_start_offset)
		must = true;
	if (update)
		*told = (struct fetch_session_told){ st->error_code ? -1 : st->high_watermark, st->last_stable_offset,
						     st->log_start_offset };
	return must;
}
