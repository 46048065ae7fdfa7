#!/bin/bash
# The issue's seed commands with gregor-* names against a real broker:
# create a 2-partition topic, describe it, produce 100 keyed lines from
# stdin, consume them back from the beginning with keys printed, in order
# per partition; then --list, --alter --partitions, gregor-configs
# describe/alter and --delete.
. "$(dirname "$0")/../lib/broker.sh"

BIN="$REPO_ROOT/$BUILD/bin"
for t in gregor-topics gregor-configs gregor-console-producer gregor-console-consumer; do
	[ -x "$BIN/$t" ] || fail "$BIN/$t missing (make BUILD=$BUILD $BUILD/bin/$t)"
done
broker_start

out="$BROKER_DIR/out"
log "create"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --topic myTopic --create --replication-factor 1 --partitions 2 >"$out" ||
	fail "create exited $?: $(cat "$out")"
expect_eq "$(cat "$out")" "Created topic myTopic." "create output"

log "describe"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --topic myTopic --describe >"$out" || fail "describe exited $?"
cat "$out"
expect_eq "$(head -n 1 "$out")" "$(printf 'Topic: myTopic\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: ')" "describe header"
expect_eq "$(sed -n 2p "$out")" "$(printf '\tTopic: myTopic\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0')" "describe partition 0"
expect_eq "$(sed -n 3p "$out")" "$(printf '\tTopic: myTopic\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0')" "describe partition 1"

log "create again: TOPIC_ALREADY_EXISTS, exit 1; --if-not-exists: exit 0"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --topic myTopic --create --partitions 2 >"$out" 2>&1
expect_eq "$?" 1 "exit status of a second create"
grep -q "TOPIC_ALREADY_EXISTS" "$out" || fail "no TOPIC_ALREADY_EXISTS in: $(cat "$out")"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --topic myTopic --create --partitions 2 --if-not-exists ||
	fail "--if-not-exists exited $?"

log "produce 100 keyed lines"
in="$BROKER_DIR/in.txt"
for i in $(seq 0 99); do echo "key$((i % 10)):value-$i"; done >"$in"
"$BIN/gregor-console-producer" --broker-list "$BROKER_ADDR" --topic myTopic \
	--property parse.key=true --property key.separator=: <"$in" >"$out" 2>&1 ||
	fail "producer exited $?: $(cat "$out")"
[ -s "$out" ] && fail "producer printed something without a terminal (no prompt expected): $(cat "$out")"

log "consume from the beginning"
got="$BROKER_DIR/got.txt"
err="$BROKER_DIR/err.txt"
timeout 60 "$BIN/gregor-console-consumer" --bootstrap-server "$BROKER_ADDR" --topic myTopic --from-beginning \
	--property print.key=true --property key.separator=: --property print.partition=true \
	--max-messages 100 >"$got" 2>"$err" || fail "consumer exited $?: $(cat "$err")"
expect_eq "$(wc -l <"$got")" 100 "consumed lines"
expect_eq "$(cat "$err")" "Processed a total of 100 messages" "consumer stderr"
# Lines are "Partition:P" ":" "key" ":" "value" (the formatter's own
# "Partition:" plus key.separator). Same multiset as produced, a key
# always on one partition, and per partition values in produced order.
"$PYTHON" - "$in" "$got" <<'PY' || fail "consumed data check failed"
import sys
produced = [l.rstrip("\n") for l in open(sys.argv[1])]
got = []
for l in open(sys.argv[2]):
    tag, p, kv = l.rstrip("\n").split(":", 2)
    assert tag == "Partition", l
    got.append((p, kv))
assert sorted(kv for _, kv in got) == sorted(produced), "different records"
part_of = {}
per_part = {}
for p, kv in got:
    k = kv.split(":", 1)[0]
    assert part_of.setdefault(k, p) == p, "key %s on two partitions" % k
    per_part.setdefault(p, []).append(kv)
assert len(per_part) == 2, "expected records on both partitions, got %s" % list(per_part)
for p, kvs in per_part.items():
    want = [kv for kv in produced if part_of[kv.split(":", 1)[0]] == p]
    assert kvs == want, "partition %s out of order" % p
print("ok: %d records, order kept on %d partitions" % (len(got), len(per_part)))
PY

log "--partition/--offset and the formatter fields"
"$BIN/gregor-console-consumer" --bootstrap-server "$BROKER_ADDR" --topic myTopic --partition 0 --offset 0 \
	--max-messages 1 --property print.offset=true --property print.timestamp=true --property print.headers=true \
	>"$got" 2>/dev/null || fail "consumer --partition exited $?"
grep -Eq $'^CreateTime:[0-9]+\tOffset:0\tNO_HEADERS\tvalue-[0-9]+$' "$got" || fail "formatter line: $(cat "$got")"

log "--timeout-ms ends an idle consumer"
"$BIN/gregor-console-consumer" --bootstrap-server "$BROKER_ADDR" --topic myTopic --timeout-ms 1500 >"$got" 2>"$err" ||
	fail "consumer --timeout-ms exited $?"
grep -q "Processed a total of 0 messages" "$err" || fail "timeout stderr: $(cat "$err")"

log "list, alter, configs"
expect_eq "$("$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --list --exclude-internal)" "myTopic" "list"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --alter --topic myTopic --partitions 3 || fail "alter exited $?"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --describe --topic 'my.*' | head -n 1 | grep -q "PartitionCount: 3" ||
	fail "partition count after alter"
expect_eq "$("$BIN/gregor-configs" --bootstrap-server "$BROKER_ADDR" --entity-type topics --entity-name myTopic --alter \
	--add-config retention.ms=86400000,segment.bytes=1048576)" "Completed updating config for topic myTopic." "configs --alter"
"$BIN/gregor-configs" --bootstrap-server "$BROKER_ADDR" --entity-type topics --entity-name myTopic --alter \
	--delete-config segment.bytes >/dev/null || fail "configs --delete-config exited $?"
"$BIN/gregor-configs" --bootstrap-server "$BROKER_ADDR" --entity-type topics --entity-name myTopic --describe >"$out" ||
	fail "configs --describe exited $?"
cat "$out"
expect_eq "$(head -n 1 "$out")" "Dynamic configs for topic myTopic are:" "configs describe header"
grep -q "^  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000" "$out" ||
	fail "retention.ms missing after incremental alter"
grep -q "segment.bytes" "$out" && fail "segment.bytes still there after --delete-config"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --describe --topic myTopic | head -n 1 | grep -q "Configs: retention.ms=86400000$" ||
	fail "topics --describe does not show the override"

log "delete"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --delete --topic myTopic || fail "delete exited $?"
expect_eq "$("$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --list --exclude-internal)" "" "list after delete"

broker_stop
it_pass
