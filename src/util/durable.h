/*
 * durable.h - making files and directory entries survive a power cut.
 *
 * A file's bytes are durable after fsync of the file; its name (creation,
 * rename, removal) only after fsync of the directory holding it.  Every
 * checkpoint, snapshot and metadata file the broker replaces goes through
 * durable_replace(), so a crash leaves either the old or the new file, never
 * a torn one or none:
 *
 *   write <name>.tmp, fsync it, rename it over <name>, fsync the directory
 *
 * A leftover <name>.tmp (crash before the rename) is garbage; its owner
 * removes it when it next opens the directory.
 */
#ifndef GREGOR_UTIL_DURABLE_H
#define GREGOR_UTIL_DURABLE_H

#include <stddef.h>

/*
 * Replaces the file name (relative to dir_fd, a directory opened
 * O_RDONLY|O_DIRECTORY) with the len bytes at data.  0 or -errno; on error
 * the old file is untouched and the temp file removed.
 */
int durable_replace(int dir_fd, const char *name, const void *data, size_t len);
/* Same, for a path "dir/name" given whole (the directory is opened here). */
int durable_replace_path(const char *path, const void *data, size_t len);
/* fsync of the directory at path.  0 or -errno. */
int durable_sync_dir(const char *path);
/* fsync of the directory holding path (its parent).  0 or -errno. */
int durable_sync_parent(const char *path);
/*
 * mkdir(path) and, when it was created, fsync of its parent so the new
 * entry survives a crash.  An existing directory is not an error.
 */
int durable_mkdir(const char *path, unsigned mode);
/* rename(from, to) within one directory, then fsync of that directory. */
int durable_rename(const char *from, const char *to);

#endif
