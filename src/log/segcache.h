/*
 * segcache.h - the bounded cache of open sealed segments, least recently
 * used first out.
 *
 * A sealed segment holds no descriptor and no index mapping while nobody
 * reads it: the first read opens its .log and maps its indexes (segment.c,
 * seg_use()), and the segment then sits in this cache.  Past the cache's
 * capacity (log.segment.fd.cache.size) the least recently used segment is
 * evicted: its evict callback drops the cache's reference to the .log and
 * unmaps the indexes.  A reader still sending from that .log holds its own
 * fdref (util/fdref.h), so the descriptor stays open until that reader is
 * done: an eviction never closes a file under a reader.
 *
 * The cache only orders nodes and counts them; what a node holds is the
 * evict callback's business.  Nodes are intrusive (embedded in struct seg):
 * touching, inserting and removing are O(1).  Not thread-safe: the
 * event-loop thread, which owns segments, is its only user.
 */
#ifndef GREGOR_LOG_SEGCACHE_H
#define GREGOR_LOG_SEGCACHE_H

#include <stdbool.h>
#include <stdint.h>

struct segcache_node {
	struct segcache_node *prev, *next; /* NULL both while not cached */
};

typedef void segcache_evict_fn(struct segcache_node *node);

struct segcache {
	struct segcache_node head; /* head.next most recently used, head.prev least */
	int n;                     /* nodes cached */
	int cap;                   /* at most this many (at least 1) */
	segcache_evict_fn *evict;  /* called on a node pushed out, after it left the list */
	uint64_t opens;            /* nodes inserted */
	uint64_t evictions;        /* nodes pushed out by capacity */
};

void segcache_init(struct segcache *c, int cap, segcache_evict_fn *evict);
static inline bool segcache_has(const struct segcache_node *node)
{
	return node->next != 0;
}
/*
 * Makes node the most recently used, inserting it if it was not cached,
 * then evicts least recently used nodes while more than cap are cached
 * (never node itself).
 */
void segcache_touch(struct segcache *c, struct segcache_node *node);
/* Takes node out of the cache without calling evict (its owner is closing it); no-op if not cached. */
void segcache_remove(struct segcache *c, struct segcache_node *node);
/* Changes the capacity (below 1 counts as 1), evicting down to it. */
void segcache_resize(struct segcache *c, int cap);

#endif
