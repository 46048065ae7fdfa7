/*
 * quota_zk.c - client quotas in ZooKeeper (quota_zk.h): entity paths,
 * Kafka's sanitized names, and the cache of quota.h kept current from the
 * znodes each notification names.
 */
#include "broker/quota_zk.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "cluster/cluster.h"
#include "cluster/confchange.h"
#include "util/log.h"

#define QUOTA_ZK_DEFAULT "<default>"

/* A component's name as a path holds it (len bytes): <default>, or a desanitized name; false if malformed. */
static bool quota_zk_desanitize(const char *s, size_t len, uint8_t *comp, char *name)
{
	if (len == strlen(QUOTA_ZK_DEFAULT) && !memcmp(s, QUOTA_ZK_DEFAULT, len)) {
		*comp = QUOTA_DEFAULT;
		name[0] = '\0';
		return true;
	}
	*comp = QUOTA_NAME;
	return confchange_desanitize(s, len, name, QUOTA_NAME_MAX + 1);
}

static size_t quota_zk_comp(uint8_t comp, const char *name, char *out)
{
	if (comp == QUOTA_DEFAULT)
		return (size_t)sprintf(out, "%s", QUOTA_ZK_DEFAULT);
	return confchange_sanitize(name, out);
}

void quota_zk_entity(const struct quota_entity *e, char *buf, size_t size)
{
	char u[3 * QUOTA_NAME_MAX + 1], c[3 * QUOTA_NAME_MAX + 1];

	if (e->user != QUOTA_ABSENT)
		quota_zk_comp(e->user, e->user_name, u);
	if (e->client != QUOTA_ABSENT)
		quota_zk_comp(e->client, e->client_name, c);
	if (e->user == QUOTA_ABSENT)
		snprintf(buf, size, "clients/%s", c);
	else if (e->client == QUOTA_ABSENT)
		snprintf(buf, size, "users/%s", u);
	else
		snprintf(buf, size, "users/%s/clients/%s", u, c);
}

bool quota_zk_parse(const char *entity, struct quota_entity *e)
{
	const char *mid;

	memset(e, 0, sizeof(*e));
	if (!strncmp(entity, "clients/", 8))
		return !strchr(entity + 8, '/') &&
		       quota_zk_desanitize(entity + 8, strlen(entity + 8), &e->client, e->client_name);
	if (strncmp(entity, "users/", 6))
		return false;
	entity += 6;
	mid = strchr(entity, '/');
	if (!mid)
		return quota_zk_desanitize(entity, strlen(entity), &e->user, e->user_name);
	return !strncmp(mid, "/clients/", 9) && !strchr(mid + 9, '/') &&
	       quota_zk_desanitize(entity, (size_t)(mid - entity), &e->user, e->user_name) &&
	       quota_zk_desanitize(mid + 9, strlen(mid + 9), &e->client, e->client_name);
}

int quota_zk_write(struct broker *b, const struct quota_entity *e, const bool change[QUOTA_KINDS],
		   const double values[QUOTA_KINDS], quota_zk_done_fn *done, void *arg)
{
	char entity[CONFCHANGE_ENTITY_MAX], text[QUOTA_KINDS][40];
	const char *names[QUOTA_KINDS], *vals[QUOTA_KINDS];
	int n = 0;

	quota_zk_entity(e, entity, sizeof(entity));
	for (int k = 0; k < QUOTA_KINDS; k++) {
		if (!change[k])
			continue;
		names[n] = quota_key(k);
		vals[n] = NULL;
		if (values[k] > 0) { /* byte rates as Kafka writes longs, request_percentage as a double */
			if (k == QUOTA_REQUEST)
				snprintf(text[k], sizeof(text[k]), "%.17g", values[k]);
			else
				snprintf(text[k], sizeof(text[k]), "%.0f", values[k]);
			vals[n] = text[k];
		}
		n++;
	}
	return cluster_entity_config_update(b->cluster, entity, names, vals, n, done, arg);
}

/* A read of an entity's znode in flight. */
struct quota_zk_read {
	struct quota_entity e;
	char entity[];
};

/* The entity's znode as read: its quota keys replace the cached ones (none: the entity goes). */
static void quota_zk_on_read(void *arg, int err, const struct znode_config *cfg)
{
	struct quota_zk_read *zr = arg;

	if (err && err != -ENOENT) {
		log_warn("client quotas of '%s': cannot read them from zookeeper: %s", zr->entity, strerror(-err));
		free(zr);
		return;
	}
	for (int k = 0; k < QUOTA_KINDS; k++) {
		double v = 0;

		for (int i = 0; !err && i < cfg->n; i++)
			if (!strcmp(cfg->names[i], quota_key(k))) {
				char *end;

				v = strtod(cfg->values[i], &end);
				if (*end || !isfinite(v) || v <= 0) {
					log_warn("client quotas of '%s': %s=%s is not a quota; ignored", zr->entity,
						 cfg->names[i], cfg->values[i]);
					v = 0;
				}
			}
		if (v > 0 || quota_has(&zr->e))
			quota_set(&zr->e, k, v, !(v > 0));
	}
	log_info("client quotas of '%s' read from zookeeper", zr->entity);
	free(zr);
}

void quota_zk_changed(void *arg, const char *entity)
{
	struct broker *b = arg;
	size_t len = strlen(entity);
	struct quota_zk_read *zr;
	struct quota_entity e;

	if (!quota_zk_parse(entity, &e)) {
		log_warn("'%s' in zookeeper names no client quota entity; ignored", entity);
		return;
	}
	if (!(zr = malloc(sizeof(*zr) + len + 1)))
		return;
	zr->e = e;
	memcpy(zr->entity, entity, len + 1);
	if (cluster_entity_config(b->cluster, entity, quota_zk_on_read, zr))
		free(zr);
}
