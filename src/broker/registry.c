/*
 * registry.c - topics and partitions on disk and in memory (see
 * registry.h for the files it owns).
 */
#include "broker/registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/park.h"
#include "log/compact.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/dirdel.h"
#include "util/durable.h"
#include "util/log.h"

#define CHECKPOINT_FILE "recovery-point-offset-checkpoint"
#define CLEANER_CHECKPOINT_FILE "cleaner-offset-checkpoint" /* compact.h: first offset not cleaned */
#define CLEAN_MARKER ".kafka_cleanshutdown"
#define DELETE_SUFFIX "-delete" /* Kafka's: <topic>-<p>.<uuid hex>-delete */
#define CREATE_SUFFIX "-create" /* ours: partition 0 staged with the topic config */
#define TOPIC_CFG_FILE "topic.properties"

struct registry {
	const struct broker_cfg *cfg;
	char *dir;
	char cluster_id[64];
	struct topic **topics; /* sorted by name */
	int ntopics, cap;
	int dir_err;           /* -errno of the sync that failed, 0 while the dir is online (atomic) */
	struct dirdel *dirdel; /* removes renamed-away partition directories */
};

bool topic_name_valid(struct kstr name)
{
	if (name.len <= 0 || name.len > 249)
		return false;
	if ((name.len == 1 && name.p[0] == '.') || (name.len == 2 && name.p[0] == '.' && name.p[1] == '.'))
		return false;
	for (int32_t i = 0; i < name.len; i++) {
		char ch = name.p[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

bool topic_name_internal(struct kstr name)
{
	static const char *const internal[] = { "__consumer_offsets", "__transaction_state" };

	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (name.len == (int32_t)strlen(internal[i]) && memcmp(name.p, internal[i], (size_t)name.len) == 0)
			return true;
	return false;
}

const char *registry_cluster_id(const struct registry *reg)
{
	return reg->cluster_id;
}

int32_t registry_leader(const struct registry *reg, const struct topic *t, int32_t partition)
{
	(void)t;
	(void)partition;
	return reg->cfg->node_id;
}

struct part *registry_part(const struct topic *t, int32_t partition)
{
	if (partition < 0 || partition >= t->nparts || registry_dir_failed(t->reg))
		return NULL;
	return t->parts[partition];
}

int16_t registry_part_error(const struct topic *t, int32_t partition)
{
	if (!t || partition < 0 || partition >= t->nparts)
		return KERR_UNKNOWN_TOPIC_OR_PARTITION;
	return t->parts[partition] && !registry_dir_failed(t->reg) ? KERR_NONE : KERR_KAFKA_STORAGE_ERROR;
}

void registry_fail_dir(struct registry *reg, int err)
{
	int none = 0;

	if (__atomic_compare_exchange_n(&reg->dir_err, &none, err, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		log_error("log dir '%s' is offline after a failed sync (%s): its partitions answer "
			  "KAFKA_STORAGE_ERROR until a restart recovers it",
			  reg->dir, strerror(-err));
}

/* durable_on_fail hook: a sync of any file or directory in the log dir failed. */
static void registry_on_sync_fail(void *arg, int err)
{
	registry_fail_dir(arg, err);
}

bool registry_dir_failed(const struct registry *reg)
{
	return __atomic_load_n(&reg->dir_err, __ATOMIC_ACQUIRE) != 0;
}

/*
 * Binary search; returns the index of name or where it would go (negative
 * - 1).  name is a client's byte string (it may hold NUL bytes): compared
 * by its length, never read past it nor past the stored name.
 */
static int registry_index(const struct registry *reg, struct kstr name)
{
	int lo = 0, hi = reg->ntopics - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const char *tn = reg->topics[mid]->name;
		size_t tlen = strlen(tn), nlen = (size_t)name.len;
		int c = memcmp(tn, name.p, tlen < nlen ? tlen : nlen);

		if (c == 0)
			c = (tlen > nlen) - (tlen < nlen);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

struct topic *registry_find(struct registry *reg, struct kstr name)
{
	int i;

	if (name.len <= 0)
		return NULL;
	i = registry_index(reg, name);
	return i >= 0 ? reg->topics[i] : NULL;
}

struct topic **registry_topics(struct registry *reg, int *n)
{
	*n = reg->ntopics;
	return reg->topics;
}

static int registry_insert(struct registry *reg, struct topic *t)
{
	int i = registry_index(reg, kstr_c(t->name));

	if (i >= 0)
		return -EEXIST;
	i = -i - 1;
	if (reg->ntopics == reg->cap) {
		int cap = reg->cap ? reg->cap * 2 : 16;
		struct topic **nt = realloc(reg->topics, (size_t)cap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		reg->topics = nt;
		reg->cap = cap;
	}
	memmove(reg->topics + i + 1, reg->topics + i, (size_t)(reg->ntopics - i) * sizeof(*reg->topics));
	reg->topics[i] = t;
	reg->ntopics++;
	return 0;
}

static void registry_remove(struct registry *reg, struct topic *t)
{
	int i = registry_index(reg, kstr_c(t->name));

	if (i < 0)
		return;
	memmove(reg->topics + i, reg->topics + i + 1, (size_t)(reg->ntopics - i - 1) * sizeof(*reg->topics));
	reg->ntopics--;
}

static char *part_dir(const struct registry *reg, const char *topic, int32_t p)
{
	char *d = NULL;

	if (asprintf(&d, "%s/%s-%d", reg->dir, topic, p) < 0)
		return NULL;
	return d;
}

/*
 * The name a partition directory is renamed to before it is removed (or
 * staged under while created), as Kafka names it:
 * <topic>-<p>.<32 hex uuid><suffix>, the topic cut short so that the name
 * fits in 255 bytes.  OUT: path in the log dir (caller frees).
 */
static char *part_dir_aside(const struct registry *reg, const char *topic, int32_t p, const char *suffix)
{
	char tail[96], *d = NULL;
	uint8_t u[16];
	int n, keep;

	if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u))
		for (size_t i = 0; i < sizeof(u); i++)
			u[i] = (uint8_t)rand();
	n = snprintf(tail, sizeof(tail), "-%d.", p);
	for (size_t i = 0; i < sizeof(u); i++)
		n += snprintf(tail + n, sizeof(tail) - (size_t)n, "%02x", u[i]);
	snprintf(tail + n, sizeof(tail) - (size_t)n, "%s", suffix);
	keep = 255 - (int)strlen(tail);
	if (asprintf(&d, "%s/%.*s%s", reg->dir, keep, topic, tail) < 0)
		return NULL;
	return d;
}

/* True if name is a directory set aside by part_dir_aside() with one of our suffixes. */
static bool part_dir_is_aside(const char *name)
{
	size_t n = strlen(name);

	return strchr(name, '.') &&
	       ((n > strlen(DELETE_SUFFIX) && !strcmp(name + n - strlen(DELETE_SUFFIX), DELETE_SUFFIX)) ||
		(n > strlen(CREATE_SUFFIX) && !strcmp(name + n - strlen(CREATE_SUFFIX), CREATE_SUFFIX)));
}

/*
 * Renames the directory at path to a -delete name and queues it for the
 * background removal delay_ms later (file.delete.delay.ms).  sync: fsync
 * the log dir before returning (else the caller does it).  0 once renamed
 * (a failed fsync or queueing is logged), or -errno from rename with path
 * left as it was.
 */
static int registry_set_aside(struct registry *reg, const char *path, const char *topic, int32_t p, bool sync,
			      int64_t delay_ms)
{
	char *aside = part_dir_aside(reg, topic, p, DELETE_SUFFIX);
	int err = 0;

	if (!aside)
		return -ENOMEM;
	if (rename(path, aside) < 0) {
		err = -errno;
		goto out_free;
	}
	if (sync && (err = durable_sync_dir(reg->dir)) < 0) /* a failed sync took the dir offline */
		log_error("cannot sync '%s' after renaming '%s': %s", reg->dir, path, strerror(-err));
	if (dirdel_add(reg->dirdel, aside, delay_ms) < 0)
		log_error("cannot queue '%s' for removal (removed at the next start)", aside);
	err = 0;
out_free:
	free(aside);
	return err;
}

/* ---- small files ---- */

static char *read_small_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, 65537);
	n = buf ? fread(buf, 1, 65536, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Kafka prints Uuids as 22 characters of unpadded base64url. */
static void uuid_to_b64(const struct kuuid *u, char out[23])
{
	int bits = 0, o = 0;
	uint32_t acc = 0;

	for (int i = 0; i < 16; i++) {
		acc = (acc << 8) | u->b[i];
		bits += 8;
		while (bits >= 6) {
			out[o++] = b64url[(acc >> (bits - 6)) & 63];
			bits -= 6;
		}
	}
	if (bits)
		out[o++] = b64url[(acc << (6 - bits)) & 63];
	out[o] = '\0';
}

static int uuid_from_b64(const char *s, struct kuuid *u)
{
	int bits = 0, o = 0;
	uint32_t acc = 0;

	for (int i = 0; s[i] && o < 16; i++) {
		const char *p = strchr(b64url, s[i]);

		if (!p || !s[i])
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(p - b64url);
		bits += 6;
		if (bits >= 8) {
			u->b[o++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	return o == 16 ? 0 : -EINVAL;
}

static void uuid_random(struct kuuid *u)
{
	do {
		if (getrandom(u->b, sizeof(u->b), 0) != (ssize_t)sizeof(u->b))
			for (size_t i = 0; i < sizeof(u->b); i++)
				u->b[i] = (uint8_t)rand();
		u->b[6] = (u->b[6] & 0x0f) | 0x40; /* version 4 */
		u->b[8] = (u->b[8] & 0x3f) | 0x80;
	} while (u->b[0] == 0); /* never the zero uuid or Kafka's reserved ids */
}

static int write_partition_metadata(const char *dir, const struct kuuid *id)
{
	char path[PATH_MAX], txt[64], b64[23];

	uuid_to_b64(id, b64);
	snprintf(path, sizeof(path), "%s/partition.metadata", dir);
	snprintf(txt, sizeof(txt), "version: 0\ntopic_id: %s\n", b64);
	return durable_replace_path(path, txt, strlen(txt));
}

static int read_partition_metadata(const char *dir, struct kuuid *id)
{
	char path[PATH_MAX];
	char *txt, *p;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "%s/partition.metadata", dir);
	txt = read_small_file(path);
	if (!txt)
		return -ENOENT;
	p = strstr(txt, "topic_id:");
	if (p) {
		p += strlen("topic_id:");
		while (*p == ' ')
			p++;
		p[strcspn(p, "\r\n")] = '\0';
		err = uuid_from_b64(p, id);
	}
	free(txt);
	return err;
}

/* ---- meta.properties and checkpoints ---- */

static int registry_load_meta(struct registry *reg)
{
	char path[PATH_MAX], txt[256];
	char *old, *p;
	struct kuuid u;

	snprintf(path, sizeof(path), "%s/meta.properties", reg->dir);
	old = read_small_file(path);
	if (old && (p = strstr(old, "cluster.id=")) != NULL) {
		p += strlen("cluster.id=");
		p[strcspn(p, "\r\n")] = '\0';
		snprintf(reg->cluster_id, sizeof(reg->cluster_id), "%s", p);
	}
	free(old);
	if (reg->cfg->cluster_id && reg->cfg->cluster_id[0])
		snprintf(reg->cluster_id, sizeof(reg->cluster_id), "%s", reg->cfg->cluster_id);
	if (!reg->cluster_id[0]) {
		uuid_random(&u);
		uuid_to_b64(&u, reg->cluster_id);
	}
	snprintf(txt, sizeof(txt), "#gregor\nversion=1\nnode.id=%d\ncluster.id=%s\n", reg->cfg->node_id,
		 reg->cluster_id);
	return durable_replace_path(path, txt, strlen(txt));
}

struct ckpt_entry {
	char *topic;
	int32_t partition;
	int64_t offset;
};

static int ckpt_load(const char *dir, const char *name, struct ckpt_entry **out, int *n)
{
	char path[PATH_MAX], topic[256];
	FILE *f;
	int version, count, i = 0;
	struct ckpt_entry *v;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	if (fscanf(f, "%d %d", &version, &count) != 2 || version != 0 || count < 0 || count > 10000000) {
		fclose(f);
		log_warn("'%s' is malformed: it is ignored", path);
		return -EBADMSG;
	}
	v = calloc((size_t)count + 1, sizeof(*v));
	while (v && i < count) {
		long long off;
		int p;

		if (fscanf(f, "%255s %d %lld", topic, &p, &off) != 3)
			break;
		v[i].topic = strdup(topic);
		v[i].partition = p;
		v[i].offset = off;
		i++;
	}
	fclose(f);
	*out = v;
	*n = i;
	return 0;
}

static int64_t ckpt_find(const struct ckpt_entry *v, int n, const char *topic, int32_t p)
{
	for (int i = 0; i < n; i++)
		if (v[i].partition == p && v[i].topic && !strcmp(v[i].topic, topic))
			return v[i].offset;
	return -1;
}

static void ckpt_free(struct ckpt_entry *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].topic);
	free(v);
}

/* A checkpoint's value for part: the recovery point, or the cleaner's offset (-1: no line). */
typedef int64_t ckpt_value_fn(const struct part *part);

static int64_t ckpt_recovery_point(const struct part *part)
{
	return part ? part_recovery_point(part) : 0;
}

static int64_t ckpt_clean_offset(const struct part *part)
{
	return part ? part_clean_offset(part) : -1;
}

/* Writes the checkpoint file name of the partitions for which value gives an offset. */
static int ckpt_write(struct registry *reg, const char *name, ckpt_value_fn *value)
{
	struct wr lines, txt;
	char path[PATH_MAX], line[300];
	int count = 0, err;

	wr_init(&lines);
	wr_init(&txt);
	for (int i = 0; i < reg->ntopics; i++) {
		struct topic *t = reg->topics[i];

		for (int32_t p = 0; p < t->nparts; p++) {
			int64_t v = value(t->parts[p]);

			if (v < 0)
				continue;
			wr_raw(&lines, line,
			       (size_t)snprintf(line, sizeof(line), "%s %d %lld\n", t->name, p, (long long)v));
			count++;
		}
	}
	wr_raw(&txt, line, (size_t)snprintf(line, sizeof(line), "0\n%d\n", count));
	wr_raw(&txt, lines.buf, lines.len);
	err = txt.err ? txt.err : lines.err;
	snprintf(path, sizeof(path), "%s/%s", reg->dir, name);
	if (!err)
		err = durable_replace_path(path, (const char *)txt.buf, txt.len);
	wr_release(&lines);
	wr_release(&txt);
	return err;
}

int registry_checkpoint(struct registry *reg)
{
	int err;

	if (registry_dir_failed(reg))
		return -EIO;
	err = ckpt_write(reg, CHECKPOINT_FILE, ckpt_recovery_point);
	if (!err)
		err = ckpt_write(reg, CLEANER_CHECKPOINT_FILE, ckpt_clean_offset);
	return err;
}

/* ---- topics ---- */

static void registry_part_cfg(const struct registry *reg, const struct topic_cfg *tc, struct part_cfg *pc)
{
	part_cfg_default(pc);
	pc->producer_id_expiration_ms = reg->cfg->producer_id_expiration_ms;
	pc->hw_on_sync = park_sync_on_ack(reg->cfg);
	pc->segment_bytes = tc->segment_bytes;
	pc->segment_ms = tc->segment_ms;
	pc->segment_jitter_ms = tc->segment_jitter_ms;
	pc->retention_ms = tc->retention_ms;
	pc->retention_bytes = tc->retention_bytes;
	pc->retention_delete = config_cleanup_deletes(tc->cleanup_policy);
	pc->index_interval_bytes = tc->index_interval_bytes;
	pc->segment_index_bytes = tc->segment_index_bytes;
	pc->log_append_time = tc->message_timestamp_type == CONFIG_TS_LOG_APPEND_TIME;
}

static void topic_free(struct topic *t)
{
	if (!t)
		return;
	free(t->parts);
	topic_cfg_release(&t->cfg);
	free(t->name);
	free(t);
}

static struct topic *topic_alloc(struct registry *reg, const char *name, int32_t nparts)
{
	struct topic *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->reg = reg;
	t->name = strdup(name);
	t->parts = calloc((size_t)(nparts ? nparts : 1), sizeof(*t->parts));
	t->internal = topic_name_internal(kstr_c(name));
	if (!t->name || !t->parts) {
		free(t->parts);
		free(t->name);
		free(t);
		return NULL;
	}
	return t;
}

static int registry_open_part(struct registry *reg, struct topic *t, int32_t p, int64_t recovery_point)
{
	struct part_cfg pc;
	char *dir = part_dir(reg, t->name, p);
	int err;

	if (!dir)
		return -ENOMEM;
	registry_part_cfg(reg, &t->cfg, &pc);
	err = part_open(dir, &pc, recovery_point, 0, &t->parts[p]);
	if (!err && read_partition_metadata(dir, &(struct kuuid){ { 0 } }) < 0)
		err = write_partition_metadata(dir, &t->id);
	if (err)
		log_error("cannot open partition '%s': %s", dir, strerror(-err));
	free(dir);
	return err;
}

static int topic_cfg_path(const struct registry *reg, const char *topic, char *path, size_t n)
{
	return snprintf(path, n, "%s/%s-0/%s", reg->dir, topic, TOPIC_CFG_FILE) >= (int)n ? -ENAMETOOLONG : 0;
}

/* Parses "<topic>-<n>"; returns n or -1. topic gets the name part. */
static int32_t parse_part_dir(const char *name, char *topic, size_t n)
{
	const char *dash = strrchr(name, '-');
	char *end;
	long p;

	if (!dash || dash == name || !dash[1] || (size_t)(dash - name) >= n)
		return -1;
	p = strtol(dash + 1, &end, 10);
	if (*end || p < 0 || p > INT32_MAX)
		return -1;
	memcpy(topic, name, (size_t)(dash - name));
	topic[dash - name] = '\0';
	if (!topic_name_valid(kstr_c(topic)))
		return -1;
	return (int32_t)p;
}

/* Finds or creates the in-memory topic for a partition directory found on disk. */
static struct topic *registry_found(struct registry *reg, const char *topic, int32_t p)
{
	struct topic *t = registry_find(reg, kstr_c(topic));

	if (!t) {
		t = topic_alloc(reg, topic, 0);
		if (!t || registry_insert(reg, t) < 0) {
			topic_free(t);
			return NULL;
		}
		topic_cfg_init(&t->cfg, reg->cfg);
	}
	if (p + 1 > t->nparts) {
		struct part **np = realloc(t->parts, (size_t)(p + 1) * sizeof(*np));

		if (!np)
			return NULL;
		memset(np + t->nparts, 0, (size_t)(p + 1 - t->nparts) * sizeof(*np));
		t->parts = np;
		t->nparts = p + 1;
	}
	return t;
}

/*
 * Queues a directory left set aside by a delete or create that a crash or
 * stop interrupted.  A deleted partition waits log.segment.delete.delay.ms
 * again, as Kafka's start-up does; a create's staging directory never held
 * anything readable and goes at once.
 */
static void registry_queue_leftover(struct registry *reg, const char *name)
{
	size_t n = strlen(name);
	bool deleted = n > strlen(DELETE_SUFFIX) && !strcmp(name + n - strlen(DELETE_SUFFIX), DELETE_SUFFIX);
	int64_t delay_ms = deleted ? reg->cfg->log_segment_delete_delay_ms : 0;
	char *path = NULL;

	if (asprintf(&path, "%s/%s", reg->dir, name) < 0)
		return;
	log_info("removing '%s' in %lld ms, left from a deleted or unfinished topic", path, (long long)delay_ms);
	if (dirdel_add(reg->dirdel, path, delay_ms) < 0)
		log_warn("cannot queue '%s' for removal", path);
	free(path);
}

/*
 * A topic exists once its partition 0 directory does: creation makes it
 * last (with the topic config in it), deletion renames it away first.
 * Partitions of a topic without one are what a crash left of a create or
 * delete: set aside for removal, and the topic dropped.
 */
static void registry_drop_incomplete(struct registry *reg)
{
	char path[PATH_MAX];
	int dropped = 0, err;

	for (int i = 0; i < reg->ntopics; i++) {
		struct topic *t = reg->topics[i];

		snprintf(path, sizeof(path), "%s/%s-0", reg->dir, t->name);
		if (access(path, F_OK) == 0)
			continue;
		log_warn("topic '%s' has no partition 0: removing its %d other partition(s) left by an interrupted "
			 "create or delete",
			 t->name, t->nparts - 1);
		for (int32_t p = 1; p < t->nparts; p++) {
			snprintf(path, sizeof(path), "%s/%s-%d", reg->dir, t->name, p);
			if (access(path, F_OK) == 0 &&
			    (err = registry_set_aside(reg, path, t->name, p, false,
						      reg->cfg->log_segment_delete_delay_ms)) < 0)
				log_error("cannot set '%s' aside: %s", path, strerror(-err));
		}
		registry_remove(reg, t);
		topic_free(t);
		i--;
		dropped++;
	}
	if (dropped)
		durable_sync_dir(reg->dir);
}

static int registry_scan(struct registry *reg)
{
	DIR *d = opendir(reg->dir);
	struct dirent *e;
	char topic[256];

	if (!d)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		int32_t p = parse_part_dir(e->d_name, topic, sizeof(topic));

		if (e->d_type != DT_REG && part_dir_is_aside(e->d_name))
			registry_queue_leftover(reg, e->d_name);
		if (e->d_type == DT_REG && strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".tmp"))
			unlinkat(dirfd(d), e->d_name, 0); /* a replacement a crash cut short (util/durable.h) */
		if (p < 0 || e->d_type == DT_REG)
			continue;
		if (!registry_found(reg, topic, p)) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	registry_drop_incomplete(reg);
	return 0;
}

/* Opens the partitions of every topic found by registry_scan(). */
static int registry_open_all(struct registry *reg, bool clean)
{
	struct ckpt_entry *ck = NULL, *cl = NULL;
	int nck = 0, ncl = 0, err = 0;
	char path[PATH_MAX], dir0[PATH_MAX], why[256];

	if (!clean)
		ckpt_load(reg->dir, CHECKPOINT_FILE, &ck, &nck);
	ckpt_load(reg->dir, CLEANER_CHECKPOINT_FILE, &cl, &ncl);
	for (int i = 0; i < reg->ntopics && !err; i++) {
		struct topic *t = reg->topics[i];

		snprintf(dir0, sizeof(dir0), "%s/%s-0", reg->dir, t->name);
		if (read_partition_metadata(dir0, &t->id) < 0)
			uuid_random(&t->id);
		if (topic_cfg_path(reg, t->name, path, sizeof(path)) == 0 && access(path, F_OK) == 0 &&
		    topic_cfg_load(&t->cfg, path, why, sizeof(why)) < 0)
			log_warn("topic '%s': cannot load '%s' (%s); using defaults", t->name, path, why);
		for (int32_t p = 0; p < t->nparts && !err; p++) {
			int64_t rp = clean ? INT64_MAX : ckpt_find(ck, nck, t->name, p);

			if (registry_open_part(reg, t, p, rp) == 0)
				part_set_clean_offset(t->parts[p], ckpt_find(cl, ncl, t->name, p));
			else
				log_error("partition '%s-%d' is offline (KAFKA_STORAGE_ERROR) until its files are "
					  "repaired",
					  t->name, p);
		}
	}
	ckpt_free(ck, nck);
	ckpt_free(cl, ncl);
	return err;
}

/* Frees a registry whose start-up failed: closes what was opened. */
static void registry_abort(struct registry *reg)
{
	for (int i = 0; i < reg->ntopics; i++) {
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p])
				part_close(reg->topics[i]->parts[p]);
		topic_free(reg->topics[i]);
	}
	if (reg->dirdel)
		dirdel_stop(reg->dirdel);
	durable_on_fail(NULL, NULL);
	free(reg->topics);
	free(reg->dir);
	free(reg);
}

/* Creates the log dir and meta.properties. */
static int registry_prepare_dir(struct registry *reg)
{
	int err;

	err = durable_mkdir(reg->dir, 0755);
	if (err) {
		log_error("cannot create log dir '%s': %s", reg->dir, strerror(-err));
		return err;
	}
	err = registry_load_meta(reg);
	if (err)
		log_error("cannot write '%s/meta.properties': %s", reg->dir, strerror(-err));
	return err;
}

/*
 * From now on a crash must be recovered from: the marker goes, durably, or
 * the broker does not start (a marker that came back after a crash would
 * skip the recovery of unsynced data).
 */
static int registry_unmark_clean(struct registry *reg, const char *marker)
{
	int err = 0;

	if (unlink(marker) < 0 && errno != ENOENT)
		err = -errno;
	if (!err)
		err = durable_sync_dir(reg->dir);
	if (err)
		log_error("cannot remove '%s': %s", marker, strerror(-err));
	return err;
}

int registry_open(const struct broker_cfg *cfg, struct registry **out)
{
	struct registry *reg = calloc(1, sizeof(*reg));
	char marker[PATH_MAX];
	bool clean;
	int err, nparts = 0;
	int64_t t0 = clock_mono_ms();

	if (!reg)
		return -ENOMEM;
	reg->cfg = cfg;
	reg->dir = strdup(cfg->log_dirs);
	if (!reg->dir) {
		free(reg);
		return -ENOMEM;
	}
	reg->dir[strcspn(reg->dir, ",")] = '\0'; /* one log dir on a single node */
	durable_on_fail(registry_on_sync_fail, reg);
	err = dirdel_start(&reg->dirdel);
	if (!err)
		err = registry_prepare_dir(reg);
	snprintf(marker, sizeof(marker), "%s/%s", reg->dir, CLEAN_MARKER);
	clean = access(marker, F_OK) == 0;
	if (!err)
		err = registry_scan(reg);
	if (!err)
		err = registry_open_all(reg, clean);
	if (!err)
		err = registry_unmark_clean(reg, marker);
	if (err) {
		registry_abort(reg);
		return err;
	}
	for (int i = 0; i < reg->ntopics; i++)
		nparts += reg->topics[i]->nparts;
	log_info("loaded %d topics with %d partitions from '%s'%s in %lld ms", reg->ntopics, nparts, reg->dir,
		 !nparts ? ""
		 : clean ? " (clean shutdown, no recovery needed)"
			 : " (recovered after an unclean shutdown)",
		 (long long)(clock_mono_ms() - t0));
	*out = reg;
	return 0;
}

void registry_close(struct registry *reg)
{
	bool failed = registry_dir_failed(reg);
	char marker[PATH_MAX];
	int err = 0, rc;

	for (int i = 0; i < reg->ntopics && !failed; i++)
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p] && (rc = part_sync(reg->topics[i]->parts[p])) < 0 && !err)
				err = rc;
	rc = registry_checkpoint(reg);
	if (rc && !err)
		err = rc;
	for (int i = 0; i < reg->ntopics; i++) {
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p] && failed)
				part_abandon(reg->topics[i]->parts[p]);
			else if (reg->topics[i]->parts[p] && (rc = part_close(reg->topics[i]->parts[p])) < 0 && !err)
				err = rc;
		topic_free(reg->topics[i]);
	}
	dirdel_stop(reg->dirdel); /* what is still queued is found again at the next start */
	snprintf(marker, sizeof(marker), "%s/%s", reg->dir, CLEAN_MARKER);
	failed |= registry_dir_failed(reg); /* e.g. a producer snapshot written at close */
	if (failed)
		log_error("log dir '%s' failed: not marked as cleanly shut down, the next start recovers it", reg->dir);
	else if (!err) /* only a fully synced log may skip recovery */
		err = durable_replace_path(marker, "", 0);
	else
		log_error("final sync failed (%s): no clean-shutdown marker, the next start recovers", strerror(-err));
	durable_on_fail(NULL, NULL);
	free(reg->topics);
	free(reg->dir);
	free(reg);
}

