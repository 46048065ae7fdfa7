#!/bin/bash
# gregor-log-dirs error paths (the house pattern of 8002): --help and
# --version exit 0; an unknown flag, a missing --bootstrap-server or
# --describe, a flag without its value and a bad broker id exit 2 with the
# reason and the usage on stderr, before anything is sent; an unreachable
# broker exits 1 within the timeout with a clear message and prints no
# JSON; against a broker, an id not in the cluster exits 1 naming it, and
# an empty topic list filter still prints the directory.
. "$(dirname "$0")/../lib/broker.sh"

T="$REPO_ROOT/$BUILD/bin/gregor-log-dirs"
out="$(mktemp)"
trap 'rm -f "$out"; _broker_on_exit' EXIT
[ -x "$T" ] || fail "$T missing"

"$T" --help >"$out" 2>&1 || fail "--help exited $?"
grep -q "^Usage: gregor-log-dirs" "$out" || fail "--help: $(head -n 1 "$out")"
grep -q "^--topic-list" "$out" || fail "--help lists no --topic-list"
"$T" --version >"$out" 2>&1 || fail "--version exited $?"
grep -q "librdkafka" "$out" || fail "--version: $(cat "$out")"

B="--bootstrap-server 127.0.0.1:1"
usage_says "no-such-flag is not a recognized option" $B --describe --no-such-flag
usage_says 'Missing required argument "[bootstrap-server]"' --describe
usage_says 'Missing required argument "[describe]"' $B
usage_says 'requires an argument' $B --describe --topic-list
usage_says 'invalid broker id "x"' $B --describe --broker-list 0,x
usage_says 'invalid broker id "-1"' $B --describe --broker-list -1
usage_says 'Unexpected argument' $B --describe extra

log "broker down: exit 1 within the timeout"
port=$(free_port)
props="$(mktemp)"
echo "default.api.timeout.ms=2000" >"$props"
t0=$(date +%s)
timeout 20 "$T" --bootstrap-server "127.0.0.1:$port" --command-config "$props" --describe >"$out" 2>&1
expect_eq "$?" 1 "--describe with no broker"
grep -q "cannot reach a broker at 127.0.0.1:$port within 2000 ms" "$out" || fail "no broker: $(cat "$out")"
grep -q "{" "$out" && fail "JSON printed without a broker: $(cat "$out")"
[ $(($(date +%s) - t0)) -le 6 ] || fail "took longer than the 2 s timeout allows"
rm -f "$props"

log "against a broker"
broker_start
"$T" --bootstrap-server "$BROKER_ADDR" --describe --broker-list 0,7,9 >"$out" 2>&1
expect_eq "$?" 1 "--broker-list with brokers not in the cluster"
grep -qF "broker 7 from --broker-list is not in the cluster" "$out" || fail "unknown broker 7: $(cat "$out")"
grep -qF "broker 9 from --broker-list is not in the cluster" "$out" || fail "unknown broker 9: $(cat "$out")"
grep -q "Querying" "$out" && fail "queried despite unknown brokers: $(cat "$out")"
"$T" --bootstrap-server "$BROKER_ADDR" --describe --topic-list nope >"$out" 2>&1
expect_eq "$?" 0 "--topic-list of an unknown topic"
want="{\"brokers\":[{\"broker\":0,\"logDirs\":[{\"partitions\":[],\"error\":null,\"logDir\":\"$(realpath "$BROKER_DATA")\"}]}],\"version\":1}"
expect_eq "$(sed -n 3p "$out")" "$want" "JSON for an unknown topic"
it_pass
