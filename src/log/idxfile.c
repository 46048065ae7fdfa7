/* idxfile.c - map, extend and sync a fixed-size-entry index file (shape in idxfile.h). */
#include "log/idxfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDXFILE_MIN_MAP 4096 /* the first mapping of a writable index: one page of entries */

void idxfile_put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

uint64_t idxfile_get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static void idxfile_init(struct idxfile *f, int32_t max_n, uint32_t disk_size)
{
	f->path = NULL;
	f->raw = NULL;
	f->map_len = 0;
	f->n = f->cap = 0;
	f->max_n = max_n > 0 ? max_n : 1;
	f->disk_size = disk_size;
	f->bad = false;
}

/* Entries in a file of size bytes, or -1 (sets bad) if the size is not a whole number of them. */
static int32_t idxfile_count(struct idxfile *f, int64_t size)
{
	f->bad = size % f->disk_size != 0 || size > (int64_t)INT32_MAX;
	return f->bad ? -1 : (int32_t)(size / f->disk_size);
}

static void idxfile_unmap(struct idxfile *f)
{
	if (f->raw)
		munmap(f->raw, f->map_len);
	f->raw = NULL;
	f->map_len = 0;
	f->cap = 0;
}

/*
 * Writable: maps (or remaps) the file fd with room for at least want
 * entries, doubling, and with reserve, reserves the blocks under the room
 * past the file's end (without, the room is not used: cap is want).
 * 0 or -errno (the old mapping stays).
 */
static int idxfile_room(struct idxfile *f, int fd, int32_t want, bool reserve)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = f->map_len ? f->map_len : IDXFILE_MIN_MAP;
	void *p;

	while (len / f->disk_size < (size_t)want)
		len *= 2;
	len = (len + page - 1) / page * page;
	if (reserve && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)len) < 0 && errno != EOPNOTSUPP)
		return -errno;
	if (f->raw)
		p = mremap(f->raw, f->map_len, len, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	f->raw = p;
	f->map_len = len;
	f->cap = reserve ? (int32_t)(len / f->disk_size) : want;
	return 0;
}

int idxfile_open(struct idxfile *f, const char *path, int32_t max_n, bool trunc, bool lazy, uint32_t disk_size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | (lazy ? 0 : O_CREAT) | (trunc ? O_TRUNC : 0), 0644);
	struct stat st;
	int32_t n;
	int rc = 0;

	idxfile_init(f, max_n, disk_size);
	if (fd < 0 && (errno != ENOENT || !lazy))
		return -errno;
	f->path = strdup(path);
	if (!f->path)
		rc = -ENOMEM;
	else if (fd < 0)
		return 0; /* no file yet: the first entry makes it */
	else if (fstat(fd, &st) < 0)
		rc = -errno;
	else if ((n = idxfile_count(f, st.st_size)) > 0 && !(rc = idxfile_room(f, fd, n, false)))
		f->n = n; /* nothing reserved until an entry is added: an idle segment costs no blocks */
	close(fd);
	if (rc)
		idxfile_close(f);
	return rc;
}

int idxfile_map(struct idxfile *f, const char *path, uint32_t disk_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int32_t n;
	void *p;
	int rc = 0;

	idxfile_init(f, 0, disk_size);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	n = idxfile_count(f, st.st_size);
	if (n <= 0)
		goto out_close;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out_close;
	}
	f->raw = p;
	f->map_len = (size_t)st.st_size;
	f->n = n;
out_close:
	close(fd);
	return rc;
}

/*
 * Writable: frees the blocks reserved past the file's end (ext4 drops them
 * on a truncate, even to the same size); the next entry reserves anew.
 */
static void idxfile_trim(struct idxfile *f)
{
	if (f->path && f->cap > f->n && truncate(f->path, (off_t)f->n * f->disk_size) == 0)
		f->cap = f->n;
}

void idxfile_close(struct idxfile *f)
{
	idxfile_trim(f); /* harmless if it fails: a renamed (cleaned) file keeps a few blocks */
	idxfile_unmap(f);
	free(f->path);
	f->path = NULL;
	f->n = 0;
}

void idxfile_park(struct idxfile *f)
{
	if (f->path) {
		idxfile_trim(f);
		idxfile_unmap(f);
	}
}

int idxfile_wake(struct idxfile *f)
{
	int fd, rc;

	if (!f->path || f->raw || !f->n)
		return 0;
	fd = open(f->path, O_RDWR | O_CLOEXEC);
	rc = fd < 0 ? -errno : idxfile_room(f, fd, f->n, false);
	if (fd >= 0)
		close(fd);
	if (rc)
		f->n = 0;
	return rc;
}

/* Writable: room for one more entry (mapping a parked file), opening the file only when the mapping must grow. */
static int idxfile_reserve(struct idxfile *f)
{
	int fd, rc;

	if (f->n < f->cap)
		return 0;
	fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644); /* a lazy index's first entry makes the file */
	if (fd < 0)
		return -errno;
	rc = idxfile_room(f, fd, f->n + 1, true);
	close(fd);
	return rc;
}

int idxfile_append(struct idxfile *f, const uint8_t *raw)
{
	int rc = idxfile_reserve(f);

	if (rc)
		return rc;
	if (truncate(f->path, (off_t)(f->n + 1) * f->disk_size) < 0)
		return -errno;
	memcpy(f->raw + (size_t)f->n * f->disk_size, raw, f->disk_size);
	f->n++;
	return 0;
}

int idxfile_reset(struct idxfile *f)
{
	f->n = 0;
	f->bad = false;
	idxfile_unmap(f); /* truncating frees the reserved blocks: the next entry reserves anew */
	return truncate(f->path, 0) < 0 && errno != ENOENT ? -errno : 0;
}

int idxfile_sync(struct idxfile *f, int (*sync_fn)(int fd))
{
	int fd, rc;

	idxfile_trim(f);
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !f->n ? 0 : -errno; /* a lazy index with no entry has no file */
	rc = sync_fn(fd);
	close(fd);
	return rc;
}