/*
 * Makes partition 0's directory, with the topic config already in it, in
 * one rename: a staging directory gets topic.properties, then takes the
 * name <topic>-0.  A crash before leaves no partition 0 and so no topic;
 * after, the topic has its config from its first moment on disk.
 */
static int registry_stage_part0(struct registry *reg, struct topic *t)
{
	char *stage = part_dir_aside(reg, t->name, 0, CREATE_SUFFIX), *dir = part_dir(reg, t->name, 0);
	char path[PATH_MAX];
	int err = -ENOMEM;

	if (!stage || !dir)
		goto out_free;
	err = durable_mkdir(stage, 0755);
	if (!err)
		err = snprintf(path, sizeof(path), "%s/%s", stage, TOPIC_CFG_FILE) >= (int)sizeof(path) ? -ENAMETOOLONG
													: 0;
	if (!err)
		err = topic_cfg_save(&t->cfg, path);
	if (!err)
		err = durable_rename(stage, dir);
	if (err)
		dirdel_remove(stage);
out_free:
	free(stage);
	free(dir);
	return err;
}

/* Undoes a failed registry_create(): partition 0 first (staged: its directory exists), as a delete would. */
static void registry_create_undo(struct registry *reg, struct topic *t, bool staged)
{
	char *dir = part_dir(reg, t->name, 0);

	if (t->parts[0])
		part_delete(t->parts[0]);
	else if (dir && staged)
		dirdel_remove(dir);
	free(dir);
	for (int32_t p = 1; p < t->nparts; p++)
		if (t->parts[p])
			part_delete(t->parts[p]);
	topic_free(t);
}

