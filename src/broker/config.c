/*
 * config.c - the broker's settings table and command line (see config.h).
 *
 * The table below is the only description of a broker setting.  Keys
 * follow Kafka (KafkaConfig) in name, type, default and range, except where
 * a doc string says otherwise; keys that only matter to a cluster are
 * accepted so that a stock Kafka server.properties loads unchanged, and
 * their doc says "Accepted, no effect on a single node".
 */
#include "broker/config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

#define F(fld) offsetof(struct broker_cfg, fld)
#define I32MAX INT32_MAX
#define I64MAX INT64_MAX
#define BOOL(n, fld, d, dyn, doc)                                                                                      \
	{                                                                                                              \
		n, CONF_BOOL, F(fld), 0, 0, d, dyn, doc, NULL                                                          \
	}
#define I32(n, fld, lo, hi, d, dyn, doc)                                                                               \
	{                                                                                                              \
		n, CONF_INT32, F(fld), lo, hi, d, dyn, doc, NULL                                                       \
	}
#define I64(n, fld, lo, hi, d, dyn, doc)                                                                               \
	{                                                                                                              \
		n, CONF_INT64, F(fld), lo, hi, d, dyn, doc, NULL                                                       \
	}
#define STR(n, fld, d, dyn, doc)                                                                                       \
	{                                                                                                              \
		n, CONF_STRING, F(fld), 0, 0, d, dyn, doc, NULL                                                        \
	}
#define LIST(n, fld, d, dyn, doc)                                                                                      \
	{                                                                                                              \
		n, CONF_LIST, F(fld), 0, 0, d, dyn, doc, NULL                                                          \
	}
#define ENUM(n, fld, vals, d, dyn, doc)                                                                                \
	{                                                                                                              \
		n, CONF_ENUM, F(fld), 0, 0, d, dyn, doc, vals                                                          \
	}

#define NOEFFECT "Accepted, no effect on a single node."
#define IGNORED "Accepted for compatibility with Kafka's server.properties; ignored."
#define ONELOOP                                                                                                        \
	"Accepted for compatibility with Kafka's server.properties, not used: one event-loop thread serves every "     \
	"connection and request, and threads of their own do the blocking work (fsync, compaction, topic "             \
	"creation, file deletion, checkpoints). A value set explicitly is reported at start-up."

