/*
 * produce_check.c - topic settings into proto/validate.c's rules, and its
 * verdict into the Produce response (see produce_check.h).
 */
#include "broker/produce_check.h"

#include "proto/kerr.h"
#include "proto/validate.h"
#include "util/clock.h"
#include "util/log.h"

/* Kafka's default of message.timestamp.after.max.ms (one hour, since 3.6 for the new keys). */
#define TS_AFTER_MAX_DEFAULT_MS 3600000LL

void produce_ts_bounds(const struct topic_cfg *tc, int64_t *before_max_ms, int64_t *after_max_ms)
{
	int64_t diff = tc->message_timestamp_difference_max_ms;

	*before_max_ms = tc->message_timestamp_before_max_ms;
	*after_max_ms = tc->message_timestamp_after_max_ms;
	if (diff == INT64_MAX)
		return;
	if (*before_max_ms == INT64_MAX)
		*before_max_ms = diff;
	if (*after_max_ms == TS_AFTER_MAX_DEFAULT_MS)
		*after_max_ms = diff;
}

/* Rate-limited: one line a second for everything producers get refused. */
static void produce_check_warn(struct req *rq, const struct topic *t, int32_t partition, int16_t kerr, const char *why)
{
	static int64_t last_ms;
	int64_t now = clock_mono_ms();

	if (now - last_ms < 1000)
		return;
	last_ms = now;
	log_warn("%s: produce to '%s-%d' refused (%s): %s", conn_peer(rq->c), t->name, partition, kerr_name(kerr),
		 why ? why : "invalid records");
}

bool produce_check(struct req *rq, const struct topic *t, uint8_t *records, size_t len, int64_t now_ms,
		   struct ProduceResponsePartition *out)
{
	struct validate_cfg vc = {
		.max_message_bytes = t->cfg.max_message_bytes,
		.create_time = t->cfg.message_timestamp_type == CONFIG_TS_CREATE_TIME,
		.now_ms = now_ms,
		.keys_required = t->cfg.cleanup_policy == CONFIG_CLEANUP_COMPACT,
	};
	struct validate_result res;
	int16_t kerr;

	produce_ts_bounds(&t->cfg, &vc.before_max_ms, &vc.after_max_ms);
	kerr = validate_records(records, len, &vc, &res);
	if (kerr == KERR_NONE)
		return true;
	out->ErrorCode = kerr;
	out->ErrorMessage = kstr_c(res.why);
	if (res.n_errors > 0) {
		out->RecordErrors.v = req_alloc(rq, (size_t)res.n_errors, sizeof(*out->RecordErrors.v));
		out->RecordErrors.n = res.n_errors;
		for (int i = 0; i < res.n_errors; i++) {
			ProduceResponseRecordError_init(&out->RecordErrors.v[i]);
			out->RecordErrors.v[i].BatchIndex = res.batch_index[i];
			out->RecordErrors.v[i].BatchIndexErrorMessage = kstr_c(res.why);
		}
	}
	produce_check_warn(rq, t, out->Index, kerr, res.why);
	return false;
}
