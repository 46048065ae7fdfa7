#!/bin/bash
# Tool error paths: bad or missing flags exit 2 with usage on stderr;
# --help/--version exit 0; an unknown topic exits 1 with Kafka's error; an
# unreachable broker exits 1 with a clear message within the timeout.
. "$(dirname "$0")/../lib/broker.sh"

BIN="$REPO_ROOT/$BUILD/bin"
TOOLS="gregor-topics gregor-configs gregor-console-producer gregor-console-consumer"
out="$(mktemp)"
trap 'rm -f "$out"; _broker_on_exit' EXIT

for t in $TOOLS; do
	[ -x "$BIN/$t" ] || fail "$BIN/$t missing"
	"$BIN/$t" --help >"$out" 2>&1 || fail "$t --help exited $?"
	grep -q "^Usage: $t" "$out" || fail "$t --help: no usage"
	"$BIN/$t" --version >"$out" 2>&1 || fail "$t --version exited $?"
	grep -q "librdkafka" "$out" || fail "$t --version: $(cat "$out")"
	"$BIN/$t" --no-such-flag >"$out" 2>&1
	expect_eq "$?" 2 "$t --no-such-flag exit status"
	grep -q "no-such-flag is not a recognized option" "$out" || fail "$t: message: $(head -n 2 "$out")"
	grep -q "^Usage: $t" "$out" || fail "$t: no usage after a bad flag"
	"$BIN/$t" --bootstrap-server >"$out" 2>&1
	expect_eq "$?" 2 "$t --bootstrap-server without value"
	grep -q 'requires an argument' "$out" || fail "$t: message: $(head -n 1 "$out")"
done

"$BIN/gregor-topics" --bootstrap-server 127.0.0.1:1 --create --list >"$out" 2>&1
expect_eq "$?" 2 "two actions"
grep -q "exactly one action" "$out" || fail "two actions message"
"$BIN/gregor-topics" --bootstrap-server 127.0.0.1:1 --create >"$out" 2>&1
expect_eq "$?" 2 "create without --topic"
grep -q 'Missing required argument "\[topic\]"' "$out" || fail "missing topic message: $(head -n 1 "$out")"
"$BIN/gregor-topics" --bootstrap-server 127.0.0.1:1 --create --topic x --partitions two >"$out" 2>&1
expect_eq "$?" 2 "non-numeric --partitions"
"$BIN/gregor-topics" --bootstrap-server 127.0.0.1:1 --list --replication-factor 1 >"$out" 2>&1
expect_eq "$?" 2 "--replication-factor with --list"
"$BIN/gregor-console-consumer" --bootstrap-server 127.0.0.1:1 --topic t --offset 5 >"$out" 2>&1
expect_eq "$?" 2 "--offset without --partition"
"$BIN/gregor-console-consumer" --bootstrap-server 127.0.0.1:1 --topic t --partition 0 --group g >"$out" 2>&1
expect_eq "$?" 2 "--group with --partition"
"$BIN/gregor-console-producer" --bootstrap-server 127.0.0.1:1 >"$out" 2>&1
expect_eq "$?" 2 "producer without --topic"
"$BIN/gregor-configs" --bootstrap-server 127.0.0.1:1 --describe >"$out" 2>&1
expect_eq "$?" 2 "configs without an entity"

log "broker down: exit 1 within the timeout"
port=$(free_port)
props="$(mktemp)"
echo "default.api.timeout.ms=2000" >"$props"
for cmd in "gregor-topics --list --command-config $props" \
	"gregor-configs --topic t --describe --command-config $props" \
	"gregor-console-consumer --topic t --consumer.config $props" \
	"gregor-console-producer --topic t --producer.config $props"; do
	t0=$(date +%s)
	# shellcheck disable=SC2086
	timeout 20 "$BIN"/$cmd --bootstrap-server "127.0.0.1:$port" </dev/null >"$out" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	expect_eq "$rc" 1 "exit status of '$cmd' with no broker"
	grep -q "cannot reach a broker at 127.0.0.1:$port within 2000 ms" "$out" || fail "'$cmd' message: $(cat "$out")"
	[ $dt -le 6 ] || fail "'$cmd' took ${dt}s with a 2s timeout"
done
rm -f "$props"

log "unknown topic"
broker_start --override auto.create.topics.enable=false
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --describe --topic nope >"$out" 2>&1
expect_eq "$?" 1 "describe unknown topic"
grep -q "Topic 'nope' does not exist as expected" "$out" || fail "describe unknown: $(cat "$out")"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --describe --topic nope --if-exists >"$out" 2>&1 ||
	fail "describe --if-exists of an unknown topic exited $?"
"$BIN/gregor-topics" --bootstrap-server "$BROKER_ADDR" --delete --topic nope >"$out" 2>&1
expect_eq "$?" 1 "delete unknown topic"
"$BIN/gregor-console-consumer" --bootstrap-server "$BROKER_ADDR" --topic nope --from-beginning --timeout-ms 2000 >"$out" 2>&1
expect_eq "$?" 1 "consume unknown topic"
grep -q "UNKNOWN_TOPIC_OR_PARTITION" "$out" || fail "consumer unknown topic: $(cat "$out")"
"$BIN/gregor-configs" --bootstrap-server "$BROKER_ADDR" --topic nope --describe >"$out" 2>&1
expect_eq "$?" 1 "configs of unknown topic"
grep -q "UNKNOWN_TOPIC_OR_PARTITION" "$out" || fail "configs unknown topic: $(cat "$out")"
echo "x" | timeout 60 "$BIN/gregor-console-producer" --bootstrap-server "$BROKER_ADDR" --topic nope \
	--producer-property message.timeout.ms=5000 >"$out" 2>&1
expect_eq "$?" 1 "produce to unknown topic"
grep -q "UNKNOWN_TOPIC_OR_PARTITION\|_UNKNOWN_TOPIC\|_MSG_TIMED_OUT" "$out" || fail "producer unknown topic: $(cat "$out")"
cat "$out"

broker_stop
it_pass
