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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/ckpt.h"
#include "broker/park.h"
#include "cluster/mcache.h"
#include "log/compact.h"
#include "log/epochs.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/dirdel.h"
#include "util/durable.h"
#include "util/log.h"
#include "util/uuid.h"

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
	int dir_err;                   /* -errno of the sync that failed, 0 while the dir is online (atomic) */
	struct dirdel *dirdel;         /* removes renamed-away partition directories */
	struct ckpt_writer *ckptw;     /* writes the checkpoints off the event loop */
	int dir_fd;                    /* the log dir, open for its life: syncfs sees every writeback error since */
	const struct mcache *mcache;   /* cluster mode: who leads what (registry_set_mcache) */
	int32_t self;                  /* this broker's id, for mcache */
	registry_leader_fn *leader_fn; /* cluster mode: LeaderAndIsr's leaders, asked before mcache */
	void *leader_arg;
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

void registry_set_mcache(struct registry *reg, const struct mcache *mc, int32_t self)
{
	reg->mcache = mc;
	reg->self = self;
}

void registry_set_leader_fn(struct registry *reg, registry_leader_fn *fn, void *arg)
{
	reg->leader_fn = fn;
	reg->leader_arg = arg;
}

/* Cluster mode: the leader the controller named, or -2 if the cache does not know the partition. */
static int32_t registry_cached_leader(const struct registry *reg, const char *name, int32_t len, int32_t partition)
{
	const struct mcache_part *mp;
	int32_t leader;

	if (!reg->mcache)
		return -2; /* a single node leads everything */
	if (reg->leader_fn && (leader = reg->leader_fn(reg->leader_arg, name, len, partition)) != -2)
		return leader; /* this broker's own role, from LeaderAndIsr */
	mp = mcache_part(reg->mcache, name, len, partition);
	return mp ? mp->leader : -2;
}

int32_t registry_leader(const struct registry *reg, const struct topic *t, int32_t partition)
{
	int32_t leader = registry_cached_leader(reg, t->name, (int32_t)strlen(t->name), partition);

	if (leader != -2)
		return leader;
	return reg->mcache ? -1 : reg->cfg->node_id; /* cluster mode: not known led here (yet) */
}

int32_t registry_leader_epoch(const struct registry *reg, const struct topic *t, int32_t partition)
{
	const struct mcache_part *mp;

	if (!reg->mcache)
		return 0; /* a single node's leadership never changes: Metadata answers 0 */
	mp = mcache_part(reg->mcache, t->name, (int32_t)strlen(t->name), partition);
	return mp ? mp->leader_epoch : -1;
}

/*
 * Cluster mode: the controller made this broker leader of part at epoch
 * (LeaderAndIsr/UpdateMetadata), so the log's epoch cache records that
 * epoch from the LEO on before anything is appended or answered under it
 * (Kafka's makeLeader); a no-op once it has.
 */
static void registry_follow_epoch(const struct topic *t, int32_t partition, struct part *part)
{
	int32_t epoch = registry_leader_epoch(t->reg, t, partition);
	int rc;

	if (epoch <= part_leader_epoch(part))
		return;
	rc = part_set_leader_epoch(part, epoch);
	if (rc)
		log_warn("registry: '%s-%d': cannot record leader epoch %d: %s", t->name, partition, epoch,
			 strerror(-rc));
}

struct part *registry_part(const struct topic *t, int32_t partition)
{
	struct part *part;

	if (partition < 0 || partition >= t->nparts || registry_dir_failed(t->reg))
		return NULL;
	if (t->reg->mcache && registry_leader(t->reg, t, partition) != t->reg->self)
		return NULL; /* another broker leads it (registry_part_error: NOT_LEADER_OR_FOLLOWER) */
	part = t->parts[partition];
	if (part && t->reg->mcache)
		registry_follow_epoch(t, partition, part);
	return part;
}

bool registry_part_known(struct registry *reg, struct kstr name, int32_t partition)
{
	struct topic *t;

	if (reg->mcache && name.p)
		return mcache_part(reg->mcache, name.p, name.len, partition) != NULL;
	t = name.p ? registry_find(reg, name) : NULL;
	return t && registry_part(t, partition);
}

