/* gregor-configs - kafka-configs.sh for Gregor: describe and alter topic
 * and broker configs.
 *
 * Output follows Kafka's ConfigCommand ("Dynamic configs for topic t are:"
 * then "  k=v sensitive=false synonyms={SOURCE:k=v, ...}"; "Completed
 * updating config for topic t.").
 *
 * --alter keeps Kafka's incremental meaning (only the named keys change)
 * although librdkafka 2.0.2 has no IncrementalAlterConfigs: the tool reads
 * the resource's dynamic configs with DescribeConfigs, applies
 * --add-config / --delete-config to that set and writes the whole set back
 * with AlterConfigs (replace semantics) - what Kafka's own tool does for
 * brokers. Two limits follow: the read-modify-write is not atomic against a
 * concurrent change of the same resource, and an existing sensitive value
 * (returned as null) cannot be carried over, so it must be given again
 * (same error as Kafka's).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/admin.h"
#include "lib/kafka.h"
#include "lib/opt.h"
#include "lib/quotas.h"
#include "lib/scram.h"

static const struct opt_def defs[] = {
	{ "bootstrap-server", true, false, "<String: server to connect to>",
	  "REQUIRED: The Kafka server to connect to." },
	{ "command-config", true, false, "<String: command config property file>",
	  "Property file containing configs to be passed to Admin Client." },
	{ "describe", false, false, NULL, "List configs for the given entity." },
	{ "alter", false, false, NULL, "Alter the configuration for the entity." },
	{ "all", false, false, NULL, "List all configs for the given entity, including static configs if available." },
	{ "entity-type", true, false, "<String>", "Type of entity (topics/clients/users/brokers)" },
	{ "entity-name", true, false, "<String>",
	  "Name of entity (topic name/client id/user principal name/broker id)" },
	{ "entity-default", false, false, NULL,
	  "Default entity name for clients/users/brokers (applies to "
	  "corresponding entity type in command line)" },
	{ "topic", true, false, "<String: topic>",
	  "The topic's name. Shorthand for --entity-type topics --entity-name <topic>." },
	{ "broker", true, false, "<String: broker id>",
	  "The broker's ID. Shorthand for --entity-type brokers --entity-name <id>." },
	{ "add-config", true, false, "<String>",
	  "Key Value pairs of configs to add. Square brackets can be used to group values which "
	  "contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'." },
	{ "delete-config", true, true, "<String>", "config keys to remove 'k1,k2'" },
	{ NULL },
};

static const struct opt_cmd cmd = { "gregor-configs",
				    "This tool helps to manipulate and describe entity config for a topic or broker.",
				    defs };

static int g_argc;
static char **g_argv;

/* Kafka's failure report: the command line, then the reason. Exits 1. */
static void __attribute__((noreturn, format(printf, 1, 2))) config_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "Error while executing config command with args '");
	for (int i = 1; i < g_argc; i++)
		fprintf(stderr, "%s%s", i > 1 ? " " : "", g_argv[i]);
	fprintf(stderr, "'\n");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

struct target {
	rd_kafka_ResourceType_t type;
	const char *type_name; /* "topics" or "brokers" */
	const char *name;      /* NULL: every entity; "" broker default */
	rd_kafka_ConfigSource_t dynamic_source;
	bool quota;      /* clients or users: client quotas (lib/quotas.h) */
	bool is_default; /* --entity-default of clients or users */
};

static void resolve_target(const struct opts *o, struct target *t)
{
	const char *type = opt_str(o, "entity-type", NULL);
	const char *name = opt_str(o, "entity-name", NULL);

	if (opt_has(o, "topic")) {
		if (type || name)
			opt_usage_error(o, "--topic cannot be combined with --entity-type/--entity-name");
		type = "topics";
		name = opt_str(o, "topic", NULL);
	}
	if (opt_has(o, "broker")) {
		if (type || name || opt_has(o, "topic"))
			opt_usage_error(o, "--broker cannot be combined with --entity-type/--entity-name/--topic");
		type = "brokers";
		name = opt_str(o, "broker", NULL);
	}
	if (!type)
		opt_usage_error(o, "Must specify --entity-type (or --topic/--broker)");
	if (!strcmp(type, "topics")) {
		t->type = RD_KAFKA_RESOURCE_TOPIC;
		t->dynamic_source = RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
	} else if (!strcmp(type, "brokers")) {
		t->type = RD_KAFKA_RESOURCE_BROKER;
		t->dynamic_source = RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG;
	} else if (quotas_entity_type(type)) {
		t->type = RD_KAFKA_RESOURCE_UNKNOWN;
	} else {
		opt_usage_error(
			o, "Invalid entity type %s, the entity type must be one of topics, clients, users, brokers",
			type);
	}
	t->type_name = type;
	t->quota = false;
	if (t->type == RD_KAFKA_RESOURCE_UNKNOWN) {
		t->quota = true;
		t->is_default = opt_has(o, "entity-default");
		if (t->is_default && name)
			opt_usage_error(o, "--entity-default cannot be combined with --entity-name");
		t->name = name;
		return;
	}
	if (opt_has(o, "entity-default")) {
		if (t->type != RD_KAFKA_RESOURCE_BROKER || name)
			opt_usage_error(
				o, "--entity-default is only valid with --entity-type brokers and no --entity-name");
		config_fail("--entity-default is not supported: librdkafka 2.0.2 cannot address the "
			    "cluster-wide default broker resource");
	}
	if (t->type == RD_KAFKA_RESOURCE_BROKER && name && *name) {
		char *end;

		strtol(name, &end, 10);
		if (end == name || *end)
			config_fail("The entity name for brokers must be a valid integer broker id, "
				    "found: %s",
				    name);
	}
	t->name = name;
}

