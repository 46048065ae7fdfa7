/*
 * txn_store.c - encoding, writing and replaying __transaction_state
 * records (formats in txn_store.h).
 */
#include "coord/txn_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/partition.h"
#include "log/scan.h"
#include "proto/records.h"
#include "util/log.h"

#define TXN_STORE_TPS_MAX 100000 /* sanity bound on a decoded partition list */

int32_t txn_store_partition_of(int32_t nparts, struct kstr id)
{
	return coord_partition_for(id, nparts);
}

static void txn_store_wr_str(struct wr *w, const char *p, int32_t len)
{
	wr_i16(w, (int16_t)len);
	if (len > 0)
		wr_raw(w, p, (size_t)len);
}

static void txn_store_value_enc(struct wr *w, const struct txn_store_value *v)
{
	wr_i16(w, 0);
	wr_i64(w, v->producer_id);
	wr_i16(w, v->producer_epoch);
	wr_i32(w, v->timeout_ms);
	wr_i8(w, v->status);
	wr_i32(w, v->ntps);
	for (int32_t i = 0; i < v->ntps; i++) {
		txn_store_wr_str(w, v->tps[i].topic, (int32_t)strlen(v->tps[i].topic));
		wr_i32(w, 1);
		wr_i32(w, v->tps[i].partition);
	}
	wr_i64(w, v->update_ms);
	wr_i64(w, v->start_ms);
}

int txn_store_write(const struct coord_topic *ct, struct kstr id, const struct txn_store_value *v, int64_t now_ms,
		    struct part **part_out)
{
	struct part *part = ct->part(ct->arg, txn_store_partition_of(ct->nparts, id));
	struct part_append_info info;
	struct wr key, val, batch;
	struct rec_kv kv;
	int err;

	wr_init(&key);
	wr_init(&val);
	wr_init(&batch);
	wr_i16(&key, 0);
	txn_store_wr_str(&key, id.p, id.len);
	if (v)
		txn_store_value_enc(&val, v);
	err = !part ? -ENOENT : key.err ? key.err : val.err;
	kv = (struct rec_kv){ key.buf, (int32_t)key.len, v ? val.buf : NULL, v ? (int32_t)val.len : -1 };
	if (!err)
		err = records_build(&batch, 0, now_ms, &kv, 1);
	if (!err)
		err = batch.err ? batch.err : part_append(part, batch.buf, batch.len, now_ms, &info);
	if (!err)
		*part_out = part;
	wr_release(&key);
	wr_release(&val);
	wr_release(&batch);
	return err;
}

/* ---- replay ---- */

/* Decodes a value; tps (OUT, caller frees, topic strings point into a copy in *names). */
static int txn_store_value_dec(struct bytes b, struct txn_store_value *v, struct txn_tp **tps, char **names)
{
	struct rd r;
	int32_t ntopics, total = 0;
	size_t names_len = 0;

	rd_init(&r, b.p, (size_t)b.len);
	if (rd_i16(&r) != 0)
		return -EBADMSG;
	v->producer_id = rd_i64(&r);
	v->producer_epoch = rd_i16(&r);
	v->timeout_ms = rd_i32(&r);
	v->status = rd_i8(&r);
	ntopics = rd_i32(&r);
	if (r.err || ntopics > TXN_STORE_TPS_MAX)
		return -EBADMSG;
	*tps = calloc((size_t)(ntopics > 0 ? ntopics : 1) * 1, sizeof(**tps));
	*names = malloc((size_t)b.len + 1);
	if (!*tps || !*names)
		return -ENOMEM;
	for (int32_t i = 0; i < ntopics && !r.err; i++) {
		struct kstr topic = rd_kstr16(&r);
		int32_t np = rd_i32(&r);
		char *name = *names + names_len;

		if (r.err || topic.len < 0 || np < 0 || np > TXN_STORE_TPS_MAX)
			return -EBADMSG;
		memcpy(name, topic.p, (size_t)topic.len);
		name[topic.len] = '\0';
		names_len += (size_t)topic.len + 1;
		if (np > 0) {
			struct txn_tp *nt = realloc(*tps, (size_t)(total + np + ntopics) * sizeof(**tps));

			if (!nt)
				return -ENOMEM;
			*tps = nt;
		}
		for (int32_t j = 0; j < np; j++)
			(*tps)[total++] = (struct txn_tp){ name, rd_i32(&r) };
	}
	v->update_ms = rd_i64(&r);
	v->start_ms = rd_i64(&r);
	v->tps = *tps;
	v->ntps = total;
	return r.err ? -EBADMSG : 0;
}

