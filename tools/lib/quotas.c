/* quotas.c - client quotas over the wire for gregor-configs (quotas.h). */
#include "quotas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "wire.h"

static char quotas_err[1024];

const char *quotas_entity_type(const char *tool_type)
{
	if (!strcmp(tool_type, "clients"))
		return "client-id";
	if (!strcmp(tool_type, "users"))
		return "user";
	return NULL;
}

static struct kstr quotas_kstr(const char *s)
{
	return s ? (struct kstr){ s, (int32_t)strlen(s) } : KSTR_NULL;
}

/* The first broker librdkafka knows; every broker keeps the same quotas only on a single node. */
static struct wire *quotas_wire(rd_kafka_t *rk)
{
	const struct rd_kafka_metadata *md = wire_metadata(rk);
	int32_t node;

	if (md->broker_cnt < 1)
		kafka_die("no broker in the metadata");
	node = md->brokers[0].id;
	rd_kafka_metadata_destroy(md);
	return wire_open(rk, node);
}

static void quotas_print(const struct DescribeClientQuotasEntry *e)
{
	printf("Quota configs for ");
	for (int32_t i = 0; i < e->Entity.n; i++) {
		const struct DescribeClientQuotasEntity *c = &e->Entity.v[i];
		const char *what = kstr_eq_c(c->EntityType, "user") ? "user-principal" : "client-id";

		if (c->EntityName.len < 0)
			printf("%sthe default %s", i ? ", " : "", what);
		else
			printf("%s%s '%.*s'", i ? ", " : "", what, c->EntityName.len, c->EntityName.p);
	}
	printf(" are ");
	for (int32_t i = 0; i < e->Values.n; i++)
		printf("%s%.*s=%.1f", i ? ", " : "", e->Values.v[i].Key.len, e->Values.v[i].Key.p,
		       e->Values.v[i].Value);
	printf("\n");
}

const char *quotas_describe(rd_kafka_t *rk, const char *type, const char *name, bool all)
{
	struct wire *wc = quotas_wire(rk);
	struct DescribeClientQuotasComponent comp = { quotas_kstr(quotas_entity_type(type)),
						      all    ? 2
						      : name ? 0
							     : 1,
						      quotas_kstr(all ? NULL : name) };
	struct DescribeClientQuotasRequest req;
	struct DescribeClientQuotasResponse resp;
	const char *err = NULL;
	struct arena a;

	arena_init(&a, 0);
	DescribeClientQuotasRequest_init(&req);
	req.Components.v = &comp;
	req.Components.n = 1;
	req.Strict = true;
	wire_call(wc, API_DescribeClientQuotas, wire_version(wc, API_DescribeClientQuotas, 1), &req, &resp, &a);
	if (resp.ErrorCode) {
		snprintf(quotas_err, sizeof(quotas_err), "%.*s (%s)",
			 resp.ErrorMessage.len > 0 ? resp.ErrorMessage.len : 0,
			 resp.ErrorMessage.p ? resp.ErrorMessage.p : "", kafka_err_name(resp.ErrorCode));
		err = quotas_err;
	}
	for (int32_t i = 0; !err && i < resp.Entries.n; i++)
		quotas_print(&resp.Entries.v[i]);
	arena_release(&a);
	wire_close(wc);
	return err;
}

const char *quotas_alter(rd_kafka_t *rk, const char *type, const char *name, char **keys, char **vals, int n)
{
	struct AlterClientQuotasEntity ent = { quotas_kstr(quotas_entity_type(type)), quotas_kstr(name) };
	struct AlterClientQuotasOp *ops = calloc((size_t)n + 1, sizeof(*ops));
	struct AlterClientQuotasEntry entry;
	struct AlterClientQuotasRequest req;
	struct AlterClientQuotasResponse resp;
	const char *err = NULL;
	struct wire *wc;
	struct arena a;

	if (!ops)
		kafka_die("out of memory");
	for (int i = 0; i < n; i++) {
		char *end = NULL;

		ops[i].Key = quotas_kstr(keys[i]);
		ops[i].Remove = !vals[i];
		ops[i].Value = vals[i] ? strtod(vals[i], &end) : 0;
		if (vals[i] && (end == vals[i] || *end)) {
			snprintf(quotas_err, sizeof(quotas_err), "Invalid value '%s' for %s: not a number", vals[i],
				 keys[i]);
			free(ops);
			return quotas_err;
		}
	}
	wc = quotas_wire(rk);
	arena_init(&a, 0);
	entry = (struct AlterClientQuotasEntry){ { &ent, 1 }, { ops, n } };
	AlterClientQuotasRequest_init(&req);
	req.Entries.v = &entry;
	req.Entries.n = 1;
	wire_call(wc, API_AlterClientQuotas, wire_version(wc, API_AlterClientQuotas, 1), &req, &resp, &a);
	if (resp.Entries.n != 1) {
		snprintf(quotas_err, sizeof(quotas_err), "AlterClientQuotas answered %d entries for 1", resp.Entries.n);
		err = quotas_err;
	} else if (resp.Entries.v[0].ErrorCode) {
		const struct AlterClientQuotasEntryResult *r = &resp.Entries.v[0];

		snprintf(quotas_err, sizeof(quotas_err), "%.*s (%s)", r->ErrorMessage.len > 0 ? r->ErrorMessage.len : 0,
			 r->ErrorMessage.p ? r->ErrorMessage.p : "", kafka_err_name(r->ErrorCode));
		err = quotas_err;
	}
	arena_release(&a);
	wire_close(wc);
	free(ops);
	return err;
}
