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
 *
 * A failed sync is final (docs/durability.md, "When a sync fails"): the
 * kernel may have dropped the pages it could not write, so a later sync
 * that succeeds proves nothing.  Every fsync/fdatasync of the broker's
 * files goes through durable_fsync()/durable_fdatasync(), which latch the
 * first failure (durable_failed()) and report each one to the hook the
 * owner of the log directory registers (durable_on_fail()), so a failure
 * anywhere (a segment, an index, a snapshot, a checkpoint, a directory
 * entry) takes the directory offline, not only the one file's owner.
 */
#ifndef GREGOR_UTIL_DURABLE_H
#define GREGOR_UTIL_DURABLE_H

#include <stdbool.h>
#include <stddef.h>

/* Told that a sync failed with err (-errno); called on the failing thread. */
typedef void durable_fail_fn(void *arg, int err);

/*
 * Registers fn (NULL: none) to hear of every failed sync from now on.  Set
 * before the threads that sync start, cleared after they stopped.
 */
void durable_on_fail(durable_fail_fn *fn, void *arg);
/* True once any sync through this file failed (for the life of the process). */
bool durable_failed(void);
/* fsync(fd) / fdatasync(fd); 0 or -errno, a failure reported as above. */
int durable_fsync(int fd);
int durable_fdatasync(int fd);

/*
 * Replaces the file name (relative to dir_fd, a directory opened
 * O_RDONLY|O_DIRECTORY) with the len bytes at data.  0 or -errno; on error
 * the old file is untouched and the temp file removed.
 */
int durable_replace(int dir_fd, const char *name, const void *data, size_t len);
/*
 * durable_replace() without its two fsyncs, for many files replaced at
 * once and made durable together by one durable_syncfs() after (a clean
 * shutdown's producer snapshots).  Until then a crash may leave the old
 * file, the new one, or a torn new one: only for files whose reader
 * checks them.
 */
int durable_replace_unsynced(int dir_fd, const char *name, const void *data, size_t len);
/* Same as durable_replace, for a path "dir/name" given whole (the directory is opened here). */
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

/*
 * Many new files at once (creating topics by the thousand): each is
 * written with durable_write_new(), not synced, and one durable_syncfs()
 * then makes every file's bytes and every directory entry made so far on
 * that file system durable, instead of two fsyncs per file.  syncfs(2)
 * reports a writeback error of any file of the file system since fd was
 * opened (Linux 5.8 on), so a long-lived fd sees every one; a failure is
 * reported as above.
 */
/* Writes path (created or truncated) with the len bytes at data, without syncing.  0 or -errno. */
int durable_write_new(const char *path, const void *data, size_t len);
/* syncfs(fd): flushes the whole file system holding fd.  0 or -errno. */
int durable_syncfs(int fd);

#endif