static const struct conf_def defs[] = {
	/* identity and listeners */
	I32("node.id", node_id, 0, I32MAX, "0", false,
	    "This broker's id, reported in Metadata and FindCoordinator. In cluster mode (`zookeeper.connect`) it "
	    "names the broker's registration `/brokers/ids/<id>` and must be unique in the cluster: a broker whose "
	    "id is held by another live broker stops with exit status 2."),
	I32("broker.id", broker_id, -1, I32MAX, "-1", false,
	    "Old name of `node.id`; if both are given they must be equal."),
	STR("cluster.id", cluster_id, "", false,
	    "Cluster id reported in Metadata; empty lets the broker generate one. In cluster mode Metadata reports "
	    "ZooKeeper's `/cluster/id` instead."),
	LIST("listeners", listeners, "PLAINTEXT://127.0.0.1:9092", false,
	     "Comma separated `NAME://host:port` addresses to listen on; an empty host means all interfaces."),
	LIST("advertised.listeners", advertised_listeners, NULL, false,
	     "Addresses given to clients in Metadata; null or empty means the same as `listeners`. In cluster mode "
	     "the address of the listener served is registered under `/brokers/ids/<id>`, where the other brokers "
	     "read it for their Metadata (an empty or wildcard host is replaced with this machine's host name)."),
	STR("metrics.listener", metrics_listener, NULL, false,
	    "Address of the HTTP listener serving Prometheus `/metrics`, `/health/live` and `/health/ready`, as "
	    "`http://host:port` (docs/metrics.md), and the web console at `/` (docs/console.md); unset or empty: no "
	    "HTTP listener."),
	BOOL("console.write.enable", console_write_enable, "false", false,
	     "Let the web console create topics and reset the offsets of Empty groups (POST requests on "
	     "`metrics.listener`, docs/console.md); false: the console is read-only and answers POST with 403."),
	STR("broker.rack", broker_rack, NULL, false,
	    "Rack of this broker, reported in Metadata and, in cluster mode, registered in ZooKeeper."),
	/* log layout */
	LIST("log.dirs", log_dirs, "./data", false, "Directories holding the partition logs (`<topic>-<partition>/`)."),
	STR("log.dir", log_dir, NULL, false,
	    "Single-directory form of `log.dirs`, used only when `log.dirs` is not given."),
	I32("num.partitions", num_partitions, 1, 1000000, "1", true,
	    "Partitions of an automatically created topic, and of CreateTopics with NumPartitions -1."),
	I32("default.replication.factor", default_replication_factor, 1, 32767, "1", true,
	    "Replication factor of automatically created topics (only 1 is possible on a single node)."),
	BOOL("auto.create.topics.enable", auto_create_topics_enable, "true", false,
	     "Create a topic when a client produces to or asks Metadata for one that does not exist."),
	BOOL("delete.topic.enable", delete_topic_enable, "true", false,
	     "Allow DeleteTopics; when false it answers TOPIC_DELETION_DISABLED."),
	/* limits and sockets */
	I32("message.max.bytes", message_max_bytes, 0, I32MAX, "1048588", true,
	    "Largest record batch accepted (after compression); default for the topic config `max.message.bytes`."),
	I32("fetch.max.bytes", fetch_max_bytes, 1024, 1073741824, "8388608", true,
	    "Most record bytes in one Fetch response, whatever the request asks for (its MaxBytes and each "
	    "PartitionMaxBytes are clamped to it); the first batch is served even if larger (KIP-74). Kafka's "
	    "default is 55 MiB; 8 MiB keeps a librdkafka consumer of small records fetching (docs/performance.md)."),
	I32("max.incremental.fetch.session.cache.slots", max_incremental_fetch_session_cache_slots, 0, I32MAX, "1000",
	    false,
	    "The maximum number of incremental fetch sessions (KIP-227) that we will maintain. When all are "
	    "taken, a new session may evict an idle or a smaller one; otherwise the fetch is served without a "
	    "session. 0 disables fetch sessions."),
	I64("min.incremental.fetch.session.eviction.ms", min_incremental_fetch_session_eviction_ms, 1, I64MAX, "120000",
	    false,
	    "A fetch session unused this long is closed, and before that may be evicted for a new one only once "
	    "it is this old. Kafka fixes this at 120000 ms; Gregor lets it be set."),
	I32("socket.request.max.bytes", socket_request_max_bytes, 1, I32MAX, "104857600", false,
	    "Largest request frame; a bigger size field closes the connection."),
	I32("socket.send.buffer.bytes", socket_send_buffer_bytes, -1, I32MAX, "-1", true,
	    "SO_SNDBUF of client sockets; -1 leaves the OS default and its auto-tuning (Kafka's default is 102400)."),
	I32("socket.receive.buffer.bytes", socket_receive_buffer_bytes, -1, I32MAX, "-1", true,
	    "SO_RCVBUF of client sockets; -1 leaves the OS default and its auto-tuning (Kafka's default is 102400)."),
	I32("socket.listen.backlog.size", socket_listen_backlog_size, 1, I32MAX, "50", false,
	    "listen(2) backlog of each listener."),
	I32("max.connections", max_connections, 0, I32MAX, "2147483647", true,
	    "Most client connections at once; further connections are accepted and closed."),
	I32("max.connections.per.ip", max_connections_per_ip, 0, I32MAX, "2147483647", true,
	    "Most connections from one IP address."),
	I64("queued.max.request.bytes", queued_max_request_bytes, -1, I64MAX, "268435456", false,
	    "Bytes of requests read but not yet answered, over all connections; past it the broker stops reading "
	    "sockets until replies drain. -1: no global limit (per-connection limits still apply). Kafka's "
	    "default is -1; Gregor bounds memory by default (256 MiB)."),
	I32("queued.max.requests", queued_max_requests, 1, I32MAX, "500", false,
	    "Requests read but not yet answered on one connection before the broker stops reading from it "
	    "(Kafka bounds its request queue over all connections; Gregor has no such queue and bounds each "
	    "connection)."),
	I64("connections.max.idle.ms", connections_max_idle_ms, -1, I64MAX, "600000", false,
	    "Close client connections idle this long; -1 never."),
	I64("connection.failed.authentication.delay.ms", connection_failed_authentication_delay_ms, 0, 60000, "100",
	    false,
	    "Delay before a failed SaslAuthenticate is answered, times the failures from that client address in the "
	    "last minute (at most 10 times), so repeated guesses slow down. 0: answer at once."),
	I64("connections.max.reauth.ms", connections_max_reauth_ms, 0, I64MAX, "0", false,
	    "SASL session lifetime (KIP-368): SaslAuthenticate v1+ tells the client, which must re-authenticate on "
	    "its connection before it passes; a request other than SaslHandshake after it closes the connection. "
	    "Per listener and mechanism: `listener.name.<name>.<mechanism>.connections.max.reauth.ms` (mechanism in "
	    "lower case, e.g. `scram-sha-512`), or `listener.name.<name>.connections.max.reauth.ms`. 0: no limit."),
	I32("quota.window.num", quota_window_num, 1, 1000, "11", false,
	    "Client quotas (docs/operations.md): the number of samples each client's byte and request rates are "
	    "measured over."),
	I32("quota.window.size.seconds", quota_window_size_seconds, 1, 3600, "1", false,
	    "Client quotas: the length of each sample of a client's rates, in seconds."),
	/* segments, retention, indexes */
	I32("log.segment.bytes", log_segment_bytes, 14, I32MAX, "1073741824", true,
	    "Size at which a segment is rolled; default for the topic config `segment.bytes`."),
	I64("log.roll.ms", log_roll_ms, 1, I64MAX, NULL, true,
	    "Age at which a segment is rolled even if not full; when null `log.roll.hours` is used."),
	I32("log.roll.hours", log_roll_hours, 1, I32MAX, "168", true,
	    "Segment roll age in hours, used when `log.roll.ms` is null."),
	I64("log.roll.jitter.ms", log_roll_jitter_ms, 0, I64MAX, NULL, true,
	    "Default topic `segment.jitter.ms`: largest random jitter subtracted from the roll age, drawn for each "
	    "new segment; when null `log.roll.jitter.hours` is used."),
	I32("log.roll.jitter.hours", log_roll_jitter_hours, 0, I32MAX, "0", true,
	    "Roll jitter in hours, used when `log.roll.jitter.ms` is null."),
	I64("log.retention.ms", log_retention_ms, -1, I64MAX, NULL, true,
	    "Delete segments whose newest record is older than this; -1 keeps them forever. "
	    "Precedence: `log.retention.ms`, then `log.retention.minutes`, then `log.retention.hours`."),
	I32("log.retention.minutes", log_retention_minutes, -1, I32MAX, NULL, true,
	    "Retention in minutes, used when `log.retention.ms` is null."),
	I32("log.retention.hours", log_retention_hours, -1, I32MAX, "168", true,
	    "Retention in hours, used when `log.retention.ms` and `log.retention.minutes` are null."),
	I64("log.retention.bytes", log_retention_bytes, -1, I64MAX, "-1", true,
	    "Delete oldest segments while a partition is larger than this; -1 no size limit."),
	I64("log.retention.check.interval.ms", log_retention_check_interval_ms, 1, I64MAX, "300000", false,
	    "How often retention is applied."),
	I32("log.index.interval.bytes", log_index_interval_bytes, 0, I32MAX, "4096", true,
	    "Bytes of log between two offset/time index entries."),
	I32("log.index.size.max.bytes", log_index_size_max_bytes, 4, I32MAX, "10485760", true,
	    "Largest offset or time index file; a full index rolls the segment."),
	I32("log.segment.fd.cache.size", log_segment_fd_cache_size, 1, I32MAX, "1024", false,
	    "Gregor only (no Kafka equivalent). Sealed segments (all but each partition's active one) hold no file "
	    "descriptor and no index mapping until they are read; at most this many are kept open at once, the least "
	    "recently read closed first. Each open one holds one descriptor for its `.log` and two read-only index "
	    "mappings; a fetch or cleaner pass still reading an evicted segment keeps its descriptor until it is done. "
	    "Keep it well below the process's open-file limit."),
	I64("log.segment.delete.delay.ms", log_segment_delete_delay_ms, 0, I64MAX, "60000", true,
	    "Default of the topic key `file.delete.delay.ms` (how long a deleted topic's `*-delete` directories "
	    "and deleted segments' `*.deleted` files stay before removal), and the delay for `*-delete` "
	    "directories found at start-up (`*.deleted` files found then go at once)."),
	ENUM("log.preallocate", log_preallocate, "false|true", "false", true,
	     "Default topic `preallocate`: allocate each new active segment file to `segment.bytes` at creation."),
	ENUM("log.cleanup.policy", log_cleanup_policy, CONFIG_CLEANUP_VALUES, "delete", true,
	     "Default topic `cleanup.policy`."),
	BOOL("log.cleaner.enable", log_cleaner_enable, "true", false,
	     "Run the log cleaner, which compacts the topics whose `cleanup.policy` includes `compact` "
	     "(docs/internals.md, \"Log compaction\")."),
	I32("log.cleaner.threads", log_cleaner_threads, 0, I32MAX, "1", true, "Cleaner threads; only `1` is accepted."),
	I64("log.cleaner.backoff.ms", log_cleaner_backoff_ms, 0, I64MAX, "15000", true,
	    "Sleep of the cleaner when no partition is dirty enough to clean."),
	I64("log.cleaner.dedupe.buffer.size", log_cleaner_dedupe_buffer_size, 1024, I64MAX, "134217728", true,
	    "Bytes of the cleaner's key-to-offset map (24 bytes a key); a log with more keys is cleaned in "
	    "several passes."),
	STR("log.cleaner.io.max.bytes.per.second", log_cleaner_io_max_bytes_per_second, "1.7976931348623157E308", true,
	    "Read and write rate limit of the cleaner (a number above 0)."),
	I64("log.cleaner.delete.retention.ms", log_cleaner_delete_retention_ms, 0, I64MAX, "86400000", true,
	    "Default topic `delete.retention.ms` (how long tombstones are kept in compacted topics)."),
	I64("log.cleaner.min.compaction.lag.ms", log_cleaner_min_compaction_lag_ms, 0, I64MAX, "0", true,
	    "Default topic `min.compaction.lag.ms`."),
	I64("log.cleaner.max.compaction.lag.ms", log_cleaner_max_compaction_lag_ms, 1, I64MAX, "9223372036854775807",
	    true, "Default topic `max.compaction.lag.ms`."),
	STR("log.cleaner.min.cleanable.ratio", log_cleaner_min_cleanable_ratio, "0.5", true,
	    "Default topic `min.cleanable.dirty.ratio` (a number between 0 and 1)."),
	/* flush */
	I64("log.flush.interval.messages", log_flush_interval_messages, 1, I64MAX, "9223372036854775807", true,
	    "Force an fsync after this many messages. With the default (and log.flush.interval.ms unset) "
	    "everything appended is synced at once, group-committed: acks=all waits for the sync and "
	    "consumers see only synced data. Setting either key relaxes this (docs/durability.md)."),
	I64("log.flush.interval.ms", log_flush_interval_ms, -1, I64MAX, "-1", true,
	    "Default topic `flush.ms`: every this many ms (checked once a second) the partitions with unflushed "
	    "data are fsynced; -1 not set (the durable policy: every append is synced at once, group-committed)."),
	I64("log.flush.scheduler.interval.ms", log_flush_scheduler_interval_ms, 0, I64MAX, "9223372036854775807", false,
	    IGNORED),
	I32("log.flush.offset.checkpoint.interval.ms", log_flush_offset_checkpoint_interval_ms, 0, I32MAX, "60000",
	    false,
	    "How often the recovery-point checkpoint is written (checked every second; first write after "
	    "one interval)."),
	I32("log.flush.start.offset.checkpoint.interval.ms", log_flush_start_offset_checkpoint_interval_ms, 0, I32MAX,
	    "60000", false, "How often the log-start-offset checkpoint is written."),
	/* messages */
	ENUM("log.message.timestamp.type", log_message_timestamp_type, CONFIG_TS_VALUES, "CreateTime", true,
	     "Default topic `message.timestamp.type`: keep the producer's timestamps, or stamp batches with the "
	     "broker's time on append."),
	I64("log.message.timestamp.difference.max.ms", log_message_timestamp_difference_max_ms, 0, I64MAX,
	    "9223372036854775807", true,
	    "Default topic `message.timestamp.difference.max.ms` (deprecated: stands in for `before`/`after` left "
	    "at their defaults)."),
	I64("log.message.timestamp.before.max.ms", log_message_timestamp_before_max_ms, 0, I64MAX,
	    "9223372036854775807", true, "Default topic `message.timestamp.before.max.ms`."),
	I64("log.message.timestamp.after.max.ms", log_message_timestamp_after_max_ms, 0, I64MAX, "3600000", true,
	    "Default topic `message.timestamp.after.max.ms`."),
	BOOL("log.message.downconversion.enable", log_message_downconversion_enable, "true", true,
	     "Accepted; Gregor stores and serves record batch v2 only."),
	STR("log.message.format.version", log_message_format_version, "3.0-IV1", false,
	    "Accepted; Gregor writes record batch v2 (message format 2) only."),
	ENUM("compression.type", compression_type, CONFIG_COMPRESSION_VALUES, "producer", true,
	     "Default topic `compression.type`: `producer` stores batches as sent; a codec or `uncompressed` "
	     "re-encodes batches in another codec on append."),
	/* replication */
	I32("min.insync.replicas", min_insync_replicas, 1, I32MAX, "1", true,
	    "Default topic `min.insync.replicas`: an acks=all produce to a partition whose in-sync replica set is "
	    "smaller fails with NOT_ENOUGH_REPLICAS (Kafka's check; a single node is its partitions' whole set); "
	    "acks=0/1 are not affected."),
	BOOL("unclean.leader.election.enable", unclean_leader_election_enable, "false", false,
	     "Cluster mode: when no in-sync replica of a leaderless partition is live, the controller elects the "
	     "first live replica (records may be lost). Default of the topic config of that name."),
	BOOL("auto.leader.rebalance.enable", auto_leader_rebalance_enable, "true", false,
	     "Cluster mode: the controller moves leadership back to each partition's preferred replica (its first) "
	     "when that replica is live and in the ISR and its broker's imbalance is above "
	     "`leader.imbalance.per.broker.percentage`, checked every `leader.imbalance.check.interval.seconds`."),
	I64("leader.imbalance.check.interval.seconds", leader_imbalance_check_interval_seconds, 1, I64MAX, "300", false,
	    "Cluster mode: how often the controller checks the leader imbalance."),
	I32("leader.imbalance.per.broker.percentage", leader_imbalance_per_broker_percentage, 0, 100, "10", false,
	    "Cluster mode: the share of a broker's preferred partitions led elsewhere above which the controller "
	    "moves them back."),
	I32("num.replica.fetchers", num_replica_fetchers, 1, I32MAX, "1", true,
	    "Accepted; a follower runs one fetcher (one connection) per leader broker."),
	I32("replica.fetch.max.bytes", replica_fetch_max_bytes, 1, I32MAX, "1048576", false,
	    "Bytes a follower asks for per partition in one Fetch (the first batch may be larger)."),
	I32("replica.fetch.response.max.bytes", replica_fetch_response_max_bytes, 0, I32MAX, "10485760", false,
	    "Bytes a follower asks for in one Fetch over all partitions."),
	I32("replica.fetch.wait.max.ms", replica_fetch_wait_max_ms, 0, I32MAX, "500", false,
	    "How long the leader may hold a follower's Fetch that finds too little data."),
	I32("replica.fetch.min.bytes", replica_fetch_min_bytes, 0, I32MAX, "1", false,
	    "Bytes a follower's Fetch waits for (up to replica.fetch.wait.max.ms)."),
	I32("replica.fetch.backoff.ms", replica_fetch_backoff_ms, 0, I32MAX, "1000", false,
	    "Pause before a follower fetches again after an error or a lost connection."),
	I64("replica.high.watermark.checkpoint.interval.ms", replica_high_watermark_checkpoint_interval_ms, 1, I64MAX,
	    "5000", false, "How often the high watermarks are written to `replication-offset-checkpoint`."),
	I64("replica.lag.time.max.ms", replica_lag_time_max_ms, 0, I64MAX, "30000", false,
	    "A follower that has not caught up with the leader's log end for this long leaves the ISR (checked "
	    "every half of it); it joins again once it reaches the high watermark."),
	/* consumer groups */
	I32("offsets.topic.num.partitions", offsets_topic_num_partitions, 1, I32MAX, "50", false,
	    "Partitions of `__consumer_offsets` (fixed once the topic exists)."),
	I32("offsets.topic.replication.factor", offsets_topic_replication_factor, 1, 32767, "3", false,
	    "Cluster mode: replicas of each `__consumer_offsets` partition, clamped with a warning to the live "
	    "brokers when the topic is first created. A single node keeps one copy."),
	I32("offsets.topic.segment.bytes", offsets_topic_segment_bytes, 1, I32MAX, "104857600", false,
	    "Segment size of `__consumer_offsets`."),
	I32("offsets.retention.minutes", offsets_retention_minutes, 1, I32MAX, "10080", false,
	    "Committed offsets of a group with no members are deleted after this long."),
	I64("offsets.retention.check.interval.ms", offsets_retention_check_interval_ms, 1, I64MAX, "600000", false,
	    "How often expired committed offsets are removed."),
	I32("offsets.commit.timeout.ms", offsets_commit_timeout_ms, 1, I32MAX, "5000", false,
	    "Longest an OffsetCommit waits for its write to `__consumer_offsets` to be durable."),
	I32("group.initial.rebalance.delay.ms", group_initial_rebalance_delay_ms, 0, I32MAX, "3000", false,
	    "How long the first rebalance of an empty group waits for more members to join."),
	I32("group.min.session.timeout.ms", group_min_session_timeout_ms, 0, I32MAX, "6000", false,
	    "Smallest session.timeout.ms a consumer may ask for (INVALID_SESSION_TIMEOUT below it)."),
	I32("group.max.session.timeout.ms", group_max_session_timeout_ms, 0, I32MAX, "1800000", false,
	    "Largest session.timeout.ms a consumer may ask for."),
	I32("group.max.size", group_max_size, 1, I32MAX, "2147483647", false,
	    "Most members in one consumer group (GROUP_MAX_SIZE_REACHED beyond)."),
	/* transactions and idempotence */
	I32("transaction.max.timeout.ms", transaction_max_timeout_ms, 1, I32MAX, "900000", false,
	    "Largest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)."),
	I32("transactional.id.expiration.ms", transactional_id_expiration_ms, 1, I32MAX, "604800000", false,
	    "A transactional id with no open transaction whose state has not changed for this long is removed: "
	    "a tombstone is written to `__transaction_state` and the id starts afresh at its next InitProducerId."),
	I32("producer.id.expiration.ms", producer_id_expiration_ms, 1, I32MAX, "86400000", true,
	    "Per partition, the idempotent producer state of a producer id whose last batch is older than this is "
	    "dropped (never while it has an open transaction there); checked every "
	    "`log.retention.check.interval.ms` and at start-up."),
	I32("transaction.state.log.num.partitions", transaction_state_log_num_partitions, 1, I32MAX, "50", false,
	    "Partitions of `__transaction_state` (fixed once the topic exists)."),
	I32("transaction.state.log.replication.factor", transaction_state_log_replication_factor, 1, 32767, "3", false,
	    "Cluster mode: replicas of each `__transaction_state` partition, clamped with a warning to the live "
	    "brokers when the topic is first created. A single node keeps one copy."),
	I32("transaction.state.log.min.isr", transaction_state_log_min_isr, 1, I32MAX, "2", false,
	    "Cluster mode: `min.insync.replicas` of `__transaction_state` (clamped to its replication factor) when "
	    "the topic is first created."),
	I32("transaction.state.log.segment.bytes", transaction_state_log_segment_bytes, 1, I32MAX, "104857600", false,
	    "Segment size of `__transaction_state`."),
	I32("transaction.abort.timed.out.transaction.cleanup.interval.ms",
	    transaction_abort_timed_out_transaction_cleanup_interval_ms, 1, I32MAX, "10000", false,
	    "How often transactions past their timeout are aborted."),
	BOOL("transaction.partition.verification.enable", transaction_partition_verification_enable, "true", false,
	     "KIP-890: a partition leader appends a transactional batch only once the producer's transaction "
	     "coordinator confirms that the partition is in its ongoing transaction (a coordinator on another "
	     "broker is asked with AddPartitionsToTxn v4 VerifyOnly, once per producer epoch, partition and "
	     "transaction); otherwise the batch is refused (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, or the "
	     "retriable NOT_ENOUGH_REPLICAS while the coordinator cannot answer). `false` appends them unverified."),
	I32("transaction.remove.expired.transaction.cleanup.interval.ms",
	    transaction_remove_expired_transaction_cleanup_interval_ms, 1, I32MAX, "3600000", false,
	    "How often transactional ids past `transactional.id.expiration.ms` are removed."),
	/* threads */
	I32("num.network.threads", num_network_threads, 1, I32MAX, "3", true, ONELOOP),
	I32("num.io.threads", num_io_threads, 1, I32MAX, "8", true, ONELOOP),
	I32("num.recovery.threads.per.data.dir", num_recovery_threads_per_data_dir, 1, I32MAX, "1", true, IGNORED),
	I32("background.threads", background_threads, 1, I32MAX, "10", true, IGNORED),
	/* cluster */
	STR("zookeeper.connect", zookeeper_connect, NULL, false,
	    "ZooKeeper connection string `host:port[,host:port...][/chroot]`. Set, the broker runs in cluster mode "
	    "(docs/cluster.md): it registers under `/brokers/ids/<broker.id>`, takes part in the controller "
	    "election and lists every live broker in Metadata; a missing chroot is created. Null: a single node "
	    "that needs no ZooKeeper."),
	I32("zookeeper.connection.timeout.ms", zookeeper_connection_timeout_ms, 1, I32MAX, "18000", false,
	    "How long a connection attempt to ZooKeeper may take before it is logged and given up; the broker "
	    "then tries again after a backoff (1 s, doubling up to 30 s), resuming its session if it is still "
	    "valid, and keeps serving meanwhile (Kafka instead stops at start-up)."),
	I32("zookeeper.session.timeout.ms", zookeeper_session_timeout_ms, 1, I32MAX, "18000", false,
	    "ZooKeeper session timeout: how long after a broker loses contact its registration (and `/controller`, "
	    "if it is controller) stays. The server bounds it to 2 to 20 times its tickTime."),
	LIST("process.roles", process_roles, "", false, NOEFFECT " (KRaft)"),
	LIST("controller.quorum.voters", controller_quorum_voters, "", false, NOEFFECT " (KRaft)"),
	LIST("controller.quorum.bootstrap.servers", controller_quorum_bootstrap_servers, "", false,
	     NOEFFECT " (KRaft)"),
	LIST("controller.listener.names", controller_listener_names, NULL, false, NOEFFECT " (KRaft)"),
	STR("inter.broker.listener.name", inter_broker_listener_name, NULL, false,
	    "Listener the brokers reach each other on; must name a listener of `listeners` (checked at start-up). "
	    "Null: the listener named like `security.inter.broker.protocol`. Every connection between brokers goes "
	    "to the other's endpoint of it, in its security protocol (docs/cluster.md)."),
	BOOL("controlled.shutdown.enable", controlled_shutdown_enable, "true", false,
	     "Cluster mode: SIGTERM first sends ControlledShutdown to the controller and keeps serving until "
	     "it answers and this broker's partitions are offline (leader -1 with one replica each), at most "
	     "`controlled.shutdown.max.retries` x `controlled.shutdown.retry.backoff.ms`; then, as with false "
	     "or no controller known, the clean shutdown closes the ZooKeeper session first, so the "
	     "registration and `/controller` go at once (docs/cluster.md)."),
	I32("controlled.shutdown.max.retries", controlled_shutdown_max_retries, 0, I32MAX, "3", false,
	    "With `controlled.shutdown.retry.backoff.ms`, the bound of the wait for a controlled shutdown "
	    "(their product; one request is sent)."),
	I32("controlled.shutdown.retry.backoff.ms", controlled_shutdown_retry_backoff_ms, 0, I32MAX, "5000", false,
	    "See `controlled.shutdown.max.retries`."),
	LIST("listener.security.protocol.map", listener_security_protocol_map,
	     "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", false,
	     "Listener name to security protocol, for listeners not named after one. PLAINTEXT, SSL, SASL_PLAINTEXT "
	     "and SASL_SSL are served (docs/security.md)."),
	LIST("sasl.enabled.mechanisms", sasl_enabled_mechanisms, "PLAIN", false,
	     "SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners; `PLAIN`, `SCRAM-SHA-256` and "
	     "`SCRAM-SHA-512` are served (Kafka's default GSSAPI stops the broker at start-up). Per listener: "
	     "`listener.name.<name>.sasl.enabled.mechanisms`."),
	LIST("sasl.scram.users", sasl_scram_users, "", false,
	     "Users of SCRAM-SHA-256 and SCRAM-SHA-512 as `name:password` pairs separated by commas. Gregor's own "
	     "setting, read at start-up: the broker keeps only Kafka's salted credentials (salt, stored key, server "
	     "key, 4096 iterations) in memory. Users created with AlterUserScramCredentials (`gregor-configs "
	     "--entity-type users`) are durable and come first (docs/security.md)."),
	STR("sasl.jaas.config", sasl_jaas_config, NULL, false,
	    "JAAS entry naming the PLAIN users, Kafka's syntax: "
	    "`org.apache.kafka.common.security.plain.PlainLoginModule "
	    "required user_alice=\"secret\";`. Per listener: `listener.name.<name>.plain.sasl.jaas.config`, which "
	    "wins there."),
	STR("sasl.mechanism.inter.broker.protocol", sasl_mechanism_inter_broker_protocol, "GSSAPI", false,
	    "SASL mechanism brokers authenticate to each other with when the inter-broker listener is "
	    "SASL_PLAINTEXT or SASL_SSL: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`, with the `username` and "
	    "`password` of `listener.name.<name>.<mechanism>.sasl.jaas.config` (mechanism in lower case), else "
	    "of `sasl.jaas.config`. Kafka's default, `GSSAPI` (Kerberos), is not supported: such a broker refuses "
	    "to start (docs/security.md)."),
	STR("authorizer.class.name", authorizer_class_name, "", false,
	    "Turns ACL authorization on: `kafka.security.authorizer.AclAuthorizer` or "
	    "`org.apache.kafka.metadata.authorizer.StandardAuthorizer` (both name the same authorizer here); "
	    "empty: none, every request is allowed and the ACL APIs answer SECURITY_DISABLED (docs/security.md)."),
	STR("super.users", super_users, NULL, false,
	    "Principals allowed everything whatever the ACLs say, separated by `;` (`User:admin;User:CN=ops`)."),
	BOOL("allow.everyone.if.no.acl.found", allow_everyone_if_no_acl_found, "false", false,
	     "With an authorizer: a resource no ACL applies to is open to everyone (true) or to super users only."),
	STR("ssl.keystore.type", ssl_keystore_type, "PEM", false,
	    "Format of the keystore: `PEM` or `PKCS12` (`JKS` is refused: convert it with keytool). Every `ssl.*` "
	    "setting may also be given for one listener as "
	    "`listener.name.<name>.ssl.*` (name in lower case), which wins there (docs/security.md)."),
	STR("ssl.keystore.location", ssl_keystore_location, NULL, false,
	    "PEM or PKCS12 file holding the private key and the certificate chain (server certificate first) of SSL "
	    "listeners (docs/security.md)."),
	STR("ssl.keystore.password", ssl_keystore_password, NULL, false,
	    "Password of a PKCS12 keystore; it opens the key too (unset: `ssl.key.password` is tried)."),
	STR("ssl.key.password", ssl_key_password, NULL, false,
	    "Password of an encrypted private key (in `ssl.keystore.location` or `ssl.keystore.key`)."),
	STR("ssl.keystore.certificate.chain", ssl_keystore_certificate_chain, NULL, false,
	    "The certificate chain in PEM given inline, with `ssl.keystore.key`, instead of `ssl.keystore.location`."),
	STR("ssl.keystore.key", ssl_keystore_key, NULL, false,
	    "The private key in PEM given inline, with `ssl.keystore.certificate.chain`."),
	STR("ssl.truststore.type", ssl_truststore_type, "PEM", false, "Format of the truststore: `PEM` or `PKCS12`."),
	STR("ssl.truststore.location", ssl_truststore_location, NULL, false,
	    "PEM or PKCS12 file of the CA certificates client certificates are verified against."),
	STR("ssl.truststore.password", ssl_truststore_password, NULL, false, "Password of a PKCS12 truststore."),
	STR("ssl.truststore.certificates", ssl_truststore_certificates, NULL, false,
	    "The CA certificates in PEM given inline, instead of `ssl.truststore.location`."),
	ENUM("ssl.client.auth", ssl_client_auth, "none|requested|required", "none", false,
	     "Client certificates on SSL listeners: `none` asks for none, `requested` verifies one if the client "
	     "sends it, `required` refuses a client without a valid one. A verified certificate's subject DN, mapped "
	     "by `ssl.principal.mapping.rules`, is the connection's principal."),
	LIST("ssl.enabled.protocols", ssl_enabled_protocols, "TLSv1.2,TLSv1.3", false,
	     "TLS versions accepted on SSL listeners (`TLSv1.2`, `TLSv1.3`)."),
	LIST("ssl.cipher.suites", ssl_cipher_suites, "", false,
	     "Cipher suites: `TLS_*` names for TLSv1.3, OpenSSL cipher names for TLSv1.2; empty: OpenSSL's defaults."),
	STR("ssl.principal.mapping.rules", ssl_principal_mapping_rules, "DEFAULT", false,
	    "How a client certificate's subject DN (RFC 2253) becomes the principal's name: Kafka's "
	    "`RULE:pattern/replacement/[LU]` rules and `DEFAULT` (the DN whole), separated by commas, the first "
	    "matching rule wins; a DN no rule matches is refused (docs/security.md)."),
	STR("security.inter.broker.protocol", security_inter_broker_protocol, "PLAINTEXT", false,
	    "Names the inter-broker listener when `inter.broker.listener.name` is null: the listener of that name, "
	    "else the first one of that security protocol (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`)."),
	STR("ssl.endpoint.identification.algorithm", ssl_endpoint_identification_algorithm, "https", false,
	    "Inter-broker TLS connections: `https` checks that the other broker's certificate names the host "
	    "connected to in its subjectAltName (a DNS name, or an IP address); empty: no check."),
	I32("share.coordinator.state.topic.replication.factor", share_coordinator_state_topic_replication_factor, 1,
	    32767, "1", false, NOEFFECT),
	I32("share.coordinator.state.topic.min.isr", share_coordinator_state_topic_min_isr, 1, I32MAX, "1", false,
	    NOEFFECT),
	/* diagnostics */
	LIST("log.debug", log_debug, "", true,
	     "Debug log categories: `net`, `proto`, `log`, `group`, `txn`, `broker`, `cluster` or `all`."),
};

