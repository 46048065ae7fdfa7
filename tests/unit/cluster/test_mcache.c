/* test_mcache.c - the broker's metadata cache (cluster/mcache.c): filled and replaced by UpdateMetadata, looked up by name. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cluster/mcache.h"

static int32_t ids1[] = { 1 }, ids2[] = { 2 };

/* One partition state: leader (or -1), epoch, replicas = [replica]. */
static struct UpdateMetadataPartitionState part(int32_t index, int32_t leader, int32_t epoch, int32_t *replica)
{
	struct UpdateMetadataPartitionState ps;

	UpdateMetadataPartitionState_init(&ps);
	ps.PartitionIndex = index;
	ps.Leader = leader;
	ps.LeaderEpoch = epoch;
	ps.Replicas = (struct int32_array){ replica, 1 };
	ps.Isr = (struct int32_array){ replica, leader < 0 ? 0 : 1 };
	ps.OfflineReplicas = (struct int32_array){ replica, leader < 0 ? 1 : 0 };
	return ps;
}

/* Topics given in any order are found by name; a partition missing from the request is a leaderless hole. */
static void test_update_and_lookup(void **state)
{
	struct UpdateMetadataPartitionState b[] = { part(0, 1, 0, ids1), part(2, -1, 1, ids2) };
	struct UpdateMetadataPartitionState a[] = { part(0, 2, 3, ids2) };
	struct UpdateMetadataTopicState topics[2];
	struct UpdateMetadataEndpoint ep;
	struct UpdateMetadataBroker br;
	struct UpdateMetadataRequest um;
	const struct mcache_part *p;
	struct mcache mc;

	(void)state;
	mcache_init(&mc);
	assert_int_equal(mc.controller_epoch, -1);
	UpdateMetadataRequest_init(&um);
	UpdateMetadataTopicState_init(&topics[0]);
	UpdateMetadataTopicState_init(&topics[1]);
	topics[0].TopicName = kstr_c("zeta");
	topics[0].PartitionStates = (struct UpdateMetadataPartitionState_array){ b, 2 };
	topics[1].TopicName = kstr_c("alpha");
	topics[1].PartitionStates = (struct UpdateMetadataPartitionState_array){ a, 1 };
	um.TopicStates = (struct UpdateMetadataTopicState_array){ topics, 2 };
	UpdateMetadataEndpoint_init(&ep);
	ep.Host = kstr_c("127.0.0.1");
	ep.Port = 9092;
	UpdateMetadataBroker_init(&br);
	br.Id = 1;
	br.Endpoints = (struct UpdateMetadataEndpoint_array){ &ep, 1 };
	um.LiveBrokers = (struct UpdateMetadataBroker_array){ &br, 1 };
	um.ControllerEpoch = 4;
	assert_int_equal(mcache_update(&mc, &um), 0);
	assert_true(mc.filled);
	assert_int_equal(mc.controller_epoch, 4);
	assert_int_equal(mc.nbrokers, 1);
	assert_string_equal(mc.brokers[0].host, "127.0.0.1");
	assert_int_equal(mc.brokers[0].port, 9092);
	assert_string_equal(mc.topics[0].name, "alpha"); /* sorted */
	p = mcache_part(&mc, "alpha", 5, 0);
	assert_non_null(p);
	assert_int_equal(p->leader, 2);
	assert_int_equal(p->leader_epoch, 3);
	assert_int_equal(mcache_topic(&mc, "zeta", 4)->nparts, 3);
	p = mcache_part(&mc, "zeta", 4, 1); /* the hole */
	assert_int_equal(p->leader, -1);
	assert_int_equal(p->replicas.n, 0);
	p = mcache_part(&mc, "zeta", 4, 2);
	assert_int_equal(p->leader, -1);
	assert_int_equal(p->offline.n, 1);
	assert_int_equal(p->offline.v[0], 2);
	assert_null(mcache_part(&mc, "zeta", 4, 3));
	assert_null(mcache_topic(&mc, "zet", 3));
	assert_null(mcache_topic(&mc, "alphabet", 8));
	assert_non_null(mcache_topic(&mc, "alphabet", 5)); /* by length, not NUL */

	um.TopicStates.n = 1; /* replaced whole: zeta gone */
	um.ControllerEpoch = 3;
	assert_int_equal(mcache_update(&mc, &um), 0);
	assert_null(mcache_topic(&mc, "alpha", 5));
	assert_non_null(mcache_topic(&mc, "zeta", 4));
	assert_int_equal(mc.controller_epoch, 4); /* never lowered */
	mcache_free(&mc);
	assert_int_equal(mc.ntopics, 0);
}

/* Every endpoint of a broker is kept with its listener name; the first is its default host and port. */
static void test_broker_endpoints(void **state)
{
	struct UpdateMetadataEndpoint ep[2];
	struct UpdateMetadataBroker br;
	struct UpdateMetadataRequest um;
	struct mcache mc;

	(void)state;
	mcache_init(&mc);
	UpdateMetadataRequest_init(&um);
	for (int i = 0; i < 2; i++) {
		UpdateMetadataEndpoint_init(&ep[i]);
		ep[i].Host = kstr_c("127.0.0.1");
		ep[i].Port = 9092 + i;
		ep[i].Listener = kstr_c(i ? "SSL" : "PLAINTEXT");
		ep[i].SecurityProtocol = (int16_t)i;
	}
	UpdateMetadataBroker_init(&br);
	br.Id = 2;
	br.Endpoints = (struct UpdateMetadataEndpoint_array){ ep, 2 };
	um.LiveBrokers = (struct UpdateMetadataBroker_array){ &br, 1 };
	assert_int_equal(mcache_update(&mc, &um), 0);
	assert_int_equal(mc.brokers[0].port, 9092);
	assert_int_equal(mc.brokers[0].nendpoints, 2);
	assert_string_equal(mc.brokers[0].endpoints[1].listener, "SSL");
	assert_string_equal(mc.brokers[0].endpoints[1].host, "127.0.0.1");
	assert_int_equal(mc.brokers[0].endpoints[1].port, 9093);
	mcache_free(&mc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_and_lookup),
		cmocka_unit_test(test_broker_endpoints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
