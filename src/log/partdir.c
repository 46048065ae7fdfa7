/*
 * partdir.c - a partition's directory and the removal of its files: the
 * directory descriptor shared by everything that renames or syncs in it,
 * and a deleted segment's files renamed <name>.deleted and handed to the
 * background deleter (retain.c explains why).  Used by the partition, its
 * retention, truncation and compaction, and uses none of them.
 */
#include "log/partition.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log/part_int.h"
#include "util/dirdel.h"
#include "util/log.h"

int part_dir_hold(struct part *part)
{
	if (!part->dir_holds) {
		part->dir_fd = open(part->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (part->dir_fd < 0)
			return -errno;
	}
	part->dir_holds++;
	return part->dir_fd;
}

void part_dir_release(struct part *part)
{
	if (--part->dir_holds == 0) {
		close(part->dir_fd);
		part->dir_fd = -1;
	}
}

void part_discard_file(struct part *part, const char *name, int64_t delay_ms)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", part->dir, name);
	if (part->cfg.deleter && dirdel_add_file(part->cfg.deleter, path, delay_ms) == 0)
		return;
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("log: cannot unlink '%s': %s", path, strerror(errno));
}

void part_delete_seg_files(struct part *part, int64_t base)
{
	static const char *const exts[] = { ".index", ".timeindex", TXNIDX_EXT, ".log" };
	char name[64], gone[64 + sizeof(PART_DELETED_SUFFIX)];
	bool held = part->cfg.deleter && part_dir_hold(part) >= 0;

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		snprintf(name, sizeof(name), "%020" PRId64 "%s", base, exts[i]);
		snprintf(gone, sizeof(gone), "%s%s", name, PART_DELETED_SUFFIX);
		if (!held) {
			part_discard_file(part, name, 0);
		} else if (renameat(part->dir_fd, name, part->dir_fd, gone) == 0) {
			part_discard_file(part, gone, part->cfg.file_delete_delay_ms);
		} else if (errno != ENOENT) {
			log_warn("log: cannot rename '%s/%s': %s", part->dir, name, strerror(errno));
			part_discard_file(part, name, 0);
		}
	}
	if (held)
		part_dir_release(part);
}
