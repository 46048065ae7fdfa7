#!/bin/bash
# gregor-transactions error paths (the house pattern of 8002): --help and
# --version exit 0; an unknown flag or command, a missing command, a flag of
# another command, a missing required flag and a bad number exit 2 with the
# reason and the usage on stderr, before anything is sent; an unreachable
# broker exits 1 within the timeout; against a broker, an unknown partition
# or transactional id exits 1 with Kafka's error name.
. "$(dirname "$0")/../lib/broker.sh"

T="$REPO_ROOT/$BUILD/bin/gregor-transactions"
out="$(mktemp)"
trap 'rm -f "$out"; _broker_on_exit' EXIT
[ -x "$T" ] || fail "$T missing"

"$T" --help >"$out" 2>&1 || fail "--help exited $?"
grep -q "^Usage: gregor-transactions \[OPTIONS\] COMMAND" "$out" || fail "--help: $(head -n 1 "$out")"
grep -q "^find-hanging " "$out" || fail "--help lists no commands"
"$T" --version >"$out" 2>&1 || fail "--version exited $?"
grep -q "librdkafka" "$out" || fail "--version: $(cat "$out")"

B="--bootstrap-server 127.0.0.1:1"
usage_says "no-such-flag is not a recognized option" $B list --no-such-flag
usage_says "invalid command \"frobnicate\"" $B frobnicate
usage_says "Unexpected argument \"describe\"" $B list describe
usage_says "Command must be one of" $B
usage_says 'Missing required argument "[bootstrap-server]"' list
usage_says 'requires an argument' list --bootstrap-server
usage_says 'Missing required argument "[transactional-id]"' $B describe
usage_says 'Option "--topic" is not valid with command describe' $B describe --transactional-id x --topic t
usage_says 'Option "--transactional-id" is not valid with command list' $B list --transactional-id x
usage_says 'Missing required argument "[partition]"' $B describe-producers --topic t
usage_says 'is not a number' $B describe-producers --topic t --partition zero
usage_says 'is not a number' $B describe-producers --topic t --partition -1
usage_says 'either with --start-offset' $B abort --topic t --partition 0
usage_says 'either with --start-offset' $B abort --topic t --partition 0 --start-offset 1 --producer-id 1
usage_says 'Missing required argument "[producer-epoch]"' $B abort --topic t --partition 0 --producer-id 1 --coordinator-epoch 0
usage_says 'Missing required argument "[coordinator-epoch]"' $B abort --topic t --partition 0 --producer-id 1 --producer-epoch 0
usage_says 'is not a number' $B abort --topic t --partition 0 --producer-id 1 --producer-epoch 40000 --coordinator-epoch 0
usage_says 'requires either --topic or --broker-id' $B find-hanging
usage_says 'The --partition argument requires --topic' $B find-hanging --broker-id 0 --partition 0
usage_says 'is not a number' $B find-hanging --broker-id 0 --max-transaction-timeout 1.5
usage_says 'is not a number' $B list --duration-filter soon

log "broker down: exit 1 within the timeout"
port=$(free_port)
props="$(mktemp)"
echo "default.api.timeout.ms=2000" >"$props"
t0=$(date +%s)
timeout 20 "$T" --bootstrap-server "127.0.0.1:$port" --command-config "$props" list >"$out" 2>&1
expect_eq "$?" 1 "list with no broker"
grep -q "cannot reach a broker at 127.0.0.1:$port within 2000 ms" "$out" || fail "no broker: $(cat "$out")"
[ $(($(date +%s) - t0)) -le 6 ] || fail "took longer than the 2 s timeout allows"
rm -f "$props"

log "errors from the broker"
broker_start --override auto.create.topics.enable=false
"$T" --bootstrap-server "$BROKER_ADDR" describe-producers --topic nope --partition 0 >"$out" 2>&1
expect_eq "$?" 1 "describe-producers of an unknown topic"
grep -qF "Failed to describe producers for partition nope-0 on leader: UNKNOWN_TOPIC_OR_PARTITION" "$out" ||
	fail "unknown topic: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" describe-producers --topic nope --partition 0 --broker-id 0 >"$out" 2>&1
expect_eq "$?" 1 "describe-producers of an unknown topic at broker 0"
grep -qF "Failed to describe producers for partition nope-0 on broker 0: UNKNOWN_TOPIC_OR_PARTITION" "$out" ||
	fail "unknown topic at broker 0: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" describe --transactional-id nope >"$out" 2>&1
expect_eq "$?" 1 "describe of an unknown id"
grep -qF 'transactional-id `nope`: TRANSACTIONAL_ID_NOT_FOUND' "$out" || fail "unknown id: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" abort --topic nope --partition 0 --producer-id 1 --producer-epoch 0 \
	--coordinator-epoch 0 >"$out" 2>&1
expect_eq "$?" 1 "abort on an unknown topic"
grep -qF "UNKNOWN_TOPIC_OR_PARTITION" "$out" || fail "abort unknown topic: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" find-hanging --topic nope >"$out" 2>&1
expect_eq "$?" 1 "find-hanging of an unknown topic"
grep -qF "UNKNOWN_TOPIC_OR_PARTITION" "$out" || fail "find-hanging unknown topic: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" list >"$out" 2>&1 || fail "list on an empty broker exited $?"
expect_eq "$(cat "$out")" "$(printf 'TransactionalId\tCoordinator\tProducerId\tTransactionState\t')" "empty list"

broker_stop
it_pass
