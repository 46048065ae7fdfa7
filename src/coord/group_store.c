/*
 * group_store.c - offset tables and the __consumer_offsets record formats
 * (see group_store.h for the byte layouts).
 *
 * Offset tables are sorted arrays searched by bisection: groups commit a
 * few hundred partitions at most, and a sorted table makes "every offset of
 * a topic" (OffsetFetch with all partitions) a contiguous run.
 *
 * Writes build one uncompressed batch per call (records_build) and append
 * it with part_append; the caller decides about fsync.  Keys and values
 * are first serialised into one scratch writer and only then pointed at
 * (the writer may move while growing).
 */
#include "coord/group_store.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/partition.h"
#include "log/pstate.h"
#include "log/scan.h"
#include "proto/records.h"
#include "util/log.h"

#define GROUP_STORE_KEY_OFFSET 1 /* version we write; 0 is read too */
#define GROUP_STORE_KEY_META 2
#define GROUP_STORE_VALUE_OFFSET 3
#define GROUP_STORE_VALUE_META 3

struct group_store {
	struct coord_topic topic; /* partitions looked up on each use, never kept */
};

/* ---- offset tables ---- */

void group_store_offsets_init(struct group_offsets *go)
{
	memset(go, 0, sizeof(*go));
}

static void group_store_offset_free(struct group_offset *o)
{
	free(o->topic);
	o->topic = NULL;
	free(o->metadata);
	o->metadata = NULL;
}

static void group_store_pending_free(struct group_offsets_pending *p)
{
	for (int i = 0; i < p->n; i++)
		group_store_offset_free(&p->v[i]);
	free(p->v);
	free(p);
}

void group_store_offsets_release(struct group_offsets *go)
{
	for (int i = 0; i < go->n; i++)
		group_store_offset_free(&go->v[i]);
	free(go->v);
	go->v = NULL;
	while (go->pending) {
		struct group_offsets_pending *p = go->pending;

		go->pending = p->next;
		group_store_pending_free(p);
	}
	go->n = go->cap = 0;
}

static int group_store_cmp(struct kstr topic, int32_t partition, const struct group_offset *o)
{
	size_t tl = strlen(o->topic), n = (size_t)topic.len < tl ? (size_t)topic.len : tl;
	int c = memcmp(topic.p, o->topic, n);

	if (c)
		return c;
	if ((size_t)topic.len != tl)
		return (size_t)topic.len < tl ? -1 : 1;
	return partition < o->partition ? -1 : partition > o->partition;
}

/* Index of (topic, partition) in v, or -(insertion point) - 1. */
static int group_store_find(const struct group_offset *v, int n, struct kstr topic, int32_t partition)
{
	int lo = 0, hi = n - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, c = group_store_cmp(topic, partition, &v[mid]);

		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -lo - 1;
}

const struct group_offset *group_store_offset_get(const struct group_offsets *go, struct kstr topic, int32_t partition)
{
	int i = group_store_find(go->v, go->n, topic, partition);

	return i >= 0 ? &go->v[i] : NULL;
}

/* Sets o in the sorted array (v, n, cap); copies o's strings. */
static int group_store_array_set(struct group_offset **v, int *n, int *cap, const struct group_offset *o)
{
	struct kstr topic = kstr_c(o->topic);
	int i = group_store_find(*v, *n, topic, o->partition);
	char *meta = strdup(o->metadata ? o->metadata : "");

	if (!meta)
		return -ENOMEM;
	if (i >= 0) {
		free((*v)[i].metadata);
		(*v)[i].metadata = meta;
	} else {
		char *t = strdup(o->topic);

		if (!t || (*n == *cap && !(*v = reallocarray(*v, (size_t)(*cap = *cap ? *cap * 2 : 8), sizeof(**v))))) {
			free(t);
			free(meta);
			return -ENOMEM;
		}
		i = -i - 1;
		memmove(&(*v)[i + 1], &(*v)[i], (size_t)(*n - i) * sizeof(**v));
		(*n)++;
		(*v)[i].topic = t;
		(*v)[i].partition = o->partition;
		(*v)[i].metadata = meta;
	}
	(*v)[i].offset = o->offset;
	(*v)[i].leader_epoch = o->leader_epoch;
	(*v)[i].commit_ts_ms = o->commit_ts_ms;
	return 0;
}