int16_t registry_missing_error(const struct registry *reg, struct kstr name, int32_t partition)
{
	int32_t leader = registry_cached_leader(reg, name.p, name.len, partition);

	return leader == -2 || leader == reg->self ? KERR_UNKNOWN_TOPIC_OR_PARTITION : KERR_NOT_LEADER_OR_FOLLOWER;
}

int16_t registry_part_error(const struct topic *t, int32_t partition)
{
	if (t && t->reg->mcache && registry_leader(t->reg, t, partition) != t->reg->self)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	if (t && t->creating)
		return KERR_LEADER_NOT_AVAILABLE; /* as Kafka answers while a topic is being created */
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

const char *registry_log_dir(const struct registry *reg)
{
	return reg->dir;
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
	buf = malloc(65537); /* not calloc: zeroing it would make 64 KiB resident per file read */
	n = buf ? fread(buf, 1, 65536, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* Writes dir/partition.metadata: replacing it durably, or (sync false) a new one left to durable_syncfs(). */
static int write_partition_metadata(const char *dir, const struct kuuid *id, bool sync)
{
	char path[PATH_MAX], txt[64], b64[23];

	uuid_to_b64(id, b64);
	if (snprintf(path, sizeof(path), "%s/partition.metadata", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	snprintf(txt, sizeof(txt), "version: 0\ntopic_id: %s\n", b64);
	return sync ? durable_replace_path(path, txt, strlen(txt)) : durable_write_new(path, txt, strlen(txt));
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

/* meta.properties as it is kept: node.id, and cluster.id once known. */
static int registry_write_meta(struct registry *reg)
{
	char path[PATH_MAX], txt[256];

	snprintf(path, sizeof(path), "%s/meta.properties", reg->dir);
	snprintf(txt, sizeof(txt), "#gregor\nversion=1\nnode.id=%d\n%s%s%s", reg->cfg->node_id,
		 reg->cluster_id[0] ? "cluster.id=" : "", reg->cluster_id, reg->cluster_id[0] ? "\n" : "");
	return durable_replace_path(path, txt, strlen(txt));
}

/* The value of key= in a properties text, into out (truncated); false if absent. */
static bool meta_value(const char *txt, const char *key, char *out, size_t size)
{
	size_t n = strlen(key);

	for (const char *l = txt; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, n) && l[n] == '=') {
			snprintf(out, size, "%.*s", (int)strcspn(l + n + 1, "\r\n"), l + n + 1);
			return true;
		}
	return false;
}

/*
 * Reads meta.properties: a node.id (or Kafka's broker.id) other than the
 * configured one is refused (-EINVAL, as Kafka's InconsistentBrokerIdException:
 * the data belongs to another broker).  The cluster id kept is the file's, else
 * the configured cluster.id; a single node without either makes one up, a
 * cluster member learns it from ZooKeeper (registry_set_cluster_id()).
 */
static int registry_load_meta(struct registry *reg)
{
	char path[PATH_MAX], id[32];
	char *old;
	struct kuuid u;

	snprintf(path, sizeof(path), "%s/meta.properties", reg->dir);
	old = read_small_file(path);
	if (old && (meta_value(old, "node.id", id, sizeof(id)) || meta_value(old, "broker.id", id, sizeof(id))) &&
	    strtol(id, NULL, 10) != reg->cfg->node_id) {
		log_error("configured broker.id %d does not match stored broker.id %s in %s: this log dir belongs to "
			  "another broker (if you moved your data, configure its broker.id)",
			  reg->cfg->node_id, id, path);
		free(old);
		return -EINVAL;
	}
	if (old)
		meta_value(old, "cluster.id", reg->cluster_id, sizeof(reg->cluster_id));
	free(old);
	if (reg->cfg->cluster_id && reg->cfg->cluster_id[0])
		snprintf(reg->cluster_id, sizeof(reg->cluster_id), "%s", reg->cfg->cluster_id);
	if (!reg->cluster_id[0] && !(reg->cfg->zookeeper_connect && reg->cfg->zookeeper_connect[0])) {
		uuid_random(&u);
		uuid_to_b64(&u, reg->cluster_id);
	}
	return registry_write_meta(reg);
}

int registry_set_cluster_id(struct registry *reg, const char *id)
{
	if (reg->cluster_id[0]) {
		if (!strcmp(reg->cluster_id, id))
			return 0;
		log_error(
			"the cluster id %s does not match the stored cluster.id %s in %s/meta.properties: this broker "
			"is trying to join the wrong cluster (is zookeeper.connect right?)",
			id, reg->cluster_id, reg->dir);
		return -EINVAL;
	}
	snprintf(reg->cluster_id, sizeof(reg->cluster_id), "%s", id);
	return registry_write_meta(reg);
}

/*
 * Takes the recovery point and cleaner offset of every partition (an
 * offline one: recovery point 0, no cleaner line).  NULL on ENOMEM.
 */
static struct ckpt_snap *registry_ckpt_snap(struct registry *reg)
{
	struct ckpt_snap *s = ckpt_snap_new();

	for (int i = 0; s && i < reg->ntopics; i++) {
		struct topic *t = reg->topics[i];

		ckpt_snap_topic(s, t->name);
		for (int32_t p = 0; p < t->nparts; p++)
			ckpt_snap_part(s, p, t->parts[p] ? part_recovery_point(t->parts[p]) : 0,
				       t->parts[p] ? part_clean_offset(t->parts[p]) : -1);
	}
	return s;
}

/* The final checkpoint of a shutdown, on this thread. */
static int registry_write_checkpoint(struct registry *reg)
{
	struct ckpt_snap *s;
	int err;

	if (registry_dir_failed(reg))
		return -EIO;
	s = registry_ckpt_snap(reg);
	err = s ? ckpt_snap_write(s, reg->dir) : -ENOMEM;
	ckpt_snap_free(s);
	return err;
}

int registry_checkpoint(struct registry *reg)
{
	struct ckpt_snap *s;

	if (registry_dir_failed(reg))
		return -EIO;
	s = registry_ckpt_snap(reg);
	if (!s)
		return -ENOMEM;
	ckpt_writer_submit(reg->ckptw, s);
	return 0;
}

/* ---- topics ---- */

static void registry_part_cfg(const struct registry *reg, const struct topic_cfg *tc, struct part_cfg *pc)
{
	part_cfg_default(pc);
	pc->producer_id_expiration_ms = reg->cfg->producer_id_expiration_ms;
	pc->hw_on_sync = park_sync_on_ack(reg->cfg);
	pc->segment_bytes = tc->segment_bytes;
	pc->preallocate = tc->preallocate == 1;
	pc->segment_ms = tc->segment_ms;
	pc->segment_jitter_ms = tc->segment_jitter_ms;
	pc->retention_ms = tc->retention_ms;
	pc->retention_bytes = tc->retention_bytes;
	pc->retention_delete = config_cleanup_deletes(tc->cleanup_policy);
	pc->index_interval_bytes = tc->index_interval_bytes;
	pc->segment_index_bytes = tc->segment_index_bytes;
	pc->log_append_time = tc->message_timestamp_type == CONFIG_TS_LOG_APPEND_TIME;
	pc->deleter = reg->dirdel;
	pc->file_delete_delay_ms = tc->file_delete_delay_ms;
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
		err = write_partition_metadata(dir, &t->id, true);
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

/* A partition directory registry_scan() found. */
struct scan_ent {
	char *topic;
	int32_t p;
};

static int scan_ent_cmp(const void *a, const void *b)
{
	const struct scan_ent *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	return c ? c : (x->p > y->p) - (x->p < y->p);
}

/* Appends (topic, p) to *v; 0 or -ENOMEM. */
static int scan_ent_push(struct scan_ent **v, int *n, int *cap, const char *topic, int32_t p)
{
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 64;
		struct scan_ent *nv = realloc(*v, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[*n].topic = strdup(topic);
	(*v)[*n].p = p;
	return (*v)[(*n)++].topic ? 0 : -ENOMEM;
}

/* Makes the topics of the sorted entries, each once with its highest partition: no reallocation per partition. */
static int registry_found_all(struct registry *reg, struct scan_ent *v, int n)
{
	for (int i = 0; i < n; i++)
		if ((i + 1 == n || strcmp(v[i].topic, v[i + 1].topic)) && !registry_found(reg, v[i].topic, v[i].p))
			return -ENOMEM;
	return 0;
}

/*
 * Lists the log dir once.  Partition directories are sorted before their
 * topics are made, so each topic goes at the end of the sorted array (no
 * shifting of the others) and is sized once.
 */
static int registry_scan(struct registry *reg)
{
	DIR *d = opendir(reg->dir);
	struct dirent *e;
	struct scan_ent *v = NULL;
	int n = 0, cap = 0, err = 0;
	char topic[256];

	if (!d)
		return -errno;
	while (!err && (e = readdir(d)) != NULL) {
		int32_t p = parse_part_dir(e->d_name, topic, sizeof(topic));

		if (e->d_type != DT_REG && part_dir_is_aside(e->d_name))
			registry_queue_leftover(reg, e->d_name);
		if (e->d_type == DT_REG && strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".tmp"))
			unlinkat(dirfd(d), e->d_name, 0); /* a replacement a crash cut short (util/durable.h) */
		if (p >= 0 && e->d_type != DT_REG)
			err = scan_ent_push(&v, &n, &cap, topic, p);
	}
	closedir(d);
	if (!err && n)
		qsort(v, (size_t)n, sizeof(*v), scan_ent_cmp);
	if (!err)
		err = registry_found_all(reg, v, n);
	for (int i = 0; i < n; i++)
		free(v[i].topic);
	free(v);
	if (!err)
		registry_drop_incomplete(reg);
	return err;
}

/* Opens the partitions of every topic found by registry_scan(). */
static int registry_open_all(struct registry *reg, bool clean)
{
	struct ckpt_map *ck = NULL, *cl = NULL;
	char path[PATH_MAX], dir0[PATH_MAX], why[256];
	int err = 0;

	if (!clean)
		ckpt_map_load(reg->dir, CKPT_RECOVERY_FILE, &ck);
	ckpt_map_load(reg->dir, CKPT_CLEANER_FILE, &cl);
	for (int i = 0; i < reg->ntopics && !err; i++) {
		struct topic *t = reg->topics[i];

		snprintf(dir0, sizeof(dir0), "%s/%s-0", reg->dir, t->name);
		if (read_partition_metadata(dir0, &t->id) < 0)
			uuid_random(&t->id);
		if (topic_cfg_path(reg, t->name, path, sizeof(path)) == 0 && access(path, F_OK) == 0 &&
		    topic_cfg_load(&t->cfg, path, why, sizeof(why)) < 0)
			log_warn("topic '%s': cannot load '%s' (%s); using defaults", t->name, path, why);
		for (int32_t p = 0; p < t->nparts && !err; p++) {
			int64_t rp = clean ? INT64_MAX : ckpt_map_find(ck, t->name, p);

			if (registry_open_part(reg, t, p, rp) == 0)
				part_set_clean_offset(t->parts[p], ckpt_map_find(cl, t->name, p));
			else
				log_error("partition '%s-%d' is offline (KAFKA_STORAGE_ERROR) until its files are "
					  "repaired",
					  t->name, p);
		}
	}
	ckpt_map_free(ck);
	ckpt_map_free(cl);
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
	if (reg->ckptw)
		ckpt_writer_stop(reg->ckptw);
	if (reg->dirdel)
		dirdel_stop(reg->dirdel);
	if (reg->dir_fd >= 0)
		close(reg->dir_fd);
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
	if (err && err != -EINVAL)
		log_error("cannot write '%s/meta.properties': %s", reg->dir, strerror(-err));
	reg->dir_fd = err ? -1 : open(reg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!err && reg->dir_fd < 0) {
		err = -errno;
		log_error("cannot open log dir '%s': %s", reg->dir, strerror(-err));
	}
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

/* After a crash: how much of the log recovery had to read, past the recovery points. */
static void registry_log_scanned(struct registry *reg)
{
	int64_t bytes = 0, b;
	int segs = 0, parts = 0, n;

	for (int i = 0; i < reg->ntopics; i++)
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++) {
			if (!reg->topics[i]->parts[p])
				continue;
			part_recovery_scanned(reg->topics[i]->parts[p], &n, &b);
			segs += n;
			bytes += b;
			parts += n > 0;
		}
	log_info("recovery scanned %d segment(s), %lld bytes, in %d partition(s) past their recovery points", segs,
		 (long long)bytes, parts);
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
	reg->dir_fd = -1;
	reg->dir = strdup(cfg->log_dirs);
	if (!reg->dir) {
		free(reg);
		return -ENOMEM;
	}
	reg->dir[strcspn(reg->dir, ",")] = '\0'; /* one log dir on a single node */
	durable_on_fail(registry_on_sync_fail, reg);
	err = dirdel_start(&reg->dirdel);
	if (!err)
		err = ckpt_writer_start(reg->dir, &reg->ckptw);
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
	for (int i = 0; i < reg->ntopics; i++) {
		reg->topics[i]->nparts_next = reg->topics[i]->nparts;
		nparts += reg->topics[i]->nparts;
	}
	log_info("loaded %d topics with %d partitions from '%s'%s in %lld ms", reg->ntopics, nparts, reg->dir,
		 !nparts ? ""
		 : clean ? " (clean shutdown, no recovery needed)"
			 : " (recovered after an unclean shutdown)",
		 (long long)(clock_mono_ms() - t0));
	if (!clean)
		registry_log_scanned(reg);
	*out = reg;
	return 0;
}

void registry_close(struct registry *reg)
{
	bool failed = registry_dir_failed(reg);
	char marker[PATH_MAX];
	int err = 0, rc;

	/*
	 * One writeback of the whole file system first: every partition's
	 * files, index files and the producer snapshots written unsynced just
	 * before included (part_close() syncs none of those), in one pass.  The per-partition syncs below then find nothing left to
	 * write; they still report a file's own failure.
	 */
	for (int i = 0; i < reg->ntopics && !failed; i++)
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p])
				part_prepare_close(reg->topics[i]->parts[p]);
	if (!failed)
		err = durable_syncfs(reg->dir_fd);
	for (int i = 0; i < reg->ntopics && !failed; i++)
		for (int32_t p = 0; p < reg->topics[i]->nparts; p++)
			if (reg->topics[i]->parts[p] && (rc = part_sync(reg->topics[i]->parts[p])) < 0 && !err)
				err = rc;
	ckpt_writer_stop(reg->ckptw); /* a periodic write must not land after the final one */
	rc = registry_write_checkpoint(reg);
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
	close(reg->dir_fd);
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

/* ---- making topics and partitions (registry.h, struct reg_build) ---- */

static void build_free(struct reg_build *b)
{
	free(b->cfg_text);
	free(b->stage);
	free(b->parts);
	free(b);
}

/* A build of partitions [from, to) of t; the partition config is taken now, on the loop thread. */
static struct reg_build *build_alloc(struct registry *reg, struct topic *t, int32_t from, int32_t to)
{
	struct reg_build *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->parts = calloc((size_t)(to - from), sizeof(*b->parts));
	if (!b->parts) {
		free(b);
		return NULL;
	}
	b->t = t;
	b->from = from;
	b->to = to;
	registry_part_cfg(reg, &t->cfg, &b->pc);
	return b;
}

int64_t registry_partition_room(const struct registry *reg)
{
	struct rlimit rl;
	int64_t limit, cache = reg->cfg->log_segment_fd_cache_size, held = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT32_MAX)
		return INT32_MAX;
	limit = (int64_t)rl.rlim_cur;
	if (cache > limit / 2)
		cache = limit / 2;
	for (int i = 0; i < reg->ntopics; i++)
		held += reg->topics[i]->nparts_next;
	return limit - cache - REGISTRY_FD_RESERVE - held;
}

int registry_create_begin(struct registry *reg, struct kstr name, int32_t nparts, const struct topic_cfg *tcfg,
			  struct reg_build **out)
{
	char namebuf[256];
	struct reg_build *b = NULL;
	struct topic *t;
	int err = -ENOMEM;

	if (!topic_name_valid(name) || nparts <= 0)
		return -EINVAL;
	if (registry_find(reg, name))
		return -EEXIST;
	if (registry_dir_failed(reg))
		return -EIO;
	if (nparts > registry_partition_room(reg))
		return -EMFILE;
	memcpy(namebuf, name.p, (size_t)name.len);
	namebuf[name.len] = '\0';
	t = topic_alloc(reg, namebuf, 0);
	if (!t)
		return -ENOMEM;
	t->creating = true;
	t->nparts_next = nparts;
	uuid_random(&t->id);
	if (topic_cfg_copy(&t->cfg, tcfg) == 0 && (b = build_alloc(reg, t, 0, nparts)) != NULL)
		b->cfg_text = topic_cfg_format(&t->cfg, &b->cfg_len);
	if (b && b->cfg_text)
		err = registry_insert(reg, t);
	if (err) {
		if (b)
			build_free(b);
		topic_free(t);
		return err;
	}
	b->create = true;
	t->builds = 1;
	*out = b;
	return 0;
}

int registry_grow_begin(struct registry *reg, struct topic *t, int32_t total, struct reg_build **out)
{
	struct reg_build *b;

	if (t->creating || total <= t->nparts_next)
		return -EINVAL;
	if (registry_dir_failed(reg))
		return -EIO;
	if (total - t->nparts_next > registry_partition_room(reg))
		return -EMFILE;
	b = build_alloc(reg, t, t->nparts_next, total);
	if (!b)
		return -ENOMEM;
	t->nparts_next = total;
	t->builds++;
	*out = b;
	return 0;
}

/* Worker: partition p of b made in dir, its files written but not synced. */
static int build_part(struct reg_build *b, const char *dir, int32_t p)
{
	int err;

	if (mkdir(dir, 0755) == 0) /* empty: one .log, no index or leader-epoch file yet (log/epochs.h) */
		err = part_create(dir, &b->pc, &b->parts[p - b->from]);
	else if (errno == EEXIST)
		err = part_open(dir, &b->pc, INT64_MAX, 0, &b->parts[p - b->from]);
	else
		return -errno;
	if (!err && p > 0)
		err = write_partition_metadata(dir, &b->t->id, false);
	return err;
}

/*
 * Worker: everything of b but a new topic's partition 0, which is staged:
 * a directory holding topic.properties and partition.metadata, renamed to
 * <topic>-0 only once all of it is durable.
 */
static int build_files(struct registry *reg, struct reg_build *b)
{
	char path[PATH_MAX];
	int err = 0;

	if (b->create) {
		b->stage = part_dir_aside(reg, b->t->name, 0, CREATE_SUFFIX);
		if (!b->stage)
			return -ENOMEM;
		if (mkdir(b->stage, 0755) < 0)
			return -errno;
		if (snprintf(path, sizeof(path), "%s/%s", b->stage, TOPIC_CFG_FILE) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		err = durable_write_new(path, b->cfg_text, b->cfg_len);
		if (!err)
			err = write_partition_metadata(b->stage, &b->t->id, false);
	}
	for (int32_t p = b->create ? 1 : b->from; p < b->to && !err; p++) {
		char *dir = part_dir(reg, b->t->name, p);

		b->reached = p + 1;
		err = dir ? build_part(b, dir, p) : -ENOMEM;
		free(dir);
	}
	return err;
}

/* Worker: removes what a failed build made, a new topic's partition 0 first (as a delete would). */
static void build_undo(struct registry *reg, struct reg_build *b)
{
	char *dir = b->create ? part_dir(reg, b->t->name, 0) : NULL;

	if (b->create && b->parts[0])
		part_delete(b->parts[0]);
	else if (b->create)
		dirdel_remove(b->stage ? b->stage : dir); /* staged, or renamed (ENOENT if neither) */
	free(dir);
	dir = NULL;
	for (int32_t p = b->create ? 1 : b->from; p < b->reached; p++) { /* the rest were never begun */
		struct part **slot = &b->parts[p - b->from];

		if (*slot)
			part_delete(*slot);
		else if ((dir = part_dir(reg, b->t->name, p)) != NULL)
			dirdel_remove(dir); /* made but not opened, or never made (ENOENT) */
		else
			break;
		free(dir);
		dir = NULL;
		*slot = NULL;
	}
	b->parts[0] = NULL;
	log_error("could not %s topic '%s' (partitions %d to %d): %s", b->create ? "create" : "add partitions to",
		  b->t->name, b->from, b->to - 1, strerror(-b->err));
}

/* Worker: gives a new topic its partition 0 by renaming the staged directory (made durable by the caller). */
static int build_publish(struct registry *reg, struct reg_build *b)
{
	char *dir = part_dir(reg, b->t->name, 0);
	int err = 0;

	if (!dir)
		return -ENOMEM;
	if (rename(b->stage, dir) < 0)
		err = -errno;
	else {
		free(b->stage);
		b->stage = NULL;
	}
	free(dir);
	return err;
}

/* Worker: opens a new topic's partition 0 once its directory has its name. */
static int build_open_part0(struct registry *reg, struct reg_build *b)
{
	char *dir = part_dir(reg, b->t->name, 0);
	int err = dir ? build_part(b, dir, 0) : -ENOMEM;

	free(dir);
	return err;
}

void registry_build_round(struct registry *reg, struct reg_build *head)
{
	bool renamed = false;
	int err;

	for (struct reg_build *b = head; b; b = b->next)
		b->err = build_files(reg, b);
	err = durable_syncfs(reg->dir_fd); /* every file and directory entry made above */
	for (struct reg_build *b = head; b; b = b->next) {
		if (!b->err)
			b->err = err;
		if (!b->err && b->create)
			renamed |= (b->err = build_publish(reg, b)) == 0;
	}
	err = renamed ? durable_fsync(reg->dir_fd) : 0; /* the renames: the new topics exist */
	for (struct reg_build *b = head; b; b = b->next) {
		if (!b->err && b->create)
			b->err = err ? err : build_open_part0(reg, b);
		if (b->err)
			build_undo(reg, b);
	}
}

/* Loop thread: t takes the partitions of b. */
static int build_install(struct topic *t, struct reg_build *b)
{
	struct part **np = realloc(t->parts, (size_t)b->to * sizeof(*np));

	if (!np)
		return -ENOMEM;
	memcpy(np + b->from, b->parts, (size_t)(b->to - b->from) * sizeof(*np));
	memset(b->parts, 0, (size_t)(b->to - b->from) * sizeof(*b->parts));
	t->parts = np;
	t->nparts = b->to;
	t->creating = false;
	return 0;
}

int registry_build_end(struct registry *reg, struct reg_build *b)
{
	struct topic *t = b->t;
	int err = b->err;

	if (!err && b->from != t->nparts)
		err = -ECANCELED; /* an earlier build of t failed: no gap in its partitions */
	if (!err)
		err = build_install(t, b);
	t->builds--;
	if (!err)
		log_info(b->create ? "created topic '%s' with %d partitions" : "topic '%s' now has %d partitions",
			 t->name, t->nparts);
	for (int32_t i = 0; i < b->to - b->from; i++)
		if (b->parts[i]) /* made, not installed */
			part_delete(b->parts[i]);
	if (err && b->create) {
		registry_remove(reg, t);
		topic_free(t);
	} else if (err && !t->builds) {
		t->nparts_next = t->nparts;
	}
	build_free(b);
	return err;
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
