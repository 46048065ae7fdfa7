/*
 * fetch_session.h - the incremental fetch session cache (KIP-227).
 *
 * A consumer that fetches from many partitions may ask the broker to
 * remember them: a fetch session holds, per partition, what the fetcher
 * asked for (fetch offset, max bytes, its log start offset, leader epoch)
 * and what it was last told (high watermark, last stable offset, log start
 * offset).  Later requests then name only the partitions whose request
 * changed (plus ForgottenTopicsData), and the response carries only the
 * partitions with something new (fetch_session_must_respond).
 *
 * Sessions are not tied to a connection: a fetcher may come back on a new
 * one with the same id and epoch.  They die when the fetcher closes them
 * (a full fetch naming the id, or epoch -1), when a new session needs the
 * slot (fetch_session_create's eviction), or after
 * min.incremental.fetch.session.eviction.ms without use
 * (fetch_session_expire).
 *
 * Eviction follows Kafka's FetchSessionCache: when all
 * max.incremental.fetch.session.cache.slots are taken, a new session may
 * take the slot of the least recently used session if that one has been
 * idle longer than the eviction time; otherwise of the "least valuable"
 * evictable session, ordered by (privileged, partitions, id), if the new
 * one is worth at least as much.  A session is evictable by consumers once
 * it is older than the eviction time; by followers (privileged) also
 * before that unless it is itself privileged.  Without a slot the fetch is
 * served without a session (SessionId 0).
 *
 * Memory is bounded by the slots and by FETCH_SESSION_PARTITIONS_MAX
 * partitions over all sessions (Kafka has no such bound): a session that
 * would pass it is not created, and a partition that would pass it is not
 * added (the caller closes that session; its fetcher then fetches without
 * one until room is free).
 *
 * This file is pure bookkeeping: it reads no log and no clock (every
 * caller passes now_ms), so it is unit-tested on its own.  Memory: each
 * session and partition entry is malloc'd and owned by the cache.
 * Threading: the event-loop thread only.
 */
#ifndef GREGOR_BROKER_FETCH_SESSION_H
#define GREGOR_BROKER_FETCH_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#define FETCH_SESSION_INVALID_ID 0
#define FETCH_SESSION_INITIAL_EPOCH 0          /* with id 0: create a session */
#define FETCH_SESSION_FINAL_EPOCH -1           /* close the session, or fetch without one */
#define FETCH_SESSION_PARTITIONS_MAX (1 << 20) /* over all sessions: ~100-200 MiB */

/* What the fetcher was last told of a partition; -1 for a partition never answered. */
struct fetch_session_told {
	int64_t high_watermark;
	int64_t last_stable_offset;
	int64_t log_start_offset;
};

/* One partition of a session; parts[] entries of struct fetch_session. */
struct fetch_session_part {
	char *topic; /* owned, NUL-terminated; NULL = free entry */
	int32_t topic_len;
	int32_t partition;
	/* what the fetcher asked for */
	int64_t fetch_offset;
	int64_t fetcher_log_start_offset;
	int32_t max_bytes;
	int32_t leader_epoch;
	struct fetch_session_told told;
	int32_t prev, next; /* the session's order, -1 = none */
	int32_t hnext;      /* hash chain, -1 = end */
	uint32_t hash;
};

/* What a fetch found for one partition, to decide whether it is answered. */
struct fetch_session_state {
	int64_t high_watermark;
	int64_t last_stable_offset;
	int64_t log_start_offset;
	int16_t error_code;
	int64_t records_bytes;
};

/* The request fields a session keeps per partition. */
struct fetch_session_req {
	int64_t fetch_offset;
	int64_t fetcher_log_start_offset;
	int32_t max_bytes;
	int32_t leader_epoch;
};

