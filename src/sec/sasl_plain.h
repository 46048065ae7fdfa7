/*
 * sasl_plain.h - SASL PLAIN (RFC 4616) against the users of a JAAS
 * configuration written Kafka's way:
 *
 *   org.apache.kafka.common.security.plain.PlainLoginModule required
 *       user_alice="alice-secret" user_bob="bob-secret";
 *
 * Each user_<name>="<password>" option is one user; other options
 * (username, password: the broker's own client identity) are ignored.
 */
#ifndef GREGOR_SEC_SASL_PLAIN_H
#define GREGOR_SEC_SASL_PLAIN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Checks that jaas parses: a login module name, the "required" (or
 * sufficient, requisite, optional) flag, key="value" options and the
 * closing ';'.  Returns the number of users (>= 0), or -EINVAL with a
 * message in err.
 */
int sasl_jaas_check(const char *jaas, char *err, size_t errlen);

/*
 * Verifies a PLAIN token ([authzid] NUL authcid NUL passwd) against jaas.
 * Returns 0 and the user name in user (NUL-terminated) when the password
 * matches and authzid is empty or the same user; -EACCES otherwise (user
 * then holds the name tried, possibly truncated, for the log).
 */
int sasl_plain_verify(const char *jaas, const uint8_t *tok, size_t len, char *user, size_t userlen);

/*
 * Copies the value of option key (e.g. username, password: the broker's
 * own identity towards the other brokers) into out.  0, or -EINVAL with a
 * message in err when jaas does not parse, has no such option or its
 * value does not fit.
 */
int sasl_jaas_option(const char *jaas, const char *key, char *out, size_t outlen, char *err, size_t errlen);

#endif