_Static_assert(sizeof(defs) / sizeof(defs[0]) <= CONFIG_NKEYS_MAX, "raise CONFIG_NKEYS_MAX");

static int config_other(void *obj, const char *key, const char *value, char *err, size_t errlen);

static const struct conf_table table = {
	.defs = defs,
	.ndefs = sizeof(defs) / sizeof(defs[0]),
	.set_offset = offsetof(struct broker_cfg, set),
	.has_set = true,
	.other = config_other,
};

#define LISTENER_PREFIX "listener.name."

/*
 * listener.name.<name>.ssl.<key> and .sasl.<key>: kept when that key is a
 * setting; also <mechanism>.sasl.jaas.config and [<mechanism>.]connections.max.reauth.ms.
 * -ENOENT for any other key.
 */
static bool config_listener_mech_key(const char *k, const char *suffix, size_t from)
{
	static const char *const mechs[] = { "", "plain.", "scram-sha-256.", "scram-sha-512." };

	for (size_t i = from; i < sizeof(mechs) / sizeof(mechs[0]); i++)
		if (!strncmp(k, mechs[i], strlen(mechs[i])) && !strcmp(k + strlen(mechs[i]), suffix))
			return true;
	return false;
}

static int config_other(void *obj, const char *key, const char *value, char *err, size_t errlen)
{
	struct broker_cfg *cfg = obj;
	const char *name, *dot;
	struct config_kv *kv;

	if (strncmp(key, LISTENER_PREFIX, strlen(LISTENER_PREFIX)))
		return -ENOENT;
	name = key + strlen(LISTENER_PREFIX);
	dot = strchr(name, '.');
	if (!dot || dot == name)
		return -ENOENT;
	if (!config_listener_mech_key(dot + 1, "sasl.jaas.config", 1) &&
	    !config_listener_mech_key(dot + 1, "connections.max.reauth.ms", 0) &&
	    ((strncmp(dot + 1, "ssl.", 4) && strncmp(dot + 1, "sasl.", 5)) || conf_index(&table, dot + 1) < 0))
		return -ENOENT;
	for (int i = 0; i < cfg->nlistener_ssl; i++)
		if (!strcasecmp(cfg->listener_ssl[i].key, key)) { /* a later line wins */
			char *v = strdup(value);

			if (!v)
				return -ENOMEM;
			free(cfg->listener_ssl[i].value);
			cfg->listener_ssl[i].value = v;
			return 0;
		}
	kv = realloc(cfg->listener_ssl, (size_t)(cfg->nlistener_ssl + 1) * sizeof(*kv));
	if (!kv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cfg->listener_ssl = kv;
	kv += cfg->nlistener_ssl;
	kv->key = strdup(key);
	kv->value = strdup(value);
	if (!kv->key || !kv->value) {
		free(kv->key);
		free(kv->value);
		return -ENOMEM;
	}
	for (char *c = kv->key + strlen(LISTENER_PREFIX); *c != '.'; c++)
		*c = (char)tolower((unsigned char)*c);
	cfg->nlistener_ssl++;
	return 0;
}

const char *config_listener_ssl(const struct broker_cfg *cfg, const char *name, const char *key, const char *dflt)
{
	char want[256];
	size_t n;

	n = (size_t)snprintf(want, sizeof(want), LISTENER_PREFIX "%s.%s", name, key);
	if (n >= sizeof(want))
		return dflt;
	for (size_t i = strlen(LISTENER_PREFIX); want[i] && want[i] != '.'; i++)
		want[i] = (char)tolower((unsigned char)want[i]);
	for (int i = cfg->nlistener_ssl - 1; i >= 0; i--)
		if (!strcmp(cfg->listener_ssl[i].key, want))
			return cfg->listener_ssl[i].value;
	return dflt;
}

const struct conf_table *config_table(void)
{
	return &table;
}

int config_init(struct broker_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return conf_defaults(&table, cfg);
}

void config_release(struct broker_cfg *cfg)
{
	conf_release(&table, cfg);
	for (int i = 0; i < cfg->nlistener_ssl; i++) {
		free(cfg->listener_ssl[i].key);
		free(cfg->listener_ssl[i].value);
	}
	free(cfg->listener_ssl);
	cfg->listener_ssl = NULL;
	cfg->nlistener_ssl = 0;
}

int config_load(struct broker_cfg *cfg, const char *path, char *err, size_t errlen)
{
	return conf_load_file(&table, cfg, path, err, errlen);
}

int config_set(struct broker_cfg *cfg, const char *key, const char *value, char *err, size_t errlen)
{
	return conf_set(&table, cfg, key, value, err, errlen);
}

void config_report_unused(const struct broker_cfg *cfg)
{
	static const char *const keys[] = { "num.network.threads", "num.io.threads" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (config_is_set(cfg, keys[i]))
			log_info("%s is set but not used: one event-loop thread serves every connection and request "
				 "(docs/configuration.md)",
				 keys[i]);
}

bool config_is_set(const struct broker_cfg *cfg, const char *key)
{
	return conf_is_set(&table, cfg, key);
}

int config_get(const struct broker_cfg *cfg, const char *key, char *buf, size_t n, int *source)
{
	int rc = conf_get(&table, cfg, key, buf, n);

	if (source)
		*source = rc < 0                    ? CONFIG_SOURCE_UNKNOWN
			  : config_is_set(cfg, key) ? CONFIG_SOURCE_STATIC_BROKER
						    : CONFIG_SOURCE_DEFAULT;
	return rc;
}

int config_kafka_type(const struct conf_def *d)
{
	switch (d->type) {
	case CONF_BOOL:
		return CONFIG_KTYPE_BOOLEAN;
	case CONF_INT32:
		return CONFIG_KTYPE_INT;
	case CONF_INT64:
		return CONFIG_KTYPE_LONG;
	case CONF_LIST:
		return CONFIG_KTYPE_LIST;
	case CONF_STRING:
	case CONF_ENUM:
		return CONFIG_KTYPE_STRING;
	}
	return CONFIG_KTYPE_UNKNOWN;
}

/* Parses s as a finite double in [lo, hi] (above lo if lo_open).  0 or -EINVAL. */
static int config_double_in(const char *s, double lo, double hi, bool lo_open)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
		return -EINVAL;
	return 0;
}

/* The log.cleaner.* values the table cannot check by itself. */
static int config_check_cleaner(const struct broker_cfg *cfg, char *err, size_t errlen)
{
	if (cfg->log_cleaner_threads != 1) {
		snprintf(err, errlen, "log.cleaner.threads is %d: only 1 cleaner thread is supported",
			 cfg->log_cleaner_threads);
		return -EINVAL;
	}
	if (config_double_in(cfg->log_cleaner_min_cleanable_ratio, 0, 1, false)) {
		snprintf(err, errlen,
			 "invalid value '%s' for 'log.cleaner.min.cleanable.ratio': expected a number "
			 "between 0 and 1",
			 cfg->log_cleaner_min_cleanable_ratio ? cfg->log_cleaner_min_cleanable_ratio : "null");
		return -EINVAL;
	}
	if (config_double_in(cfg->log_cleaner_io_max_bytes_per_second, 0, DBL_MAX, true)) {
		snprintf(err, errlen,
			 "invalid value '%s' for 'log.cleaner.io.max.bytes.per.second': expected a number "
			 "above 0",
			 cfg->log_cleaner_io_max_bytes_per_second ? cfg->log_cleaner_io_max_bytes_per_second : "null");
		return -EINVAL;
	}
	return 0;
}

/* Length of the listener name of a "NAME://host:port" entry (0 if it has none). */
static size_t config_listener_name_len(struct kstr item)
{
	const char *sep = memmem(item.p, (size_t)item.len, "://", 3);

	return sep ? (size_t)(sep - item.p) : 0;
}

/* inter.broker.listener.name must name a listener; zookeeper.connect must not be empty. */
static int config_check_cluster(const struct broker_cfg *cfg, char *err, size_t errlen)
{
	const char *name = cfg->inter_broker_listener_name, *p = cfg->listeners;
	struct kstr item;

	if (cfg->zookeeper_connect && !cfg->zookeeper_connect[0]) {
		snprintf(err, errlen, "zookeeper.connect is empty (leave it out for a single node)");
		return -EINVAL;
	}
	if (!name)
		return 0;
	while (conf_list_next(&p, &item))
		if (config_listener_name_len(item) == strlen(name) && !strncmp(item.p, name, strlen(name)))
			return 0;
	snprintf(err, errlen, "inter.broker.listener.name '%s' is not the name of a listener in listeners '%s'", name,
		 cfg->listeners ? cfg->listeners : "");
	return -EINVAL;
}

/* authorizer.class.name: empty, or one of Kafka's two ACL authorizers. */
static int config_check_authorizer(const struct broker_cfg *cfg, char *err, size_t errlen)
{
	const char *n = cfg->authorizer_class_name;

	if (!n || !n[0] || !strcmp(n, "kafka.security.authorizer.AclAuthorizer") ||
	    !strcmp(n, "org.apache.kafka.metadata.authorizer.StandardAuthorizer"))
		return 0;
	snprintf(err, errlen,
		 "authorizer.class.name '%s' is not served: use kafka.security.authorizer.AclAuthorizer or "
		 "org.apache.kafka.metadata.authorizer.StandardAuthorizer, or leave it empty",
		 n);
	return -EINVAL;
}

int config_finalize(struct broker_cfg *cfg, char *err, size_t errlen)
{
	bool node_set = config_is_set(cfg, "node.id"), broker_set = config_is_set(cfg, "broker.id");

	if (broker_set && cfg->broker_id < 0) {
		snprintf(err, errlen, "broker.id must be at least 0 (automatic broker ids are not supported)");
		return -EINVAL;
	}
	if (node_set && broker_set && cfg->node_id != cfg->broker_id) {
		snprintf(err, errlen, "broker.id (%d) and node.id (%d) differ", cfg->broker_id, cfg->node_id);
		return -EINVAL;
	}
	if (broker_set)
		cfg->node_id = cfg->broker_id;
	cfg->broker_id = cfg->node_id;
	if (!config_is_set(cfg, "log.dirs") && cfg->log_dir) {
		char *d = strdup(cfg->log_dir);

		if (!d)
			return -ENOMEM;
		free(cfg->log_dirs);
		cfg->log_dirs = d;
	}
	if (!cfg->log_dirs || !*cfg->log_dirs) {
		snprintf(err, errlen, "log.dirs is empty");
		return -EINVAL;
	}
	if (cfg->group_min_session_timeout_ms > cfg->group_max_session_timeout_ms) {
		snprintf(err, errlen, "group.min.session.timeout.ms (%d) is above group.max.session.timeout.ms (%d)",
			 cfg->group_min_session_timeout_ms, cfg->group_max_session_timeout_ms);
		return -EINVAL;
	}
	if (config_check_cleaner(cfg, err, errlen))
		return -EINVAL;
	if (config_check_cluster(cfg, err, errlen))
		return -EINVAL;
	if (config_check_authorizer(cfg, err, errlen))
		return -EINVAL;
	if (log_set_debug(cfg->log_debug ? cfg->log_debug : "")) {
		snprintf(err, errlen,
			 "invalid value '%s' for 'log.debug': expected a list of net, proto, log, "
			 "group, txn, broker, cluster or all",
			 cfg->log_debug);
		return -EINVAL;
	}
	return 0;
}

int64_t config_retention_ms(const struct broker_cfg *cfg)
{
	int64_t ms;

	if (cfg->log_retention_ms != CONF_UNSET64)
		ms = cfg->log_retention_ms;
	else if (cfg->log_retention_minutes != CONF_UNSET32)
		ms = (int64_t)cfg->log_retention_minutes * 60 * 1000;
	else
		ms = (int64_t)cfg->log_retention_hours * 60 * 60 * 1000;
	return ms < 0 ? -1 : ms;
}

int64_t config_roll_ms(const struct broker_cfg *cfg)
{
	if (cfg->log_roll_ms != CONF_UNSET64)
		return cfg->log_roll_ms;
	return (int64_t)cfg->log_roll_hours * 60 * 60 * 1000;
}

int64_t config_roll_jitter_ms(const struct broker_cfg *cfg)
{
	if (cfg->log_roll_jitter_ms != CONF_UNSET64)
		return cfg->log_roll_jitter_ms;
	return (int64_t)cfg->log_roll_jitter_hours * 60 * 60 * 1000;
}

const char *config_advertised_listeners(const struct broker_cfg *cfg)
{
	if (cfg->advertised_listeners && *cfg->advertised_listeners)
		return cfg->advertised_listeners;
	return cfg->listeners;
}

/* ---- command line ---- */

void config_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--help] [--version] [--print-config-doc] [server.properties]\n"
		"       %*s [--override key=value ...]\n"
		"\n"
		"Starts a broker speaking the Apache Kafka protocol.\n"
		"  server.properties        settings in Kafka's names (see docs/configuration.md)\n"
		"  --override key=value     set one setting; wins over the file (repeatable)\n"
		"  --print-config-doc       print the settings reference (markdown) and exit\n"
		"  --version                print the version and exit\n"
		"  --help                   print this help and exit\n",
		prog, (int)strlen(prog), "");
}