int registry_create(struct registry *reg, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
		    struct topic **out)
{
	char namebuf[256];
	struct topic *t;
	bool staged = false;
	int err = 0;

	if (!topic_name_valid(name))
		return -EINVAL;
	if (registry_find(reg, name))
		return -EEXIST;
	memcpy(namebuf, name.p, (size_t)name.len);
	namebuf[name.len] = '\0';
	t = topic_alloc(reg, namebuf, nparts);
	if (!t)
		return -ENOMEM;
	t->nparts = nparts;
	topic_cfg_copy(&t->cfg, tcfg);
	uuid_random(&t->id);
	for (int32_t p = 1; p < nparts && !err; p++) /* invisible until partition 0 exists */
		err = registry_open_part(reg, t, p, INT64_MAX);
	if (!err)
		err = registry_stage_part0(reg, t);
	staged = !err;
	if (!err)
		err = registry_open_part(reg, t, 0, INT64_MAX);
	if (!err)
		err = registry_insert(reg, t);
	if (err) {
		registry_create_undo(reg, t, staged);
		return err;
	}
	log_info("created topic '%s' with %d partitions", t->name, nparts);
	*out = t;
	return 0;
}

/*
 * Renaming partition 0's directory away is the deletion's commit point
 * (registry_drop_incomplete() removes the rest after a crash); the other
 * partitions follow, then one directory fsync, and the background thread
 * removes the files.  A partition that cannot be renamed is removed here.
 */
