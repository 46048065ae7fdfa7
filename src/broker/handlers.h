/*
 * handlers.h - one handler per API (see api.h for the contract).
 * Handlers live in one file per API family: h_meta.c (ApiVersions,
 * Metadata), h_produce.c, h_fetch.c, h_offsets.c (ListOffsets),
 * h_admin.c (topics, partitions, records), h_config.c (configs),
 * h_logdirs.c (log directories), h_epoch.c (OffsetForLeaderEpoch).
 */
#ifndef GREGOR_BROKER_HANDLERS_H
#define GREGOR_BROKER_HANDLERS_H

#include "broker/api.h"

int h_api_versions(struct req *rq, const void *in, void *out);
/* h_acl.c: the ACLs of broker/authz.h */
int h_create_acls(struct req *rq, const void *in, void *out);
int h_describe_acls(struct req *rq, const void *in, void *out);
int h_delete_acls(struct req *rq, const void *in, void *out);
/* h_sasl.c */
int h_sasl_handshake(struct req *rq, const void *in, void *out);
int h_sasl_authenticate(struct req *rq, const void *in, void *out);
/*
 * After a SaslHandshake v0 the next frame is a bare SASL token: handles it
 * (takes frame, finishes slot) and returns true; false for a request.
 */
/* Derives the SCRAM credentials of sasl.scram.users (once): 0 or -EINVAL (logged). */
int sasl_scram_load(struct broker *b);
void sasl_scram_free(struct broker *b);
bool sasl_raw_token(struct broker *b, struct conn *c, struct conn_slot *slot, uint8_t *frame, int32_t len);
/* Closes at once the connections waiting out a failed bare token's delay (shutdown). */
void sasl_closing_drop(struct broker *b);
int h_metadata(struct req *rq, const void *in, void *out);
int h_produce(struct req *rq, const void *in, void *out);
int h_fetch(struct req *rq, const void *in, void *out);
int h_list_offsets(struct req *rq, const void *in, void *out);
int h_create_topics(struct req *rq, const void *in, void *out);
int h_delete_topics(struct req *rq, const void *in, void *out);
/* Deletes topic t here (its partitions leave the syncer and the cleaner first); registry_delete()'s result. */
struct topic;
int admin_topic_remove(struct broker *b, struct topic *t);
int h_leader_and_isr(struct req *rq, const void *in, void *out);
int h_update_metadata(struct req *rq, const void *in, void *out);
int h_stop_replica(struct req *rq, const void *in, void *out);
int h_controlled_shutdown(struct req *rq, const void *in, void *out);
/* h_elect.c: on the active controller */
int h_alter_partition(struct req *rq, const void *in, void *out);
int h_elect_leaders(struct req *rq, const void *in, void *out);
int h_alter_partition_reassignments(struct req *rq, const void *in, void *out);
int h_list_partition_reassignments(struct req *rq, const void *in, void *out);
int h_create_partitions(struct req *rq, const void *in, void *out);
int h_delete_records(struct req *rq, const void *in, void *out);
/* h_epoch.c: where a leader epoch ends in the log */
int h_offset_for_leader_epoch(struct req *rq, const void *in, void *out);
int h_describe_configs(struct req *rq, const void *in, void *out);
int h_alter_configs(struct req *rq, const void *in, void *out);
int h_incremental_alter_configs(struct req *rq, const void *in, void *out);
int h_init_producer_id(struct req *rq, const void *in, void *out); /* h_idem.c */
/* h_logdirs.c: what each log directory holds */
int h_describe_log_dirs(struct req *rq, const void *in, void *out);
/* h_quota.c: client quotas (quota.h); quotas_start() loads them from the first log dir, 0 or -errno */
int h_describe_client_quotas(struct req *rq, const void *in, void *out);
int h_alter_client_quotas(struct req *rq, const void *in, void *out);
int quotas_start(struct broker *b);
/*
 * h_scram.c: SCRAM credentials (KIP-554, sec/scram_store.h); scram_users_start() loads
 * them from the first log dir (cluster mode: an empty cache of /config/users), 0 or -errno.
 */
int h_describe_user_scram_credentials(struct req *rq, const void *in, void *out);
int h_alter_user_scram_credentials(struct req *rq, const void *in, void *out);
int scram_users_start(struct broker *b);
void scram_users_stop(struct broker *b);
/* Cluster mode: user's credentials changed in zookeeper (a notification); reads them again. */
void scram_users_changed(void *arg, const char *user);
void quotas_stop(void);
/* h_coord.c: where a group's or a transactional id's coordinator is */
int h_find_coordinator(struct req *rq, const void *in, void *out);
/* h_group.c: consumer groups and committed offsets */
int h_join_group(struct req *rq, const void *in, void *out);
int h_sync_group(struct req *rq, const void *in, void *out);
int h_heartbeat(struct req *rq, const void *in, void *out);
int h_leave_group(struct req *rq, const void *in, void *out);
int h_offset_commit(struct req *rq, const void *in, void *out);
int h_offset_fetch(struct req *rq, const void *in, void *out);
int h_describe_groups(struct req *rq, const void *in, void *out);
int h_list_groups(struct req *rq, const void *in, void *out);
int h_delete_groups(struct req *rq, const void *in, void *out);
int h_offset_delete(struct req *rq, const void *in, void *out);
/* Starts the group coordinator (loads __consumer_offsets if it exists); 0 or -errno. */
int groups_start(struct broker *b);
/* Answers parked JoinGroup/SyncGroup requests and frees the coordinator. */
void groups_stop(struct broker *b);
/*
 * Cluster mode: this broker's role for a partition changed (replica.c);
 * for __consumer_offsets the group coordinator loads or forgets that
 * partition's groups.
 */
