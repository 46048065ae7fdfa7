/* arena.c - per-request bump allocator (see arena.h). */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK_MIN 4096

void arena_init(struct arena *a, size_t bytes_max)
{
	a->head = NULL;
	a->bytes = 0;
	a->bytes_max = bytes_max;
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->bytes = 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *p;

	if (need < n)
		return NULL;
	if (!c || c->cap - c->used < need) {
		size_t cap = need > ARENA_CHUNK_MIN ? need : ARENA_CHUNK_MIN;

		if (a->bytes_max && a->bytes + cap > a->bytes_max)
			return NULL;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
		a->bytes += cap;
	}
	p = c->data + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
}

void *arena_calloc(struct arena *a, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	return arena_alloc(a, count * size);
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (p && n)
		memcpy(p, s, n);
	return p;
}
