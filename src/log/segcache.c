/* segcache.c - LRU list of open sealed segments (see segcache.h). */
#include "log/segcache.h"

#include <assert.h>
#include <stddef.h>

void segcache_init(struct segcache *c, int cap, segcache_evict_fn *evict)
{
	c->head.prev = c->head.next = &c->head;
	c->n = 0;
	c->cap = cap > 0 ? cap : 1;
	c->evict = evict;
	c->opens = c->evictions = 0;
}

static void segcache_unlink(struct segcache *c, struct segcache_node *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->prev = node->next = NULL;
	c->n--;
	assert(c->n >= 0);
}

/* Evicts from the least recently used end until at most cap nodes are left, keeping keep. */
static void segcache_trim(struct segcache *c, const struct segcache_node *keep)
{
	while (c->n > c->cap) {
		struct segcache_node *lru = c->head.prev;

		if (lru == keep)
			break; /* cannot happen: keep was just made the most recent and cap >= 1 */
		segcache_unlink(c, lru);
		c->evictions++;
		c->evict(lru);
	}
}

void segcache_touch(struct segcache *c, struct segcache_node *node)
{
	if (segcache_has(node)) {
		if (c->head.next == node)
			return;
		node->prev->next = node->next;
		node->next->prev = node->prev;
	} else {
		c->n++;
		c->opens++;
	}
	node->prev = &c->head;
	node->next = c->head.next;
	c->head.next->prev = node;
	c->head.next = node;
	segcache_trim(c, node);
}

void segcache_remove(struct segcache *c, struct segcache_node *node)
{
	if (segcache_has(node))
		segcache_unlink(c, node);
}

void segcache_resize(struct segcache *c, int cap)
{
	c->cap = cap > 0 ? cap : 1;
	segcache_trim(c, NULL);
}