void groups_on_role(struct broker *b, const char *topic, int32_t partition, bool leader);
/* The same for __transaction_state: the transaction coordinator loads or forgets that partition's ids. */
void txns_on_role(struct broker *b, const char *topic, int32_t partition, bool leader);
/*
 * InitProducerId with a non-null, non-empty TransactionalId (h_txn.c;
 * h_idem.c hands such requests over).
 */
int txn_init_producer_id(struct req *rq, const struct InitProducerIdRequest *in, struct InitProducerIdResponse *out);

/*
 * Fills again the parked long-poll fetches made ready since the last call
 * (fetch_park_notify() after an append, fetch_park_conn_closed()) and
 * answers those that are done; called at the end of each loop iteration.
 */
void fetch_wake(struct broker *b);
/* The fetch session cache (max.incremental.fetch.session.cache.slots): made, expired, freed. */
int fetch_sessions_start(struct broker *b);
void fetch_sessions_expire(struct broker *b, int64_t now_ms);
void fetch_sessions_stop(struct broker *b);
/* Requests time-based flushes (each topic's flush.ms, which follows log.flush.interval.ms); called periodically. */
void produce_flush_policy(struct broker *b, int64_t now_ms);

/* Transactions (h_txn.c): coordinator start/stop and the transaction APIs. */
#define TXN_REPLICATION_TIMEOUT_MS 30000 /* Kafka's request.timeout.ms for the coordinators' and markers' appends */
int txns_start(struct broker *b);
void txns_stop(struct broker *b);
/* An fsync round finished: transactions waiting for it move on (server.c's wake-up). */
void txns_on_synced(struct broker *b);
int h_add_partitions_to_txn(struct req *rq, const void *in, void *out);
int h_add_offsets_to_txn(struct req *rq, const void *in, void *out);
int h_end_txn(struct req *rq, const void *in, void *out);
int h_txn_offset_commit(struct req *rq, const void *in, void *out);
int h_describe_transactions(struct req *rq, const void *in, void *out);
int h_list_transactions(struct req *rq, const void *in, void *out);
/* h_txnadmin.c: producer state and markers of partitions (operators ending hanging transactions) */
int h_describe_producers(struct req *rq, const void *in, void *out);
int h_describe_cluster(struct req *rq, const void *in, void *out);
int h_write_txn_markers(struct req *rq, const void *in, void *out);
/*
 * h_meta.c: auto-creation (off the event loop: broker/creator.h) for
 * Metadata and Produce.  A handler calls autocreate_begin() for each topic
 * it names before doing anything; if one was begun (*w set) it returns
 * H_PARKED, and runs again from the start (rq->autocreated set: creating
 * nothing more) once the topics are made, so the request that asked for a
 * new topic is answered with it, as before (clients such as kafka-go give
 * up on a LEADER_NOT_AVAILABLE there).  Other requests naming the topic
 * meanwhile see it being made (LEADER_NOT_AVAILABLE).  With w NULL the
 * creation is begun and nobody waits.  autocreate_wanted(): the topic is
 * missing and would be auto-created (auto.create.topics.enable, a valid,
 * non-internal name).
 */
struct autocreate;
bool autocreate_wanted(struct req *rq, struct kstr name);
void autocreate_begin(struct req *rq, struct kstr name, struct autocreate **w);
/*
 * h_group.c: the group coordinator with __consumer_offsets open (created if needed); NULL if it cannot be
 * or the log dir failed (registry_fail_dir: COORDINATOR_NOT_AVAILABLE from then on).
 */
struct group_coord *groups_coord(struct broker *b);
/*
 * h_group.c: group's partition of __consumer_offsets, also while the topic
 * is being made (AddOffsetsToTxn needs only the number, as in Kafka); -1 if
 * there is none (the log dir failed, or the topic could not be begun).
 */
int32_t groups_partition_for(struct broker *b, struct kstr group);
/*
 * h_txn.c: true once __transaction_state is open; else begins making it
 * (FindCoordinator of a transactional id answers COORDINATOR_NOT_AVAILABLE
 * until then, as Kafka does while it creates the topic).
 */
bool txns_coord_ready(struct broker *b);

#endif