int registry_delete(struct registry *reg, struct topic *t)
{
	char *dir = part_dir(reg, t->name, 0);
	int err;

	if (!dir)
		return -ENOMEM;
	err = registry_set_aside(reg, dir, t->name, 0, true, t->cfg.file_delete_delay_ms);
	free(dir);
	if (err && err != -ENOENT) {
		log_error("cannot delete topic '%s': renaming its partition 0 failed: %s", t->name, strerror(-err));
		return err;
	}
	for (int32_t p = 1; p < t->nparts; p++) {
		dir = part_dir(reg, t->name, p);
		if (dir && (err = registry_set_aside(reg, dir, t->name, p, false, t->cfg.file_delete_delay_ms)) < 0 &&
		    err != -ENOENT && (err = dirdel_remove(dir)) < 0)
			log_error("cannot remove '%s': %s", dir, strerror(-err));
		free(dir);
	}
	durable_sync_dir(reg->dir);
	registry_remove(reg, t);
	for (int32_t p = 0; p < t->nparts; p++)
		if (t->parts[p])
			part_abandon(t->parts[p]);
	log_info("deleted topic '%s'", t->name);
	topic_free(t);
	return 0;
}

int registry_add_partitions(struct registry *reg, struct topic *t, int32_t total)
{
	struct part **np;
	int err = 0;

	if (total <= t->nparts)
		return -EINVAL;
	np = realloc(t->parts, (size_t)total * sizeof(*np));
	if (!np)
		return -ENOMEM;
	t->parts = np;
	for (int32_t p = t->nparts; p < total && !err; p++) {
		t->parts[p] = NULL;
		err = registry_open_part(reg, t, p, INT64_MAX);
		if (!err)
			t->nparts = p + 1;
	}
	log_info("topic '%s' now has %d partitions", t->name, t->nparts);
	return err;
}

