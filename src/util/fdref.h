/*
 * fdref.h - a reference-counted file descriptor.
 *
 * Segment files are read by sendfile(2) long after the request that asked
 * for them was handled; retention may delete the segment meanwhile.  Each
 * queued slice holds a reference, and the fd is closed when the last one
 * goes.  Counts are atomic: the flusher thread holds references too.
 */
#ifndef GREGOR_UTIL_FDREF_H
#define GREGOR_UTIL_FDREF_H

struct fdref {
	int fd;
	int refs; /* accessed with __atomic builtins */
};

/* Takes ownership of fd; returns NULL on ENOMEM (fd is then closed). */
struct fdref *fdref_new(int fd);
struct fdref *fdref_get(struct fdref *ref);
/* Drops one reference; closes the fd and frees at zero. */
void fdref_put(struct fdref *ref);

#endif
