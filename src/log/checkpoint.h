/*
 * checkpoint.h - small text files replaced atomically (Kafka's checkpoint
 * files) through util/durable.h: written to <name>.tmp, fsynced, renamed
 * over <name>, and the directory fsynced, so a crash leaves either the old
 * or the new file.
 */
#ifndef GREGOR_LOG_CHECKPOINT_H
#define GREGOR_LOG_CHECKPOINT_H

#include <stddef.h>

/* Replaces name in dir_fd (a directory opened O_DIRECTORY) with text.  0 or -errno. */
int checkpoint_write(int dir_fd, const char *name, const char *text);
/*
 * Reads dir/name into buf (NUL-terminated, at most cap - 1 bytes).
 * Returns the length, -ENOENT if absent, -EFBIG if larger, or -errno.
 */
int checkpoint_read(const char *dir, const char *name, char *buf, size_t cap);

#endif
