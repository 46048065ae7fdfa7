#!/bin/bash
# Go segmentio/kafka-go 0.2 (Debian) against the broker: Writer (Produce v2,
# message format 1), partition Readers (Fetch v2) and a group Reader
# (GroupID) that resumes from its committed offsets, for each codec kafka-go
# has (tests/go/kafka-go-client/main.go does the checks: every message
# exactly once and in order per partition).
. "$(dirname "$0")/../lib/broker.sh"

go_client kafka-go-client
client=$GO_CLIENT

broker_start --override auto.create.topics.enable=true --override num.partitions=3 --override group.initial.rebalance.delay.ms=0 \
	--override group.min.session.timeout.ms=1000

for c in none gzip snappy lz4; do
	log "kafka-go, codec $c"
	timeout 180 "$client" -bootstrap "$BROKER_ADDR" -codec "$c" -topic "kafka-go-$c" || fail "kafka-go-client -codec $c failed"
done
broker_alive || fail "broker died"
it_pass
