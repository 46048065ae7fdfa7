/* scram.h - users' SCRAM credentials over the wire for gregor-configs
 * (DescribeUserScramCredentials, AlterUserScramCredentials, KIP-554: no
 * librdkafka 2.0.2 Admin API). As Kafka's ConfigCommand does, the tool
 * turns "SCRAM-SHA-256=[iterations=8192,password=secret]" into a random
 * salt and the salted password (PBKDF2, OpenSSL) and sends only those;
 * the password never reaches the broker.
 */
#ifndef GREGOR_TOOLS_SCRAM_H
#define GREGOR_TOOLS_SCRAM_H

#include <stdbool.h>
#include <librdkafka/rdkafka.h>

/* True for a SCRAM mechanism name used as a config key (SCRAM-SHA-256, SCRAM-SHA-512). */
bool scram_is_key(const char *key);

/* Applies keys[i] = vals[i] ("iterations=N,password=P", iterations
 * defaulting to 4096) or deletes keys[i] (vals[i] NULL) for user. NULL on
 * success, else a message (static buffer). Exits 1 if the broker is unreachable. */
const char *scram_alter(rd_kafka_t *rk, const char *user, char **keys, char **vals, int n);

/* Prints "SCRAM credential configs for user-principal '<u>' are
 * SCRAM-SHA-256=iterations=N, ..." for user (NULL: every user with one).
 * A named user without credentials prints nothing. NULL or a message. */
const char *scram_describe(rd_kafka_t *rk, const char *user);

#endif
