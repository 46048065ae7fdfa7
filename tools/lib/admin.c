/* admin.c - Admin API calls shared by gregor-topics and gregor-configs
 * (see admin.h). */
#include "admin.h"

#include <stdlib.h>
#include <string.h>

#include "kafka.h"

const rd_kafka_ConfigResource_t *admin_describe_config(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
						       rd_kafka_event_t **evp)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = kafka_admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(type, name);
	const rd_kafka_ConfigResource_t **out;
	size_t n;

	if (!res)
		kafka_die("cannot describe configs of \"%s\": librdkafka refuses that resource name", name);
	rd_kafka_DescribeConfigs(rk, &res, 1, ao, q);
	*evp = kafka_admin_wait(q);
	rd_kafka_ConfigResource_destroy(res);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	out = rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(*evp), &n);
	if (n != 1)
		kafka_die("DescribeConfigs for \"%s\" returned %zu resources, expected 1", name, n);
	return out[0];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int admin_list_topics(rd_kafka_t *rk, char ***names_out)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, kafka_timeout_ms());
	char **names;

	if (err)
		kafka_die("cannot list topics: %s (%s)", rd_kafka_err2str(err), kafka_err_name(err));
	names = calloc((size_t)md->topic_cnt + 1, sizeof(*names));
	if (!names)
		kafka_die("out of memory");
	for (int i = 0; i < md->topic_cnt; i++) {
		names[i] = strdup(md->topics[i].topic);
		if (!names[i])
			kafka_die("out of memory");
	}
	*names_out = names;
	qsort(names, (size_t)md->topic_cnt, sizeof(*names), cmp_str);
	err = md->topic_cnt;
	rd_kafka_metadata_destroy(md);
	return (int)err;
}

void admin_names_free(char **names, int n)
{
	for (int i = 0; i < n; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	free(names);
}

bool admin_topic_is_internal(const char *name)
{
	return !strcmp(name, "__consumer_offsets") || !strcmp(name, "__transaction_state");
}
