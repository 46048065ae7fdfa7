/*
 * uuid.h - Kafka's Uuids (topic ids, cluster ids): random version-4 uuids,
 * printed as 22 characters of unpadded base64url as Kafka prints them.
 */
#ifndef GREGOR_UTIL_UUID_H
#define GREGOR_UTIL_UUID_H

#include "util/buf.h"

#define UUID_B64_LEN 22

/* A random version-4 uuid, never zero and never one of Kafka's reserved ids (first byte 0). */
void uuid_random(struct kuuid *u);
/* OUT: out, 22 characters and a NUL. */
void uuid_to_b64(const struct kuuid *u, char out[UUID_B64_LEN + 1]);
/* 0, or -EINVAL if s is not a base64url uuid. */
int uuid_from_b64(const char *s, struct kuuid *u);

#endif
