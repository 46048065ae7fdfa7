/*
 * scram_store.h - the SCRAM credentials managed with
 * AlterUserScramCredentials (KIP-554): per user, at most one credential
 * per mechanism, in Kafka's stored form (scram.h), never a password.
 *
 * On a single node the store is a file in the log directory,
 * <dir>/scram-credentials, replaced whole with durable_replace() on every
 * change, one line per credential:
 *
 *   # gregor scram credentials v1
 *   SCRAM-SHA-256 salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n> <user>
 *
 * (the user name last, to the end of the line: names hold no newline).
 * In cluster mode the store is opened without a directory: it is only
 * the cache of /config/users/<user> that the broker keeps from ZooKeeper.
 * Loop thread only.
 */
#ifndef GREGOR_SEC_SCRAM_STORE_H
#define GREGOR_SEC_SCRAM_STORE_H

#include <stdbool.h>

#include "sec/scram.h"

#define SCRAM_STORE_FILE "scram-credentials"
#define SCRAM_USER_MAX 255 /* longest user name kept */

struct scram_store;

/* Opens the store, loading <dir>/scram-credentials (absent: empty); dir NULL: memory only.  0 or -errno (-EINVAL: corrupt). */
int scram_store_open(const char *dir, struct scram_store **out);
void scram_store_close(struct scram_store *st);

/* user's credential for m: 0, or -ENOENT. */
int scram_store_get(const struct scram_store *st, enum scram_mech m, const char *user, struct scram_cred *out);
/* Sets (cred) or removes (cred NULL) user's credential for m, in memory.  0 or -ENOMEM. */
int scram_store_set(struct scram_store *st, const char *user, enum scram_mech m, const struct scram_cred *cred);
/* Writes the file (no-op without a directory).  0 or -errno. */
int scram_store_save(struct scram_store *st);

/* Users with at least one credential: the i-th (0 <= i < scram_store_count()), NULL past the end. */
int scram_store_count(const struct scram_store *st);
const char *scram_store_user(const struct scram_store *st, int i);

#endif
