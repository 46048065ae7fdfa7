/* fdref.c - reference-counted file descriptors (see fdref.h). */
#include "util/fdref.h"

#include <stdlib.h>
#include <unistd.h>

struct fdref *fdref_new(int fd)
{
	struct fdref *ref = malloc(sizeof(*ref));

	if (!ref) {
		close(fd);
		return NULL;
	}
	ref->fd = fd;
	ref->refs = 1;
	return ref;
}

struct fdref *fdref_get(struct fdref *ref)
{
	__atomic_add_fetch(&ref->refs, 1, __ATOMIC_RELAXED);
	return ref;
}

void fdref_put(struct fdref *ref)
{
	if (!ref)
		return;
	if (__atomic_sub_fetch(&ref->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(ref->fd);
		free(ref);
	}
}