static int args_fail(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: %s\n", prog, msg);
	config_usage(stderr, prog);
	return 2;
}

/* Validates the arguments; OUT: the file argument (or NULL). */
static int args_scan(int argc, char **argv, const char **path, int *exit_code)
{
	const char *prog = argc > 0 ? argv[0] : "gregor";
	char msg[512];

	*path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			config_usage(stdout, prog);
			*exit_code = 0;
			return 1;
		} else if (!strcmp(a, "--version")) {
			printf("gregor %s\n", GREGOR_VERSION);
			*exit_code = 0;
			return 1;
		} else if (!strcmp(a, "--print-config-doc")) {
			*exit_code = CONFIG_ARGS_PRINT_DOC;
			return 1;
		} else if (!strcmp(a, "--override")) {
			if (++i >= argc) {
				*exit_code = args_fail(prog, "--override needs a key=value argument");
				return 1;
			}
		} else if (!strncmp(a, "--override=", 11)) {
			continue;
		} else if (a[0] == '-' && a[1]) {
			snprintf(msg, sizeof(msg), "unknown option '%s'", a);
			*exit_code = args_fail(prog, msg);
			return 1;
		} else if (*path) {
			snprintf(msg, sizeof(msg), "more than one config file ('%s' and '%s')", *path, a);
			*exit_code = args_fail(prog, msg);
			return 1;
		} else {
			*path = a;
		}
	}
	return 0;
}