struct fetch_session {
	int32_t id;
	int32_t epoch; /* the epoch the next request must carry */
	bool privileged;
	int64_t created_ms, last_used_ms;
	uint64_t generation; /* unique per session ever created */
	struct fetch_session_part *parts;
	int32_t cap;  /* entries of parts[] */
	int32_t used; /* entries of parts[] ever taken (the rest never used) */
	int32_t n;    /* partitions in the session */
	int32_t head, tail, free_list;
	int32_t *buckets; /* hash heads, nbuckets (a power of two) */
	int32_t nbuckets;
	struct fetch_session *lru_prev, *lru_next; /* least recently used first */
	struct fetch_session *id_next;             /* id hash chain */
};

struct fetch_session_cache {
	int32_t slots_max;   /* max.incremental.fetch.session.cache.slots */
	int64_t eviction_ms; /* min.incremental.fetch.session.eviction.ms */
	int32_t count;
	int64_t partitions;         /* over all sessions */
	int64_t partitions_max;     /* FETCH_SESSION_PARTITIONS_MAX (tests lower it) */
	uint64_t evictions;         /* sessions removed to make room or for idleness */
	struct fetch_session **ids; /* id hash heads, nids (a power of two) */
	int32_t nids;
	struct fetch_session *lru_head, *lru_tail;
	uint64_t rng; /* xorshift state for session ids */
	uint64_t generation;
};

/* Embedded cache; seed picks the session ids (any value). Returns 0 or -ENOMEM. */
int fetch_session_cache_init(struct fetch_session_cache *cache, int32_t slots_max, int64_t eviction_ms, uint64_t seed);
/* Frees every session. */
void fetch_session_cache_release(struct fetch_session_cache *cache);

/* The session with that id, or NULL. */
struct fetch_session *fetch_session_find(struct fetch_session_cache *cache, int32_t id);
/* Removes and frees sess. */
void fetch_session_remove(struct fetch_session_cache *cache, struct fetch_session *sess);
/*
 * A new, empty session for a fetcher about to add nparts partitions, with
 * epoch 1 and a fresh random id, evicting another session if the cache is
 * full and the rules above allow it.  OUT: *sess_out.  Returns 0, -ENOSPC
 * (no slot, or nparts more partitions would pass partitions_max: serve the
 * fetch without a session) or -ENOMEM.
 */
int fetch_session_create(struct fetch_session_cache *cache, int64_t now_ms, bool privileged, int32_t nparts,
			 struct fetch_session **sess_out);
/* sess was used now: it becomes the most recently used. */
void fetch_session_touch(struct fetch_session_cache *cache, struct fetch_session *sess, int64_t now_ms);
/* Removes sessions unused for longer than the eviction time; returns how many. */
int32_t fetch_session_expire(struct fetch_session_cache *cache, int64_t now_ms);

/* The epoch after e (1 after INT32_MAX, as Kafka; stays -1 once negative). */
int32_t fetch_session_next_epoch(int32_t e);

/* Index of topic[0..len)/partition in sess->parts, or -1. */
int32_t fetch_session_lookup(const struct fetch_session *sess, const char *topic, int32_t topic_len, int32_t partition);
/*
 * Adds the partition at the end of the session's order (answered-state -1)
 * or, if present, updates its request fields in place.  OUT: *added (may
 * be NULL).  Returns the entry's index, -ENOSPC (a new partition would
 * pass partitions_max) or -ENOMEM.
 */
int32_t fetch_session_upsert(struct fetch_session_cache *cache, struct fetch_session *sess, const char *topic,
			     int32_t topic_len, int32_t partition, const struct fetch_session_req *req, bool *added);
/* Drops the partition; false if it was not in the session. */
bool fetch_session_forget(struct fetch_session_cache *cache, struct fetch_session *sess, const char *topic,
			  int32_t topic_len, int32_t partition);
/* Moves entry idx to the end of the session's order (served last next time). */
void fetch_session_move_last(struct fetch_session *sess, int32_t idx);

/*
 * Kafka's rule for an incremental response: true if the partition must be
 * in it (it carries records, has an error, or its high watermark, last
 * stable offset or log start offset differs from what the fetcher was last
 * told).  With update, the entry then remembers what is being told; an
 * error resets its high watermark to -1 so the partition is sent again
 * once the error clears.
 */
bool fetch_session_must_respond(struct fetch_session_told *told, const struct fetch_session_state *st, bool update);

#endif
