#!/bin/bash
# gregor-console-consumer --isolation-level read_committed hides an aborted
# transaction. Needs transactions in the broker (InitProducerId, EndTxn,
# control batches, LSO); until they exist this test skips itself.
. "$(dirname "$0")/../lib/broker.sh"

echo "skipped: transactions are not implemented in the broker yet (issue 8 read_committed test)"
exit 77
