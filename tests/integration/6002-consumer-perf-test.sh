#!/bin/bash
# gregor-consumer-perf-test against a real broker: Kafka's flags, the header
# and data row (10 fields, same meaning as Kafka's), detailed stats, the
# timeout warning, usage errors (exit 2) and an unreachable broker (exit 1).
# Output shapes and counts only: no throughput figure is asserted.
. "$(dirname "$0")/../lib/broker.sh"

PRODUCER="$REPO_ROOT/$BUILD/bin/gregor-producer-perf-test"
tool_init gregor-consumer-perf-test
[ -x "$PRODUCER" ] || fail "$PRODUCER missing"

HEADER="start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
DETAIL_HEADER="time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
TS='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}:[0-9]{3}'
F='-?[0-9]+\.[0-9]{4}'
ROW_RE="^$TS, $TS, $F, $F, [0-9]+, $F, [0-9]+, -?[0-9]+, $F, $F$"
DETAIL_RE="^$TS, 0, $F, $F, [0-9]+, $F, [0-9]+, -?[0-9]+, $F, $F$"

# field N of the last line of $OUT/o (1-based, comma separated, trimmed)
field() { tail -n 1 "$OUT/o" | awk -F', ' -v n="$1" '{print $n}'; }
ms_of() { date -d "$(echo "$1" | sed 's/:\([0-9]*\)$/.\1/')" +%s%3N; }

# ---- without a broker ----------------------------------------------------
tool_run --help
expect_eq "$RC" 0 "--help exit status"
for flag in --bootstrap-server --broker-list --topic --messages --group --consumer.config --fetch-size \
	--timeout --show-detailed-stats --reporting-interval --hide-header --from-latest; do
	grep -q -- "$flag" "$OUT/o" || fail "--help does not list $flag"
done
BS="--bootstrap-server 127.0.0.1:1"
usage_error "no arguments"
usage_error "unknown flag" $BS --topic t --messages 1 --bogus
usage_error "missing --messages" $BS --topic t
usage_error "missing --topic" $BS --messages 1
usage_error "missing --bootstrap-server" --topic t --messages 1
usage_error "non-numeric --messages" $BS --topic t --messages lots
usage_error "negative --messages" $BS --topic t --messages -1
usage_error "zero --reporting-interval" $BS --topic t --messages 1 --reporting-interval 0
usage_error "non-numeric --timeout" $BS --topic t --messages 1 --timeout soon
usage_error "zero --fetch-size" $BS --topic t --messages 1 --fetch-size 0
usage_error "flag with a value" $BS --topic t --messages 1 --hide-header=yes
printf 'no.such.property=1\n' >"$OUT/bad.properties"
tool_run $BS --topic t --messages 1 --consumer.config "$OUT/bad.properties"
expect_eq "$RC" 2 "exit status for an unknown property in --consumer.config"
grep -q 'no.such.property' "$OUT/e" || fail "bad property not named: $(cat "$OUT/e")"

CLOSED=$(free_port)
tool_run --bootstrap-server "127.0.0.1:$CLOSED" --topic t --messages 10 --timeout 1500
expect_eq "$RC" 1 "exit status with no broker"
grep -q "cannot reach a broker at 127.0.0.1:$CLOSED within 1500 ms" "$OUT/e" ||
	fail "no clear error for an unreachable broker: $(cat "$OUT/e")"

# ---- against the broker --------------------------------------------------
broker_start --override num.partitions=3
timeout 60 "$PRODUCER" --topic c1 --num-records 5000 --record-size 100 --throughput -1 \
	--producer-props "bootstrap.servers=$BROKER_ADDR" acks=all >/dev/null || fail "producing c1 failed"

tool_run --bootstrap-server "$BROKER_ADDR" --topic c1 --messages 5000
expect_eq "$RC" 0 "exit status ($(cat "$OUT/e"))"
expect_eq "$(wc -l <"$OUT/o")" 2 "lines of output: $(cat "$OUT/o")"
expect_eq "$(head -n 1 "$OUT/o")" "$HEADER" "header"
tail -n 1 "$OUT/o" | grep -Eq "$ROW_RE" || fail "data row shape: $(tail -n 1 "$OUT/o")"
expect_eq "$(field 5)" 5000 "data.consumed.in.nMsg"
expect_eq "$(field 3)" "$(awk 'BEGIN { printf "%.4f", 5000 * 100 / 1048576 }')" "data.consumed.in.MB"
start=$(ms_of "$(field 1)")
end=$(ms_of "$(field 2)")
expect_eq "$(field 8)" $((end - start - $(field 7))) "fetch.time.ms = end - start - rebalance.time.ms"

# --broker-list (old name), --hide-header, --group, --fetch-size, --consumer.config.
printf 'fetch.wait.max.ms=100\n' >"$OUT/c.properties"
tool_run --broker-list "$BROKER_ADDR" --topic c1 --messages 5000 --hide-header --group g6002 --fetch-size 65536 \
	--consumer.config "$OUT/c.properties"
expect_eq "$RC" 0 "exit status with --broker-list ($(cat "$OUT/e"))"
expect_eq "$(wc -l <"$OUT/o")" 1 "lines with --hide-header"
tail -n 1 "$OUT/o" | grep -Eq "$ROW_RE" || fail "data row shape: $(cat "$OUT/o")"
expect_eq "$(field 5)" 5000 "nMsg with --broker-list"

# Fewer records than --messages: Kafka's WARNING line after --timeout, exit 0.
tool_run --bootstrap-server "$BROKER_ADDR" --topic c1 --messages 6000 --timeout 1000 --hide-header
expect_eq "$RC" 0 "exit status on timeout"
grep -q '^WARNING: Exiting before consuming the expected number of messages: timeout (1000 ms) exceeded.' \
	"$OUT/o" || fail "no timeout warning: $(cat "$OUT/o")"
expect_eq "$(field 5)" 5000 "nMsg after timeout"

# --from-latest: nothing new arrives, so nothing is read.
tool_run --bootstrap-server "$BROKER_ADDR" --topic c1 --messages 1 --timeout 1000 --from-latest --hide-header
expect_eq "$RC" 0 "exit status with --from-latest"
expect_eq "$(field 5)" 0 "nMsg with --from-latest"

# --show-detailed-stats: other header, rows of "time, 0, ...", no summary row.
timeout 60 "$PRODUCER" --topic c2 --num-records 50000 --record-size 100 --throughput -1 \
	--producer-props "bootstrap.servers=$BROKER_ADDR" >/dev/null || fail "producing c2 failed"
tool_run --bootstrap-server "$BROKER_ADDR" --topic c2 --messages 50000 --show-detailed-stats --reporting-interval 1
expect_eq "$RC" 0 "exit status with --show-detailed-stats"
expect_eq "$(head -n 1 "$OUT/o")" "$DETAIL_HEADER" "detailed header"
tail -n +2 "$OUT/o" | grep -Evq "$DETAIL_RE" && fail "detailed rows: $(cat "$OUT/o")"
[ "$(wc -l <"$OUT/o")" -ge 2 ] || fail "no detailed rows: $(cat "$OUT/o")"

# --assign (Gregor extension) reads all partitions without a group.
tool_run --bootstrap-server "$BROKER_ADDR" --topic c1 --messages 5000 --assign --hide-header
expect_eq "$RC" 0 "exit status with --assign"
expect_eq "$(field 5)" 5000 "nMsg with --assign"

broker_alive || fail "broker died"
it_pass
