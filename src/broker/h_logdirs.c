/*
 * h_logdirs.c - DescribeLogDirs: which partitions each log directory holds
 * and how many bytes they take there, for operators watching disks fill up
 * (gregor-log-dirs, as Kafka's kafka-log-dirs.sh).
 *
 * A single node has one log directory (registry.h), so the answer holds one
 * result, named by the directory's absolute path.  A failed directory
 * (registry_fail_dir) answers KAFKA_STORAGE_ERROR with no partitions and no
 * sizes, as Kafka answers for an offline dir.  Otherwise each partition's
 * size is the bytes of its segments (part_size_bytes: the .log files, not
 * the indexes, as Kafka counts), OffsetLag 0 and IsFutureKey false, there
 * being no replica moves between directories; v4's TotalBytes and
 * UsableBytes are statvfs(3) of the directory (blocks and blocks available
 * to an unprivileged user), -1 if it fails.
 *
 * Which partitions: a null Topics array means every partition; otherwise the
 * named ones.  A topic or partition that does not exist, an invalid name or
 * an offline partition is left out rather than reported, as Kafka does, and
 * one named twice is answered once.  Topics come out sorted by name and
 * partitions by index.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "log/partition.h"
#include "proto/kerr.h"

struct logdirs_tp {
	struct topic *t;
	int32_t partition;
};

static int logdirs_tp_cmp(const void *a, const void *b)
{
	const struct logdirs_tp *x = a, *y = b;
	int c = x->t == y->t ? 0 : strcmp(x->t->name, y->t->name);

	if (c)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

/* Appends topic t's partition p to tps if it is open. */
static void logdirs_add(struct logdirs_tp *tps, int32_t *n, struct topic *t, int32_t p)
{
	if (registry_part(t, p))
		tps[(*n)++] = (struct logdirs_tp){ t, p };
}

/*
 * The open partitions the request asks for, sorted and without repeats
 * (OUT: *tps, from the request's arena); returns how many.
 */
static int32_t logdirs_wanted(struct req *rq, const struct DescribeLogDirsRequest *in, struct logdirs_tp **tps)
{
	struct registry *reg = rq->b->reg;
	int ntopics = 0;
	struct topic **all = in->Topics.n < 0 ? registry_topics(reg, &ntopics) : NULL;
	size_t cap = 0;
	int32_t n = 0, kept = 0;

	for (int i = 0; i < ntopics; i++)
		cap += (size_t)all[i]->nparts;
	for (int32_t i = 0; i < in->Topics.n; i++)
		cap += in->Topics.v[i].Partitions.n > 0 ? (size_t)in->Topics.v[i].Partitions.n : 0;
	*tps = req_alloc(rq, cap, sizeof(**tps));
	for (int i = 0; i < ntopics; i++)
		for (int32_t p = 0; p < all[i]->nparts; p++)
			logdirs_add(*tps, &n, all[i], p);
	for (int32_t i = 0; i < in->Topics.n; i++) {
		const struct DescribableLogDirTopic *dt = &in->Topics.v[i];
		struct topic *t = topic_name_valid(dt->Topic) ? registry_find(reg, dt->Topic) : NULL;

		for (int32_t j = 0; t && j < dt->Partitions.n; j++)
			logdirs_add(*tps, &n, t, dt->Partitions.v[j]);
	}
	qsort(*tps, (size_t)n, sizeof(**tps), logdirs_tp_cmp);
	for (int32_t i = 0; i < n; i++)
		if (i == 0 || logdirs_tp_cmp(&(*tps)[i], &(*tps)[kept - 1]) != 0)
			(*tps)[kept++] = (*tps)[i];
	return kept;
}

/* How many entries from tps[i] on belong to the topic of tps[i]. */
static int32_t logdirs_run(const struct logdirs_tp *tps, int32_t n, int32_t i)
{
	int32_t j = i;

	while (j < n && tps[j].t == tps[i].t)
		j++;
	return j - i;
}

/* Fills res->Topics from the n sorted partitions in tps. */
static void logdirs_topics(struct req *rq, const struct logdirs_tp *tps, int32_t n, struct DescribeLogDirsResult *res)
{
	int32_t ntopics = 0;

	for (int32_t i = 0; i < n; i += logdirs_run(tps, n, i))
		ntopics++;
	res->Topics.v = req_alloc(rq, (size_t)ntopics, sizeof(*res->Topics.v));
	res->Topics.n = ntopics;
	for (int32_t i = 0, k = 0; i < n; k++) {
		struct DescribeLogDirsTopic *dt = &res->Topics.v[k];
		int32_t run = logdirs_run(tps, n, i);

		DescribeLogDirsTopic_init(dt);
		dt->Name = kstr_c(tps[i].t->name);
		dt->Partitions.v = req_alloc(rq, (size_t)run, sizeof(*dt->Partitions.v));
		dt->Partitions.n = run;
		for (int32_t j = 0; j < run; j++, i++) {
			struct DescribeLogDirsPartition *dp = &dt->Partitions.v[j];

			DescribeLogDirsPartition_init(dp);
			dp->PartitionIndex = tps[i].partition;
			dp->PartitionSize = part_size_bytes(registry_part(tps[i].t, tps[i].partition));
			dp->OffsetLag = 0;
			dp->IsFutureKey = false;
		}
	}
}

/* The directory's absolute path (the configured one if it cannot be resolved), from the request's arena. */
static struct kstr logdirs_path(struct req *rq, const char *dir)
{
	char buf[PATH_MAX];
	const char *path = realpath(dir, buf) ? buf : dir;
	size_t len = strlen(path);
	char *p = req_alloc(rq, len + 1, 1);

	memcpy(p, path, len);
	return (struct kstr){ p, (int32_t)len };
}

/* v4's volume sizes of dir; left at -1 if statvfs fails. */
static void logdirs_space(const char *dir, struct DescribeLogDirsResult *res)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) != 0)
		return;
	res->TotalBytes = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	res->UsableBytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

int h_describe_log_dirs(struct req *rq, const void *in_, void *out_)
{
	const struct DescribeLogDirsRequest *in = in_;
	struct DescribeLogDirsResponse *out = out_;
	struct registry *reg = rq->b->reg;
	const char *dir = registry_log_dir(reg);
	struct DescribeLogDirsResult *res = req_alloc(rq, 1, sizeof(*res));
	struct logdirs_tp *tps;
	int32_t n;

	if ((out->ErrorCode = authz_cluster_kerr(rq, ACL_OP_DESCRIBE)))
		return H_REPLY;
	DescribeLogDirsResult_init(res);
	out->Results.v = res;
	out->Results.n = 1;
	out->ErrorCode = KERR_NONE;
	res->LogDir = logdirs_path(rq, dir);
	if (registry_dir_failed(reg)) {
		res->ErrorCode = KERR_KAFKA_STORAGE_ERROR;
		return H_REPLY;
	}
	n = logdirs_wanted(rq, in, &tps);
	logdirs_topics(rq, tps, n, res);
	logdirs_space(dir, res);
	return H_REPLY;
}