int group_store_offset_set(struct group_offsets *go, const struct group_offset *o)
{
	return group_store_array_set(&go->v, &go->n, &go->cap, o);
}

bool group_store_offset_delete(struct group_offsets *go, struct kstr topic, int32_t partition)
{
	int i = group_store_find(go->v, go->n, topic, partition);

	if (i < 0)
		return false;
	group_store_offset_free(&go->v[i]);
	memmove(&go->v[i], &go->v[i + 1], (size_t)(go->n - i - 1) * sizeof(*go->v));
	go->n--;
	return true;
}

int group_store_offset_stage(struct group_offsets *go, int32_t log_partition, int64_t producer_id,
			     const struct group_offset *o)
{
	struct group_offsets_pending *p = go->pending;

	while (p && (p->producer_id != producer_id || p->log_partition != log_partition))
		p = p->next;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->producer_id = producer_id;
		p->log_partition = log_partition;
		p->next = go->pending;
		go->pending = p;
	}
	return group_store_array_set(&p->v, &p->n, &p->cap, o);
}

void group_store_offset_complete(struct group_offsets *go, int32_t log_partition, int64_t producer_id, bool commit)
{
	struct group_offsets_pending **pp = &go->pending, *p;

	while (*pp && ((*pp)->producer_id != producer_id || (*pp)->log_partition != log_partition))
		pp = &(*pp)->next;
	p = *pp;
	if (!p)
		return;
	*pp = p->next;
	for (int i = 0; commit && i < p->n; i++)
		if (group_store_offset_set(go, &p->v[i]) < 0)
			log_error("out of memory committing staged offsets of producer %lld", (long long)producer_id);
	group_store_pending_free(p);
}

bool group_store_offset_pending(const struct group_offsets *go, struct kstr topic, int32_t partition)
{
	for (const struct group_offsets_pending *p = go->pending; p; p = p->next)
		if (group_store_find(p->v, p->n, topic, partition) >= 0)
			return true;
	return false;
}

/* ---- the store ---- */