static void describe_entity(rd_kafka_t *rk, const struct target *t, const char *name, bool all)
{
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t *res = admin_describe_config(rk, t->type, name, &ev);
	rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(res);
	const rd_kafka_ConfigEntry_t **ents;
	size_t n;

	if (err)
		config_fail("%s (%s)", rd_kafka_ConfigResource_error_string(res), kafka_err_name(err));
	if (!*name)
		printf("Default configs for %s in the cluster are:\n", t->type_name);
	else
		printf("%s configs for %.*s %s are:\n", all ? "All" : "Dynamic", (int)strlen(t->type_name) - 1,
		       t->type_name, name);
	ents = rd_kafka_ConfigResource_configs(res, &n);
	for (size_t i = 0; i < n; i++) {
		const rd_kafka_ConfigEntry_t **syn;
		const char *v = rd_kafka_ConfigEntry_value(ents[i]);
		size_t sn;

		if (!all && rd_kafka_ConfigEntry_source(ents[i]) != t->dynamic_source)
			continue;
		printf("  %s=%s sensitive=%s synonyms={", rd_kafka_ConfigEntry_name(ents[i]), v ? v : "null",
		       rd_kafka_ConfigEntry_is_sensitive(ents[i]) ? "true" : "false");
		syn = rd_kafka_ConfigEntry_synonyms(ents[i], &sn);
		for (size_t j = 0; j < sn; j++) {
			const char *sv = rd_kafka_ConfigEntry_value(syn[j]);

			printf("%s%s:%s=%s", j ? ", " : "",
			       rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(syn[j])),
			       rd_kafka_ConfigEntry_name(syn[j]), sv ? sv : "null");
		}
		printf("}\n");
	}
	rd_kafka_event_destroy(ev);
}

static void describe(rd_kafka_t *rk, const struct opts *o, const struct target *t)
{
	bool all = opt_has(o, "all");
	char **names;
	int n;

	if (t->name) {
		describe_entity(rk, t, t->name, all);
		return;
	}
	if (t->type == RD_KAFKA_RESOURCE_TOPIC) {
		n = admin_list_topics(rk, &names);
		for (int i = 0; i < n; i++)
			describe_entity(rk, t, names[i], all);
		admin_names_free(names, n);
		return;
	}
	{
		const struct rd_kafka_metadata *md;
		rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, NULL, &md, kafka_timeout_ms());
		char id[16];

		if (err)
			config_fail("%s (%s)", rd_kafka_err2str(err), kafka_err_name(err));
		for (int i = 0; i < md->broker_cnt; i++) {
			snprintf(id, sizeof(id), "%d", md->brokers[i].id);
			describe_entity(rk, t, id, all);
		}
		rd_kafka_metadata_destroy(md);
		/* Kafka ends with "Default configs for brokers in the cluster";
		 * librdkafka 2.0.2 cannot address the default (empty) broker
		 * resource, so that section is left out. */
	}
}

/* A growable list of key=value pairs (heap strings). */
struct kvs {
	int n, cap;
	char **k, **v; /* v[i] NULL: sensitive value not returned */
};

static void kvs_put(struct kvs *s, const char *k, size_t klen, const char *v, size_t vlen)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strlen(s->k[i]) == klen && !strncmp(s->k[i], k, klen))
			break;
	if (i == s->n) {
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 16;
			s->k = realloc(s->k, (size_t)s->cap * sizeof(*s->k));
			s->v = realloc(s->v, (size_t)s->cap * sizeof(*s->v));
			if (!s->k || !s->v)
				kafka_die("out of memory");
		}
		s->k[s->n++] = strndup(k, klen);
	} else {
		free(s->v[i]);
		s->v[i] = NULL;
	}
	s->v[i] = v ? strndup(v, vlen) : NULL;
}