static int args_apply_overrides(int argc, char **argv, struct broker_cfg *cfg, char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *kv = NULL;
		char msg[512];
		int rc;

		if (!strcmp(argv[i], "--override"))
			kv = argv[++i];
		else if (!strncmp(argv[i], "--override=", 11))
			kv = argv[i] + 11;
		if (!kv)
			continue;
		rc = conf_apply(&table, cfg, kv, msg, sizeof(msg));
		if (rc) {
			snprintf(err, errlen, "--override %s: %s", kv, msg);
			return rc;
		}
	}
	return 0;
}

int config_read(struct broker_cfg *cfg, const char *path, int argc, char **argv, char *err, size_t errlen)
{
	int rc = config_init(cfg);

	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto out_release;
	}
	if (path)
		rc = config_load(cfg, path, err, errlen);
	if (!rc)
		rc = args_apply_overrides(argc, argv, cfg, err, errlen);
	if (!rc)
		rc = config_finalize(cfg, err, errlen);
	if (!rc)
		return 0;
out_release:
	config_release(cfg);
	return rc;
}

int config_parse_args(int argc, char **argv, struct broker_cfg *cfg, const char **out_config_path)
{
	const char *prog = argc > 0 ? argv[0] : "gregor";
	const char *path = NULL;
	char err[1024];
	int code = 0;

	if (out_config_path)
		*out_config_path = NULL;
	if (args_scan(argc, argv, &path, &code))
		return code;
	if (config_read(cfg, path, argc, argv, err, sizeof(err)))
		return args_fail(prog, err);
	if (out_config_path)
		*out_config_path = path;
	return CONFIG_ARGS_RUN;
}