/* Applies t->cfg (and the broker's producer.id.expiration.ms) to t's open partitions. */
static void registry_apply_cfg(struct registry *reg, struct topic *t)
{
	struct part_cfg pc;

	registry_part_cfg(reg, &t->cfg, &pc);
	for (int32_t p = 0; p < t->nparts; p++)
		if (t->parts[p])
			part_set_cfg(t->parts[p], &pc);
}

int registry_save_cfg(struct registry *reg, struct topic *t)
{
	char path[PATH_MAX];
	int err = topic_cfg_path(reg, t->name, path, sizeof(path));

	if (!err)
		err = topic_cfg_save(&t->cfg, path);
	registry_apply_cfg(reg, t);
	return err;
}

int registry_refresh_cfg(struct registry *reg)
{
	int err = 0;

	for (int i = 0; i < reg->ntopics; i++) {
		struct topic *t = reg->topics[i];
		int rc = topic_cfg_refresh(&t->cfg, reg->cfg);

		if (rc && !err)
			err = rc;
		registry_apply_cfg(reg, t);
	}
	return err;
}

void registry_retain(struct registry *reg, int64_t now_ms)
{
	for (int i = 0; i < reg->ntopics; i++)
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p])
				part_retain(reg->topics[i]->parts[p], now_ms);
}