static int kvs_find(const struct kvs *s, const char *k)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->k[i], k))
			return i;
	return -1;
}

static void kvs_release(struct kvs *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->k[i]);
		s->k[i] = NULL;
		free(s->v[i]);
		s->v[i] = NULL;
	}
	free(s->k);
	s->k = NULL;
	free(s->v);
	s->v = NULL;
}

/* Kafka's --add-config syntax: k=v pairs split on commas outside [...];
 * brackets are dropped from the value. */
static void parse_add_config(const char *s, struct kvs *out)
{
	while (*s) {
		const char *p = s, *eq = NULL;
		char val[4096];
		size_t vl = 0;
		int depth = 0;

		for (; *p && (depth > 0 || *p != ','); p++) {
			if (*p == '=' && !eq && depth == 0) {
				eq = p;
				continue;
			}
			if (*p == '[') {
				depth++;
				continue;
			}
			if (*p == ']') {
				depth--;
				continue;
			}
			if (eq && vl + 1 < sizeof(val))
				val[vl++] = *p;
		}
		if (!eq || eq == s)
			config_fail("Invalid entity config: all configs to be added must be in the "
				    "format \"key=val\".");
		kvs_put(out, s, (size_t)(eq - s), val, vl);
		s = *p ? p + 1 : p;
	}
}

static void alter(rd_kafka_t *rk, const struct opts *o, const struct target *t)
{
	struct kvs cur = { 0 }, add = { 0 };
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t *res;
	const rd_kafka_ConfigEntry_t **ents;
	rd_kafka_ConfigResource_t *nr;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q;
	char bad[1024] = "";
	size_t n;

	if (!t->name)
		opt_usage_error(o, "An entity name must be specified with --alter");
	if (!opt_has(o, "add-config") && !opt_has(o, "delete-config"))
		opt_usage_error(o, "At least one of --add-config or --delete-config must be specified with --alter");
	if (opt_has(o, "add-config"))
		parse_add_config(opt_str(o, "add-config", NULL), &add);

	/* Read the current dynamic set. */
	res = admin_describe_config(rk, t->type, t->name, &ev);
	if (rd_kafka_ConfigResource_error(res))
		config_fail("%s (%s)", rd_kafka_ConfigResource_error_string(res),
			    kafka_err_name(rd_kafka_ConfigResource_error(res)));
	ents = rd_kafka_ConfigResource_configs(res, &n);
	for (size_t i = 0; i < n; i++) {
		const char *k = rd_kafka_ConfigEntry_name(ents[i]);
		const char *v = rd_kafka_ConfigEntry_value(ents[i]);

		if (rd_kafka_ConfigEntry_source(ents[i]) == t->dynamic_source)
			kvs_put(&cur, k, strlen(k), v, v ? strlen(v) : 0);
	}
	rd_kafka_event_destroy(ev);

	/* Apply deletes (each must exist, Kafka's rule), then adds. */
	for (int i = 0; i < opt_count(o, "delete-config"); i++) {
		char *list = strdup(opt_nth(o, "delete-config", i)), *save = NULL;

		for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
			int j;

			while (*k == ' ')
				k++;
			j = kvs_find(&cur, k);
			if (j < 0) {
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s", *bad ? "," : "", k);
				continue;
			}
			free(cur.k[j]);
			cur.k[j] = cur.k[cur.n - 1];
			free(cur.v[j]);
			cur.v[j] = cur.v[cur.n - 1];
			cur.n--;
		}
		free(list);
		list = NULL;
	}
	if (*bad)
		config_fail("org.apache.kafka.common.errors.InvalidConfigurationException: Invalid "
			    "config(s): %s (INVALID_CONFIG)",
			    bad);
	for (int i = 0; i < add.n; i++)
		kvs_put(&cur, add.k[i], strlen(add.k[i]), add.v[i], strlen(add.v[i]));
	for (int i = 0; i < cur.n; i++)
		if (!cur.v[i])
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s", *bad ? ", " : "", cur.k[i]);
	if (*bad)
		config_fail("All sensitive config entries must be specified for --alter, missing "
			    "entries: Set(%s)",
			    bad);

	/* Write the whole set back. */
	nr = rd_kafka_ConfigResource_new(t->type, t->name);
	for (int i = 0; i < cur.n; i++)
		rd_kafka_ConfigResource_set_config(nr, cur.k[i], cur.v[i]);
	ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
	q = rd_kafka_queue_new(rk);
	rd_kafka_AlterConfigs(rk, &nr, 1, ao, q);
	ev = kafka_admin_wait(q);
	{
		const rd_kafka_ConfigResource_t **rr =
			rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(ev), &n);

		for (size_t i = 0; i < n; i++) {
			rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(rr[i]);

			if (err)
				config_fail("%s (%s)", rd_kafka_ConfigResource_error_string(rr[i]),
					    kafka_err_name(err));
		}
	}
	if (*t->name)
		printf("Completed updating config for %.*s %s.\n", (int)strlen(t->type_name) - 1, t->type_name,
		       t->name);
	else
		printf("Completed updating default config for %s in the cluster.\n", t->type_name);
	rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_ConfigResource_destroy(nr);
	kvs_release(&cur);
	kvs_release(&add);
}