int group_store_new(struct group_store **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void group_store_free(struct group_store *gs)
{
	free(gs);
}

void group_store_attach(struct group_store *gs, const struct coord_topic *ct)
{
	gs->topic = *ct; /* attached once nparts > 0 */
}

bool group_store_attached(const struct group_store *gs)
{
	return gs->topic.nparts > 0;
}

int32_t group_store_nparts(const struct group_store *gs)
{
	return gs->topic.nparts;
}

int32_t group_store_partition_for(struct kstr group, int32_t nparts)
{
	assert(nparts > 0);
	return coord_partition_for(group, nparts);
}

int32_t group_store_partition_of(const struct group_store *gs, struct kstr group)
{
	return group_store_partition_for(group, gs->topic.nparts);
}

/* ---- encoding ---- */

static void group_store_wr_str(struct wr *w, struct kstr s)
{
	wr_i16(w, (int16_t)(s.p ? s.len : -1));
	if (s.p && s.len > 0)
		wr_raw(w, s.p, (size_t)s.len);
}

static void group_store_wr_bytes(struct wr *w, struct bytes b)
{
	wr_i32(w, b.p ? b.len : 0);
	if (b.p && b.len > 0)
		wr_raw(w, b.p, (size_t)b.len);
}

static void group_store_meta_value(struct wr *w, const struct group_store_meta *m)
{
	wr_i16(w, GROUP_STORE_VALUE_META);
	group_store_wr_str(w, m->protocol_type.p ? m->protocol_type : KSTR(""));
	wr_i32(w, m->generation);
	group_store_wr_str(w, m->protocol_name);
	group_store_wr_str(w, m->leader);
	wr_i64(w, m->state_ts_ms);
	wr_i32(w, m->nmembers);
	for (int32_t i = 0; i < m->nmembers; i++) {
		const struct group_store_member *mb = &m->members[i];

		group_store_wr_str(w, mb->member_id);
		group_store_wr_str(w, mb->group_instance_id);
		group_store_wr_str(w, mb->client_id);
		group_store_wr_str(w, mb->client_host);
		wr_i32(w, mb->rebalance_timeout_ms);
		wr_i32(w, mb->session_timeout_ms);
		group_store_wr_bytes(w, mb->subscription);
		group_store_wr_bytes(w, mb->assignment);
	}
}

/* Key and value positions of one record inside the scratch writer. */
struct group_store_span {
	size_t key_at, key_len, value_at;
	int32_t value_len; /* -1: tombstone */
};

static void group_store_offset_kv(struct wr *w, struct kstr group, const struct group_offset *o, bool tombstone,
				  struct group_store_span *sp)
{
	sp->key_at = w->len;
	wr_i16(w, GROUP_STORE_KEY_OFFSET);
	group_store_wr_str(w, group);
	group_store_wr_str(w, kstr_c(o->topic));
	wr_i32(w, o->partition);
	sp->key_len = w->len - sp->key_at;
	sp->value_at = w->len;
	sp->value_len = -1;
	if (tombstone)
		return;
	wr_i16(w, GROUP_STORE_VALUE_OFFSET);
	wr_i64(w, o->offset);
	wr_i32(w, o->leader_epoch);
	group_store_wr_str(w, kstr_c(o->metadata ? o->metadata : ""));
	wr_i64(w, o->commit_ts_ms);
	sp->value_len = (int32_t)(w->len - sp->value_at);
}

/*
 * Builds one batch of the n key/value records laid out in scratch (sp) and
 * appends it: a plain batch, or a transactional one of producer_id >= 0.
 */
static int group_store_append(struct part *part, const struct wr *scratch, const struct group_store_span *sp, int n,
			      int64_t producer_id, int16_t producer_epoch, int64_t now_ms)
{
	struct rec_kv *kv = calloc((size_t)(n > 0 ? n : 1), sizeof(*kv));
	struct part_append_info info;
	struct wr batch;
	int err = !kv ? -ENOMEM : scratch->err;

	wr_init(&batch);
	for (int i = 0; !err && i < n; i++)
		kv[i] = (struct rec_kv){ scratch->buf + sp[i].key_at, (int32_t)sp[i].key_len,
					 sp[i].value_len < 0 ? NULL : scratch->buf + sp[i].value_at, sp[i].value_len };
	if (!err)
		err = producer_id < 0 ? records_build(&batch, 0, now_ms, kv, n)
				      : records_build_txn(&batch, now_ms, producer_id, producer_epoch, kv, n);
	if (!err)
		err = batch.err ? batch.err : part_append(part, batch.buf, batch.len, now_ms, &info);
	wr_release(&batch);
	free(kv);
	return err;
}

int group_store_write(struct group_store *gs, struct kstr group, const struct group_offset *offs, int n, bool tombstone,
		      const struct group_store_meta *meta, bool meta_tombstone, int64_t now_ms, struct part **part_out)
{
	int nrec = n + (meta || meta_tombstone), err;
	struct group_store_span *sp = calloc((size_t)(nrec ? nrec : 1), sizeof(*sp));
	struct part *part = group_store_part(gs, group);
	struct wr scratch;

	wr_init(&scratch);
	err = !sp ? -ENOMEM : nrec == 0 ? -EINVAL : !part ? -ENOENT : 0;
	for (int i = 0; !err && i < n; i++)
		group_store_offset_kv(&scratch, group, &offs[i], tombstone, &sp[i]);
	if (!err && nrec > n) {
		sp[n].key_at = scratch.len;
		wr_i16(&scratch, GROUP_STORE_KEY_META);
		group_store_wr_str(&scratch, group);
		sp[n].key_len = scratch.len - sp[n].key_at;
		sp[n].value_at = scratch.len;
		sp[n].value_len = -1;
		if (meta) {
			group_store_meta_value(&scratch, meta);
			sp[n].value_len = (int32_t)(scratch.len - sp[n].value_at);
		}
	}
	if (!err)
		err = group_store_append(part, &scratch, sp, nrec, -1, -1, now_ms);
	if (!err)
		*part_out = part;
	wr_release(&scratch);
	free(sp);
	return err;
}

/* ---- transactions (TxnOffsetCommit; coord/txn.c writes the markers) ---- */

int group_store_write_txn(struct group_store *gs, struct kstr group, const struct group_offset *offs, int n,
			  int64_t producer_id, int16_t producer_epoch, int64_t now_ms, struct part **part_out)
{
	struct group_store_span *sp = calloc((size_t)(n > 0 ? n : 1), sizeof(*sp));
	struct part *part = group_store_part(gs, group);
	struct wr scratch;
	int err;

	const struct pstate_entry *e = part ? pstate_find(part_pstate(part), producer_id) : NULL;

	wr_init(&scratch);
	err = !sp ? -ENOMEM : n <= 0 ? -EINVAL : !part ? -ENOENT : e && e->epoch > producer_epoch ? -ESTALE : 0;
	for (int i = 0; !err && i < n; i++)
		group_store_offset_kv(&scratch, group, &offs[i], false, &sp[i]);
	if (!err)
		err = group_store_append(part, &scratch, sp, n, producer_id, producer_epoch, now_ms);
	if (!err)
		*part_out = part;
	wr_release(&scratch);
	free(sp);
	return err;
}

struct part *group_store_part(const struct group_store *gs, struct kstr group)
{
	return gs->topic.part(gs->topic.arg, group_store_partition_of(gs, group));
}

/* ---- decoding and loading ---- */

static struct bytes group_store_rd_bytes(struct rd *r)
{
	int32_t len = rd_i32(r);
	struct bytes b = { NULL, -1 };

	if (len >= 0)
		rd_view(r, (size_t)len, &b);
	return b;
}

/* Decodes an offset commit value; strings become NUL-less views (copied by the caller). */
static int group_store_offset_value(struct rd *r, struct group_offset *o, struct kstr *meta)
{
	int16_t v = rd_i16(r);

	o->offset = rd_i64(r);
	o->leader_epoch = v >= 3 ? rd_i32(r) : -1;
	*meta = rd_kstr16(r);
	o->commit_ts_ms = rd_i64(r);
	if (v == 1)
		rd_i64(r); /* expire timestamp */
	return r->err || v < 0 || v > 3 ? -EBADMSG : 0;
}

static int group_store_meta_decode(struct rd *r, struct group_store_meta *m)
{
	int16_t v = rd_i16(r);
	int32_t n;

	m->protocol_type = rd_kstr16(r);
	m->generation = rd_i32(r);
	m->protocol_name = rd_kstr16(r);
	m->leader = rd_kstr16(r);
	m->state_ts_ms = v >= 2 ? rd_i64(r) : -1;
	n = rd_count(r, rd_i32(r), 20, false);
	if (r->err || v < 0 || v > 3)
		return -EBADMSG;
	m->members = calloc((size_t)(n ? n : 1), sizeof(*m->members));
	if (!m->members)
		return -ENOMEM;
	m->nmembers = n;
	for (int32_t i = 0; i < n; i++) {
		struct group_store_member *mb = &m->members[i];

		mb->member_id = rd_kstr16(r);
		mb->group_instance_id = v >= 3 ? rd_kstr16(r) : KSTR_NULL;
		mb->client_id = rd_kstr16(r);
		mb->client_host = rd_kstr16(r);
		mb->rebalance_timeout_ms = v >= 1 ? rd_i32(r) : -1;
		mb->session_timeout_ms = rd_i32(r);
		mb->subscription = group_store_rd_bytes(r);
		mb->assignment = group_store_rd_bytes(r);
	}
	return r->err ? -EBADMSG : 0;
}

/*
 * One offset record replayed into its group's table: a transactional one
 * (producer_id >= 0) staged until its marker, another set, a tombstone
 * deleting.
 */
static void group_store_replay_offset(const struct group_store_loader *ld, void *arg, int32_t log_partition,
				      struct kstr group, struct kstr topic, int32_t partition,
				      const struct group_offset *o, int64_t producer_id)
{
	struct group_offsets *go = ld->offsets(arg, group, o != NULL);

	if (!go)
		return;
	if (o && producer_id >= 0)
		group_store_offset_stage(go, log_partition, producer_id, o);
	else if (o)
		group_store_offset_set(go, o);
	else
		group_store_offset_delete(go, topic, partition);
}

/* One record of a non-control batch: dispatches on the key version. */
static int group_store_apply(int32_t log_partition, struct bytes key, struct bytes value, int64_t producer_id,
			     const struct group_store_loader *ld, void *arg)
{
	struct rd r, rv;
	int16_t kv;
	struct kstr group;
	int err = 0;

	rd_init(&r, key.p, key.len > 0 ? (size_t)key.len : 0);
	rd_init(&rv, value.p, value.len > 0 ? (size_t)value.len : 0);
	kv = rd_i16(&r);
	group = rd_kstr16(&r);
	if (kv == 0 || kv == 1) {
		struct kstr topic = rd_kstr16(&r), meta;
		int32_t partition = rd_i32(&r);
		struct group_offset o = { 0 };
		char *t;

		if (r.err || !topic.p)
			return -EBADMSG;
		if (value.len < 0) {
			group_store_replay_offset(ld, arg, log_partition, group, topic, partition, NULL, producer_id);
			return 0;
		}
		if (group_store_offset_value(&rv, &o, &meta) < 0)
			return -EBADMSG;
		t = strndup(topic.p, (size_t)topic.len);
		o.metadata = meta.p ? strndup(meta.p, (size_t)meta.len) : strdup("");
		o.topic = t;
		o.partition = partition;
		if (t && o.metadata)
			group_store_replay_offset(ld, arg, log_partition, group, topic, partition, &o, producer_id);
		else
			err = -ENOMEM;
		free(t);
		free(o.metadata);
		return err;
	}
	if (kv == 2 && !r.err) {
		struct group_store_meta m = { 0 };

		if (value.len < 0) {
			ld->on_meta(arg, group, NULL);
			return 0;
		}
		err = group_store_meta_decode(&rv, &m);
		if (!err)
			ld->on_meta(arg, group, &m);
		free(m.members);
		return err;
	}
	return -EBADMSG;
}

/* Which records a scan applies, by where their group's partition is (group_store_load). */
enum group_store_only { GROUP_STORE_ALL, GROUP_STORE_OWN, GROUP_STORE_FOREIGN };

struct group_store_scan {
	const struct group_store_loader *ld;
	void *arg;
	int64_t producer_id; /* of the batch being read: -1 outside transactions */
	int32_t pidx, nparts;
	enum group_store_only only;
	bool foreign; /* a record of a group whose partition is another was seen */
};

/* The partition of the group a record's key names (a key that cannot be read: pidx, for apply to report). */
static int32_t group_store_key_partition(struct bytes key, int32_t pidx, int32_t nparts)
{
	struct rd r;
	struct kstr group;

	rd_init(&r, key.p, (size_t)key.len);
	rd_i16(&r);
	group = rd_kstr16(&r);
	return r.err || !group.p ? pidx : coord_partition_for(group, nparts);
}

static int group_store_on_record(void *arg, const struct record *rec)
{
	struct group_store_scan *sc = arg;

	if (rec->key.len < 0)
		return -EBADMSG;
	if (sc->only != GROUP_STORE_ALL) {
		bool own = group_store_key_partition(rec->key, sc->pidx, sc->nparts) == sc->pidx;

		sc->foreign |= !own;
		if (own != (sc->only == GROUP_STORE_OWN))
			return 0;
	}
	return group_store_apply(sc->pidx, rec->key, rec->value, sc->producer_id, sc->ld, sc->arg);
}

/* One batch: a transaction marker, or records dispatched on their key version. */
static void group_store_on_batch(void *arg, const uint8_t *p, const struct batch_hdr *h)
{
	struct group_store_scan *sc = arg;
	int err;

	if (records_is_control(h)) {
		bool commit;
		int32_t epoch;

		if (records_control_parse(p, h, &commit, &epoch) == 0)
			sc->ld->on_marker(sc->arg, sc->pidx, h->producer_id, commit);
		return;
	}
	sc->producer_id = records_is_transactional(h) ? h->producer_id : -1;
	err = records_foreach(p, h, group_store_on_record, sc);
	if (err)
		log_warn("__consumer_offsets-%d: skipping batch at offset %lld: %s", sc->pidx,
			 (long long)h->base_offset, err == -EPROTO ? "compressed" : "malformed record");
}

/* Replays partition i to its high watermark, or with to_end to its log end; OUT *foreign (may be NULL). */
static int group_store_load_one(struct group_store *gs, const struct group_store_loader *ld, void *arg, int32_t i,
				bool to_end, enum group_store_only only, bool *foreign)
{
	struct group_store_scan sc = { ld, arg, -1, i, gs->topic.nparts, only, false };
	struct part *part = gs->topic.part(gs->topic.arg, i);
	int err = !part    ? -ENOENT
		  : to_end ? part_scan_to(part, part_log_end_offset(part), group_store_on_batch, &sc)
			   : part_scan(part, group_store_on_batch, &sc);

	if (err)
		log_error("__consumer_offsets-%d: cannot load: %s", i, strerror(-err));
	if (foreign)
		*foreign |= sc.foreign;
	return err;
}

static int group_store_load_all(struct group_store *gs, const struct group_store_loader *ld, void *arg,
				enum group_store_only only, bool *foreign)
{
	for (int32_t i = 0; i < gs->topic.nparts; i++) {
		int err = group_store_load_one(gs, ld, arg, i, false, only, foreign);

		if (err)
			return err;
	}
	return 0;
}

/*
 * Before coord_partition_for() took Kafka's abs(), some groups were written
 * to another partition than theirs; each partition being replayed in turn,
 * such older records could then win over newer ones in the group's own
 * partition.  So the records in a group's own partition are applied last:
 * if any record lies elsewhere, everything is replayed again, those first.
 */
int group_store_load(struct group_store *gs, const struct group_store_loader *ld, void *arg)
{
	bool foreign = false;
	int err = group_store_load_all(gs, ld, arg, GROUP_STORE_OWN, &foreign);

	if (err || !foreign)
		return err;
	log_info("__consumer_offsets: groups written to other partitions by an older version; replaying those first");
	ld->on_reset(arg);
	err = group_store_load_all(gs, ld, arg, GROUP_STORE_FOREIGN, NULL);
	return err ? err : group_store_load_all(gs, ld, arg, GROUP_STORE_OWN, NULL);
}

int group_store_load_partition(struct group_store *gs, const struct group_store_loader *ld, void *arg,
			       int32_t partition)
{
	return group_store_load_one(gs, ld, arg, partition, true, GROUP_STORE_ALL, NULL);
}
