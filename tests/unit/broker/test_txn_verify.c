/* test_txn_verify.c - the producer's answer for each verdict of a transaction coordinator (KIP-890 part 1). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "broker/txn_verify.h"
#include "proto/kerr.h"

/* Kafka's mapping (AddPartitionsToTxnManager, ReplicaManager): what a producer can handle. */
static void test_kerr_mapping(void **state)
{
	static const int16_t map[][2] = {
		{ KERR_NONE, KERR_NONE },
		{ KERR_INVALID_TXN_STATE, KERR_INVALID_TXN_STATE },
		{ KERR_INVALID_PRODUCER_ID_MAPPING, KERR_INVALID_PRODUCER_ID_MAPPING },
		{ KERR_PRODUCER_FENCED, KERR_INVALID_PRODUCER_EPOCH },
		{ KERR_INVALID_PRODUCER_EPOCH, KERR_INVALID_PRODUCER_EPOCH },
		{ KERR_CLUSTER_AUTHORIZATION_FAILED, KERR_INVALID_TXN_STATE },
		{ KERR_CONCURRENT_TRANSACTIONS, KERR_NOT_ENOUGH_REPLICAS },
		{ KERR_COORDINATOR_NOT_AVAILABLE, KERR_NOT_ENOUGH_REPLICAS },
		{ KERR_COORDINATOR_LOAD_IN_PROGRESS, KERR_NOT_ENOUGH_REPLICAS },
		{ KERR_NOT_COORDINATOR, KERR_NOT_ENOUGH_REPLICAS },
		{ KERR_NETWORK_EXCEPTION, KERR_NOT_ENOUGH_REPLICAS },
		{ KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		assert_int_equal(txn_verify_kerr(map[i][0]), map[i][1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kerr_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
