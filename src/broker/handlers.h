/*
 * handlers.h - one handler per API (see api.h for the contract).
 * Handlers live in one file per API family: h_meta.c (ApiVersions,
 * Metadata), h_produce.c, h_fetch.c, h_offsets.c (ListOffsets),
 * h_admin.c (topics, partitions, records), h_config.c (configs).
 */
#ifndef GREGOR_BROKER_HANDLERS_H
#define GREGOR_BROKER_HANDLERS_H

#include "broker/api.h"

int h_api_versions(struct req *rq, const void *in, void *out);
int h_metadata(struct req *rq, const void *in, void *out);
int h_produce(struct req *rq, const void *in, void *out);
int h_fetch(struct req *rq, const void *in, void *out);
int h_list_offsets(struct req *rq, const void *in, void *out);
int h_create_topics(struct req *rq, const void *in, void *out);
int h_delete_topics(struct req *rq, const void *in, void *out);
int h_create_partitions(struct req *rq, const void *in, void *out);
int h_delete_records(struct req *rq, const void *in, void *out);
int h_describe_configs(struct req *rq, const void *in, void *out);
int h_alter_configs(struct req *rq, const void *in, void *out);
int h_incremental_alter_configs(struct req *rq, const void *in, void *out);

/* Completes parked acks=all produce requests whose fsync round is done. */
void produce_on_synced(struct broker *b);
/* Frees parked produce requests without replying (shutdown). */
void produce_drop_parked(void);
/* Re-evaluates parked long-poll fetches (after appends or timeouts). */
void fetch_wake(struct broker *b);
/* Requests time-based flushes (log.flush.interval.ms); called periodically. */
void produce_flush_policy(struct broker *b, int64_t now_ms);

#endif
