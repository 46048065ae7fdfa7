/*
 * arena.h - a per-request bump allocator (nginx pools).
 *
 * Decoded arrays and anything else that lives exactly as long as one
 * request come from its arena and are freed in one arena_release().
 * Allocation failure returns NULL; callers treat it like a malformed
 * request (the connection is closed), never crash.
 */
#ifndef GREGOR_UTIL_ARENA_H
#define GREGOR_UTIL_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head;
	size_t bytes;     /* total allocated from the system */
	size_t bytes_max; /* 0 = unlimited */
};

void arena_init(struct arena *a, size_t bytes_max);
void arena_release(struct arena *a);
/* Zeroed, 16-byte aligned memory; NULL on ENOMEM or past bytes_max. */
void *arena_alloc(struct arena *a, size_t n);
void *arena_calloc(struct arena *a, size_t count, size_t size);
/* Copies a string into the arena, NUL-terminated. */
char *arena_strndup(struct arena *a, const char *s, size_t n);

#endif