/* Users: moves the SCRAM-SHA-* keys out of ops and alters those credentials; NULL or a message. */
static const char *alter_user_scram(rd_kafka_t *rk, const struct target *t, struct kvs *ops)
{
	struct kvs scram = { 0 };
	const char *err = NULL;

	for (int i = 0; i < ops->n;) {
		if (strcmp(t->type_name, "users") || !scram_is_key(ops->k[i])) {
			i++;
			continue;
		}
		kvs_put(&scram, ops->k[i], strlen(ops->k[i]), ops->v[i], ops->v[i] ? strlen(ops->v[i]) : 0);
		free(ops->k[i]);
		free(ops->v[i]);
		ops->k[i] = ops->k[--ops->n];
		ops->v[i] = ops->v[ops->n];
	}
	if (scram.n && !t->name)
		err = "SCRAM credentials can only be altered for a named user (--entity-name)";
	else if (scram.n)
		err = scram_alter(rk, t->name, scram.k, scram.v, scram.n);
	kvs_release(&scram);
	return err;
}

/* --alter of clients or users: --add-config values set, --delete-config keys removed, in one request. */
static void alter_quota(rd_kafka_t *rk, const struct opts *o, const struct target *t)
{
	struct kvs ops = { 0 };
	const char *err;

	if (!t->name && !t->is_default)
		opt_usage_error(o, "An entity name or --entity-default must be specified with --alter");
	if (!opt_has(o, "add-config") && !opt_has(o, "delete-config"))
		opt_usage_error(o, "At least one of --add-config or --delete-config must be specified with --alter");
	if (opt_has(o, "add-config"))
		parse_add_config(opt_str(o, "add-config", NULL), &ops);
	for (int i = 0; i < opt_count(o, "delete-config"); i++) {
		char *list = strdup(opt_nth(o, "delete-config", i)), *save = NULL;

		for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
			while (*k == ' ')
				k++;
			kvs_put(&ops, k, strlen(k), NULL, 0);
		}
		free(list);
	}
	err = alter_user_scram(rk, t, &ops);
	if (!err && ops.n)
		err = quotas_alter(rk, t->type_name, t->name, ops.k, ops.v, ops.n);
	if (err)
		config_fail("%s", err);
	if (t->name)
		printf("Completed updating config for %.*s %s.\n", (int)strlen(t->type_name) - 1, t->type_name,
		       t->name);
	else
		printf("Completed updating default config for %s in the cluster.\n", t->type_name);
	kvs_release(&ops);
}

static void run_quota(rd_kafka_t *rk, const struct opts *o, const struct target *t)
{
	const char *err;

	if (opt_has(o, "alter")) {
		alter_quota(rk, o, t);
		return;
	}
	err = quotas_describe(rk, t->type_name, t->name, !t->name && !t->is_default);
	if (!err && !strcmp(t->type_name, "users") && !t->is_default)
		err = scram_describe(rk, t->name);
	if (err)
		config_fail("%s", err);
}

int main(int argc, char **argv)
{
	struct opts *o = opts_parse(&cmd, argc, argv);
	struct target t = { 0 };
	rd_kafka_t *rk;

	g_argc = argc;
	g_argv = argv;
	opt_require(o, "bootstrap-server");
	if (opt_has(o, "describe") == opt_has(o, "alter"))
		opt_usage_error(o, "Command must include exactly one action: --describe, --alter");
	if (opt_has(o, "describe") && (opt_has(o, "add-config") || opt_has(o, "delete-config")))
		opt_usage_error(o, "--add-config and --delete-config are only valid with --alter");
	if (opt_has(o, "all") && !opt_has(o, "describe"))
		opt_usage_error(o, "Option \"[all]\" can't be used with option \"[alter]\"");
	resolve_target(o, &t);
	rk = kafka_admin_connect(o);
	if (t.quota)
		run_quota(rk, o, &t);
	else if (opt_has(o, "describe"))
		describe(rk, o, &t);
	else
		alter(rk, o, &t);
	rd_kafka_destroy(rk);
	opts_free(o);
	return 0;
}
