#!/bin/bash
# Go sarama 1.22 (Debian) against the broker, at the protocol versions its
# Version setting selects (tests/go/sarama-client/main.go does the checks):
#   default (0.8.2.0)  Produce v0 (message format 0), Fetch v0, ListOffsets v0,
#                      Metadata v0, OffsetCommit v1 / OffsetFetch v1 /
#                      FindCoordinator v0: sync + async producers, partition
#                      consumer, GetOffset oldest/newest, OffsetManager
#                      commit + fetch; none, gzip, snappy
# (sarama refuses its consumer group below 0.10.2.0 and ClusterAdmin's
# CreateTopics below 0.10.1.0 itself, without asking the broker)
#   0.10.0.0           Produce v2 (format 1), Fetch v2; none, gzip, snappy, lz4
#   0.10.2.0           the lowest Version sarama allows for its consumer group
#                      and ClusterAdmin: + consumer group (JoinGroup v1,
#                      OffsetCommit v2), CreateTopics/DeleteTopics v0
#   max (2.2.0)        Produce v3 (batches v2), Fetch v4, idempotent producer,
#                      consumer group, ClusterAdmin; none, gzip, snappy, lz4
# and zstd at default and max Version: sarama 1.22 sends it with Produce v0 /
# v3, below v7, which Kafka refuses with UNSUPPORTED_COMPRESSION_TYPE.
# Every message must arrive exactly once and in order per partition.
. "$(dirname "$0")/../lib/broker.sh"

go_client sarama-client
client=$GO_CLIENT

broker_start --override auto.create.topics.enable=true --override num.partitions=3 --override group.initial.rebalance.delay.ms=0

run() { # run VERSION CODEC [flags...]
	local v=$1 c=$2
	shift 2
	log "sarama Version $v, codec $c $*"
	timeout 180 "$client" -bootstrap "$BROKER_ADDR" -version "$v" -codec "$c" -topic "sarama-$v-$c" "$@" ||
		fail "sarama-client -version $v -codec $c $* failed"
}

for c in none gzip snappy; do run default $c; done
for c in none gzip snappy lz4; do run 0.10.0.0 $c; done
for c in none gzip; do run 0.10.2.0 $c -group -admin; done
for c in none gzip snappy lz4; do run max $c -group -admin; done
run default zstd -want-produce-error "compression type"
run max zstd -want-produce-error "compression type"
broker_alive || fail "broker died"
it_pass