/* ---- reload ---- */

/* Exchanges the stored value of d between a and b (strings move as pointers). */
static void config_swap_value(const struct conf_def *d, struct broker_cfg *a, struct broker_cfg *b)
{
	uint8_t tmp[sizeof(int64_t) > sizeof(char *) ? sizeof(int64_t) : sizeof(char *)];
	size_t n = 0;

	switch (d->type) {
	case CONF_BOOL:
		n = sizeof(bool);
		break;
	case CONF_INT32:
		n = sizeof(int32_t);
		break;
	case CONF_INT64:
		n = sizeof(int64_t);
		break;
	case CONF_STRING:
	case CONF_LIST:
		n = sizeof(char *);
		break;
	case CONF_ENUM:
		n = sizeof(int);
		break;
	}
	assert(n > 0 && n <= sizeof(tmp));
	memcpy(tmp, (char *)a + d->offset, n);
	memcpy((char *)a + d->offset, (char *)b + d->offset, n);
	memcpy((char *)b + d->offset, tmp, n);
}

int config_update(struct broker_cfg *cur, struct broker_cfg *next)
{
	int changed = 0;

	for (size_t i = 0; i < table.ndefs; i++) {
		const struct conf_def *d = &table.defs[i];
		char was[256], now[256];
		bool differ;

		if (conf_get_def(d, cur, was, sizeof(was)) == 1)
			snprintf(was, sizeof(was), "null");
		if (conf_get_def(d, next, now, sizeof(now)) == 1)
			snprintf(now, sizeof(now), "null");
		differ = strcmp(was, now) != 0;

		if (differ && !d->dynamic) {
			log_warn("config reload: '%s' changed from '%s' to '%s', needs a restart (keeping '%s')",
				 d->name, was, now, was);
			continue;
		}
		if (!d->dynamic)
			continue;
		if (differ) {
			log_info("config reload: '%s' changed from '%s' to '%s'", d->name, was, now);
			changed++;
		}
		config_swap_value(d, cur, next);
		cur->set[i] = next->set[i];
	}
	return changed;
}

int config_first_log_dir(const struct broker_cfg *cfg, char *dir, size_t size)
{
	size_t n = strcspn(cfg->log_dirs, ",");

	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dir, cfg->log_dirs, n);
	dir[n] = '\0';
	return 0;
}
