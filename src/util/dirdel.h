/*
 * dirdel.h - removing directories off the caller's thread.
 *
 * Deleting a topic unlinks every segment of every partition, which can take
 * long on a big log; the event loop must not wait for it.  The caller first
 * renames each directory out of the way (durably: see util/durable.h), so
 * that a crash at any point leaves nothing under its old name, then hands
 * the new name here with a delay (Kafka's file.delete.delay.ms: readers
 * that still hold the files get time to finish).  One background thread
 * removes each queued directory (the regular files in it, then the
 * directory itself) once its delay has passed.
 * Whatever is still queued at dirdel_stop() or lost in a crash is found
 * again by the owner's start-up scan and queued anew.
 *
 * Single files go the same way: a segment deleted by retention is a file
 * of up to segment.bytes (1 GiB), whose unlink frees its blocks and can
 * take long; it is renamed to <name>.deleted and queued here.
 */
#ifndef GREGOR_UTIL_DIRDEL_H
#define GREGOR_UTIL_DIRDEL_H

#include <stdint.h>

struct dirdel;

/* Starts the thread.  0 or -errno. */
int dirdel_start(struct dirdel **out);
/*
 * Stops the thread after the directory being removed, if any, and frees d;
 * directories still queued are left on disk.
 */
void dirdel_stop(struct dirdel *d);
/*
 * Queues path (copied) for removal delay_ms from now (0: at once; a delay
 * too far to count: never while this process runs).  0 or -ENOMEM.
 */
int dirdel_add(struct dirdel *d, const char *path, int64_t delay_ms);
/* Same for a regular file: unlinked once due (a file already gone is no error). */
int dirdel_add_file(struct dirdel *d, const char *path, int64_t delay_ms);
/*
 * Removes the regular files in path and then path itself, on the calling
 * thread.  0 or the first -errno.
 */
int dirdel_remove(const char *path);

#endif