static void txn_store_record(struct bytes key, struct bytes value, txn_store_record_fn *fn, void *arg)
{
	struct rd r;
	struct kstr id;
	struct txn_store_value v;
	struct txn_tp *tps = NULL;
	char *names = NULL;
	int err;

	rd_init(&r, key.p, (size_t)key.len);
	if (rd_i16(&r) != 0)
		return; /* not a transaction log key version we know */
	id = rd_kstr16(&r);
	if (r.err || id.len <= 0)
		return;
	if (!value.p || value.len < 0) {
		fn(arg, id, NULL);
		return;
	}
	err = txn_store_value_dec(value, &v, &tps, &names);
	if (!err)
		fn(arg, id, &v);
	else
		log_warn("%s: skipping a malformed record for '%.*s'", TXN_STORE_TOPIC, id.len, id.p);
	free(tps);
	free(names);
}

/* Which records a scan applies, by where their id's partition is (txn_store_load). */
enum txn_store_only { TXN_STORE_OWN, TXN_STORE_FOREIGN };

struct txn_store_scan {
	txn_store_record_fn *fn;
	void *arg;
	int32_t pidx, nparts;
	enum txn_store_only only;
	bool foreign; /* a record of an id whose partition is another was seen */
};

static int txn_store_on_record(void *arg, const struct record *rec)
{
	struct txn_store_scan *sc = arg;
	struct rd r;
	struct kstr id;
	bool own;

	if (rec->key.len < 0)
		return -EBADMSG;
	rd_init(&r, rec->key.p, (size_t)rec->key.len);
	rd_i16(&r);
	id = rd_kstr16(&r);
	own = r.err || !id.p || coord_partition_for(id, sc->nparts) == sc->pidx;
	sc->foreign |= !own;
	if (own == (sc->only == TXN_STORE_OWN))
		txn_store_record(rec->key, rec->value, sc->fn, sc->arg);
	return 0;
}

static void txn_store_on_batch(void *arg, const uint8_t *p, const struct batch_hdr *h)
{
	const struct txn_store_scan *sc = arg;

	if (records_is_control(h) || (h->attributes & RECORDS_ATTR_CODEC_MASK))
		return;
	if (records_foreach(p, h, txn_store_on_record, arg))
		log_warn("%s-%d: skipping a malformed batch at offset %lld", TXN_STORE_TOPIC, sc->pidx,
			 (long long)h->base_offset);
}

static int txn_store_load_all(const struct coord_topic *ct, txn_store_record_fn *on_record, void *arg,
			      enum txn_store_only only, bool *foreign)
{
	for (int32_t i = 0; i < ct->nparts; i++) {
		struct txn_store_scan sc = { on_record, arg, i, ct->nparts, only, false };
		struct part *part = ct->part(ct->arg, i);
		int err = part ? part_scan(part, txn_store_on_batch, &sc) : -ENOENT;

		if (err) {
			log_error("%s-%d: cannot load: %s", TXN_STORE_TOPIC, i, strerror(-err));
			return err;
		}
		*foreign |= sc.foreign;
	}
	return 0;
}

/*
 * Before coord_partition_for() took Kafka's abs(), some ids were written
 * to another partition than theirs.  Records replace an id's state, so the
 * records in an id's own partition (the newer ones) are applied last: if
 * any lies elsewhere, those are replayed, then the own ones again.
 */
int txn_store_load(const struct coord_topic *ct, txn_store_record_fn *on_record, void *arg)
{
	bool foreign = false;
	int err = txn_store_load_all(ct, on_record, arg, TXN_STORE_OWN, &foreign);

	if (err || !foreign)
		return err;
	log_info("%s: ids written to other partitions by an older version; replaying those first", TXN_STORE_TOPIC);
	err = txn_store_load_all(ct, on_record, arg, TXN_STORE_FOREIGN, &foreign);
	return err ? err : txn_store_load_all(ct, on_record, arg, TXN_STORE_OWN, &foreign);
}

int txn_store_load_partition(const struct coord_topic *ct, int32_t partition, txn_store_record_fn *on_record, void *arg)
{
	struct txn_store_scan sc = { on_record, arg, partition, ct->nparts, TXN_STORE_OWN, false };
	struct part *part = ct->part(ct->arg, partition);
	int err = part ? part_scan_to(part, part_log_end_offset(part), txn_store_on_batch, &sc) : -ENOENT;

	if (err)
		log_error("%s-%d: cannot load: %s", TXN_STORE_TOPIC, partition, strerror(-err));
	return err;
}
