/*
 * fuzz_log.c - a partition directory of arbitrary bytes brought up by
 * part_open() (segment/index recovery, src/log), then read, appended to,
 * closed and opened again.  Invariant checked: what part_close() leaves
 * reopens (fast path) at the same log end offset.
 *
 * Input: byte 0 flags (bit 0: fix batch CRCs in .log files; bit 1: open
 * with recovery point INT64_MAX, i.e. after a clean shutdown; bit 2: append
 * one batch after opening), then records of kind (1 byte), length (3 bytes
 * big-endian), bytes: the kind picks the file (table below).  The files
 * live in a fresh directory under /dev/shm (or $TMPDIR).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "log/partition.h"
#include "proto/records.h"

static const char *const fuzz_log_files[] = {
	"00000000000000000000.log",      "00000000000000000000.index", "00000000000000000000.timeindex",
	"00000000000000000100.log",      "00000000000000000100.index", "00000000000000000100.timeindex",
	"leader-epoch-checkpoint",       "log-start-offset",           "00000000000000000000.snapshot",
	"00000000000000000100.snapshot",
};
#define FUZZ_LOG_NFILES (sizeof(fuzz_log_files) / sizeof(fuzz_log_files[0]))

static char fuzz_dir[256];

static void fuzz_log_clear(void)
{
	DIR *d = opendir(fuzz_dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static void fuzz_log_remove(void)
{
	fuzz_log_clear();
	rmdir(fuzz_dir);
}

static void fuzz_log_write(const char *name, const uint8_t *p, size_t len, bool fix)
{
	char path[512];
	uint8_t *copy = fuzz_dup(p, len);
	int fd;

	if (fix && strstr(name, ".log"))
		fuzz_fix_crcs(copy, len);
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		if (write(fd, copy, len) < 0)
			abort();
		close(fd);
	}
	free(copy);
}

static void fuzz_log_exercise(struct part *part, bool append)
{
	int64_t start = part_log_start_offset(part), leo = part_log_end_offset(part), off, ts;
	struct fslice fs;

	for (int64_t o = start; o <= leo && o < start + 8; o++)
		if (part_read(part, o, leo, 1 << 20, true, &fs) == 0 && fs.ref)
			fdref_put(fs.ref);
	part_offset_for_time(part, 0, &off, &ts);
	part_max_timestamp(part, &off, &ts);
	if (append) {
		struct rec_kv kv = { "k", 1, "value", 5 };
		struct part_append_info info;
		struct wr w;

		wr_init(&w);
		if (records_build(&w, 0, 1700000000000LL, &kv, 1) == 0)
			part_append(part, w.buf, w.len, 1700000000000LL, &info);
		wr_release(&w);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct part_cfg cfg;
	struct part *part;
	size_t at = 1;
	int64_t leo;

	fuzz_quiet();
	if (!fuzz_dir[0]) {
		const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
				  : getenv("TMPDIR")            ? getenv("TMPDIR")
								: "/tmp";

		snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/gregor-fuzz-log-%d", tmp, (int)getpid());
		mkdir(fuzz_dir, 0755);
		atexit(fuzz_log_remove);
	}
	if (size < 1)
		return 0;
	fuzz_log_clear();
	while (size - at >= 4) {
		unsigned kind = data[at];
		size_t len = (size_t)data[at + 1] << 16 | (size_t)data[at + 2] << 8 | data[at + 3];

		at += 4;
		if (len > size - at)
			len = size - at;
		fuzz_log_write(fuzz_log_files[kind % FUZZ_LOG_NFILES], data + at, len, data[0] & 1);
		at += len;
	}
	part_cfg_default(&cfg);
	cfg.segment_index_bytes = 64 * 1024;
	cfg.index_interval_bytes = 128;
	if (part_open(fuzz_dir, &cfg, data[0] & 2 ? INT64_MAX : -1, 3, &part) < 0)
		return 0;
	fuzz_log_exercise(part, data[0] & 4);
	leo = part_log_end_offset(part);
	part_close(part);
	if (part_open(fuzz_dir, &cfg, INT64_MAX, -1, &part) < 0) {
		fprintf(stderr, "fuzz_log: a partition closed cleanly does not reopen\n");
		abort();
	}
	if (part_log_end_offset(part) != leo) {
		fprintf(stderr, "fuzz_log: LEO %lld after clean reopen, %lld at close\n",
			(long long)part_log_end_offset(part), (long long)leo);
		abort();
	}
	part_close(part);
	return 0;
}
