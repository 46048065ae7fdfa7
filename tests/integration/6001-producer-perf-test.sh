#!/bin/bash
# gregor-producer-perf-test against a real broker: Kafka's flags, output
# shape, usage errors (exit 2), the idempotence config checks the Java
# client makes, and an unreachable broker (clear error, exit 1).
# Output shapes only: no throughput or latency figure is asserted.
. "$(dirname "$0")/../lib/broker.sh"

tool_init gregor-producer-perf-test

NUM='[0-9]+(\.[0-9]+)?'
FINAL_RE="^[0-9]+ records sent, $NUM records/sec \($NUM MB/sec\), $NUM ms avg latency, $NUM ms max latency, [0-9]+ ms 50th, [0-9]+ ms 95th, [0-9]+ ms 99th, [0-9]+ ms 99\.9th\.$"
WINDOW_RE="^[0-9]+ records sent, $NUM records/sec \($NUM MB/sec\), $NUM ms avg latency, $NUM ms max latency\.$"

# config_error WHAT NEEDLE ARGS... : exit 2, stderr names the setting, no usage needed
config_error() {
	local what=$1 needle=$2
	shift 2
	tool_run "$@"
	expect_eq "$RC" 2 "exit status for $what"
	grep -q -- "$needle" "$OUT/e" || fail "$what: stderr does not mention '$needle': $(cat "$OUT/e")"
}

count_records() { # topic -> number of records in it
	kcat -b "$BROKER_ADDR" -C -t "$1" -o beginning -e -q -f '%S\n' 2>/dev/null | wc -l
}

# ---- without a broker: help, version, usage errors ----------------------
tool_run --help
expect_eq "$RC" 0 "--help exit status"
for flag in --topic --num-records --record-size --payload-file --payload-delimiter --throughput \
	--producer-props --producer.config --transactional-id --transaction-duration-ms --print-metrics; do
	grep -q -- "$flag" "$OUT/o" || fail "--help does not list $flag"
done
tool_run --version
expect_eq "$RC" 0 "--version exit status"

P="--producer-props bootstrap.servers=127.0.0.1:1"
usage_error "no arguments"
usage_error "unknown flag" --topic t --num-records 1 --record-size 1 --throughput -1 $P --bogus
usage_error "missing --topic" --num-records 1 --record-size 1 --throughput -1 $P
usage_error "missing --num-records" --topic t --record-size 1 --throughput -1 $P
usage_error "missing --throughput" --topic t --num-records 1 --record-size 1 $P
usage_error "non-numeric --num-records" --topic t --num-records ten --record-size 1 --throughput -1 $P
usage_error "zero --num-records" --topic t --num-records 0 --record-size 1 --throughput -1 $P
usage_error "zero --record-size" --topic t --num-records 1 --record-size 0 --throughput -1 $P
usage_error "non-numeric --throughput" --topic t --num-records 1 --record-size 1 --throughput fast $P
usage_error "zero --throughput" --topic t --num-records 1 --record-size 1 --throughput 0 $P
usage_error "no payload option" --topic t --num-records 1 --throughput -1 $P
usage_error "two payload options" --topic t --num-records 1 --record-size 1 --payload-monotonic --throughput -1 $P
usage_error "no producer config" --topic t --num-records 1 --record-size 1 --throughput -1
usage_error "zero --transaction-duration-ms" --topic t --num-records 1 --record-size 1 --throughput -1 $P \
	--transaction-duration-ms 0
usage_error "--warmup-records >= --num-records" --topic t --num-records 5 --record-size 1 --throughput -1 $P \
	--warmup-records 5
usage_error "missing value" --topic t --num-records 1 --record-size 1 $P --throughput
config_error "property without =" "not of the form key=value" --topic t --num-records 1 --record-size 1 \
	--throughput -1 --producer-props bootstrap.servers=127.0.0.1:1 acks
config_error "unknown property" "no.such.property" --topic t --num-records 1 --record-size 1 \
	--throughput -1 --producer-props bootstrap.servers=127.0.0.1:1 no.such.property=1
printf 'bootstrap.servers=127.0.0.1:1\nbad line without separator\n' >"$OUT/bad.properties"
config_error "bad --producer.config" "bad.properties:2" --topic t --num-records 1 --record-size 1 \
	--throughput -1 --producer.config "$OUT/bad.properties"

# ---- unreachable broker: clear error within default.api.timeout.ms ------
CLOSED=$(free_port)
tool_run --topic t --num-records 10 --record-size 10 --throughput -1 \
	--producer-props "bootstrap.servers=127.0.0.1:$CLOSED" default.api.timeout.ms=1500
expect_eq "$RC" 1 "exit status with no broker"
grep -q "cannot reach a broker at 127.0.0.1:$CLOSED within 1500 ms" "$OUT/e" ||
	fail "no clear error for an unreachable broker: $(cat "$OUT/e")"

broker_start
B="bootstrap.servers=$BROKER_ADDR"

# ---- idempotence config checked like the Java client, before sending ----
config_error "idempotence with acks=1" "acks must be \"all\"" --topic idem1 --num-records 10 --record-size 10 \
	--throughput -1 --producer-props "$B" enable.idempotence=true acks=1
config_error "idempotence with acks=0" "acks must be \"all\"" --topic idem1 --num-records 10 --record-size 10 \
	--throughput -1 --producer-props "$B" enable.idempotence=true acks=0
config_error "idempotence with retries=0" "retries must be greater than 0" --topic idem1 --num-records 10 \
	--record-size 10 --throughput -1 --producer-props "$B" enable.idempotence=true retries=0
config_error "idempotence with 6 in flight" "max.in.flight.requests.per.connection must be at most 5" \
	--topic idem1 --num-records 10 --record-size 10 --throughput -1 \
	--producer-props "$B" enable.idempotence=true max.in.flight.requests.per.connection=6
printf 'enable.idempotence=true\nacks=1\n' >"$OUT/idem.properties"
config_error "idempotence conflict from --producer.config" "acks must be \"all\"" --topic idem1 --num-records 10 \
	--record-size 10 --throughput -1 --producer.config "$OUT/idem.properties" --producer-props "$B"
expect_eq "$(count_records idem1)" 0 "records sent despite a config error"

# A valid idempotent configuration: works once the broker has InitProducerId;
# until then it must fail with a clear message, not hang.
tool_run --topic idem2 --num-records 10 --record-size 10 --throughput -1 \
	--producer-props "$B" enable.idempotence=true acks=all max.in.flight.requests.per.connection=5
if [ "$RC" = 0 ]; then
	grep -Eq "$FINAL_RE" "$OUT/o" || fail "idempotent run: no final line: $(cat "$OUT/o")"
else
	expect_eq "$RC" 1 "idempotent run exit status"
	grep -q "Idempotent producer not supported" "$OUT/e" || fail "idempotent run: unclear error: $(cat "$OUT/e")"
fi

# ---- a real run: exactly one final line, every record delivered ---------
tool_run --topic shape --num-records 1000 --record-size 100 --throughput -1 --producer-props "$B" acks=1 linger.ms=0
expect_eq "$RC" 0 "exit status of a 1000-record run ($(cat "$OUT/e"))"
expect_eq "$(grep -Ec "$FINAL_RE" "$OUT/o")" 1 "final lines in: $(cat "$OUT/o")"
grep -Eq '^1000 records sent' "$OUT/o" || fail "final line does not count 1000 records: $(cat "$OUT/o")"
expect_eq "$(count_records shape)" 1000 "records in topic shape"
expect_eq "$(kcat -b "$BROKER_ADDR" -C -t shape -o beginning -e -q -f '%S\n' | sort -u)" 100 "record sizes"
kcat -b "$BROKER_ADDR" -C -t shape -o beginning -c 5 -e -q | grep -Evq '^[A-Z]{100}$' &&
	fail "payloads are not 100 random uppercase letters"

# Multiple --producer-props values, also as separate flags, and --bootstrap-server.
tool_run --topic shape2 --num-records 50 --record-size 10 --throughput -1 --bootstrap-server "$BROKER_ADDR" \
	--producer-props acks=all linger.ms=1 --producer-props client.id=x
expect_eq "$RC" 0 "exit status with --bootstrap-server ($(cat "$OUT/e"))"
expect_eq "$(count_records shape2)" 50 "records in topic shape2"

# --producer.config, with --producer-props taking precedence.
printf '# comment\nbootstrap.servers = 127.0.0.1:1\nacks: 1\n' >"$OUT/p.properties"
tool_run --topic shape3 --num-records 20 --record-size 10 --throughput -1 --producer.config "$OUT/p.properties" \
	--producer-props "$B"
expect_eq "$RC" 0 "exit status with --producer.config ($(cat "$OUT/e"))"
expect_eq "$(count_records shape3)" 20 "records in topic shape3"

# --payload-file and --payload-delimiter (Kafka prints both lines below).
printf 'alpha,beta,gamma' >"$OUT/payloads"
tool_run --topic pf --num-records 30 --payload-file "$OUT/payloads" --payload-delimiter , --throughput -1 \
	--producer-props "$B"
expect_eq "$RC" 0 "exit status with --payload-file ($(cat "$OUT/e"))"
grep -q "^Reading payloads from: $OUT/payloads$" "$OUT/o" || fail "no 'Reading payloads from' line: $(cat "$OUT/o")"
grep -q '^Number of messages read: 3$' "$OUT/o" || fail "no 'Number of messages read: 3' line: $(cat "$OUT/o")"
expect_eq "$(kcat -b "$BROKER_ADDR" -C -t pf -o beginning -e -q | grep -Evc '^(alpha|beta|gamma)$')" 0 \
	"payloads not from the file"
printf 'one\ntwo\n' >"$OUT/lines"
tool_run --topic pf2 --num-records 4 --payload-file "$OUT/lines" --throughput -1 --producer-props "$B"
grep -q '^Number of messages read: 2$' "$OUT/o" || fail "default delimiter is not newline: $(cat "$OUT/o")"
tool_run --topic pf3 --num-records 4 --payload-file "$OUT/missing" --throughput -1 --producer-props "$B"
expect_eq "$RC" 1 "exit status for a missing payload file"

# --payload-monotonic: 0, 1, 2, ...
tool_run --topic mono --num-records 5 --payload-monotonic --throughput -1 --producer-props "$B" linger.ms=50
expect_eq "$RC" 0 "exit status with --payload-monotonic"
expect_eq "$(kcat -b "$BROKER_ADDR" -C -t mono -o beginning -e -q | sort -n | tr '\n' ' ')" "0 1 2 3 4 " \
	"monotonic payloads"

# --print-metrics: the final line, then the metrics table.
tool_run --topic pm --num-records 100 --record-size 10 --throughput -1 --producer-props "$B" --print-metrics
expect_eq "$RC" 0 "exit status with --print-metrics"
grep -Eq "$FINAL_RE" "$OUT/o" || fail "--print-metrics: no final line"
grep -q '^Metric Name' "$OUT/o" || fail "--print-metrics: no metrics table: $(cat "$OUT/o")"

# Throttled: 2000 records/s for 6 s gives at least one 5-second progress line.
tool_run --topic thr --num-records 12000 --record-size 100 --throughput 2000 --producer-props "$B"
expect_eq "$RC" 0 "exit status of the throttled run"
grep -Eq "$WINDOW_RE" "$OUT/o" || fail "no progress line in a 6 s run: $(cat "$OUT/o")"
expect_eq "$(tail -n 1 "$OUT/o" | grep -Ec "$FINAL_RE")" 1 "last line is the final line"
expect_eq "$(count_records thr)" 12000 "records in topic thr"

# Transactions: work once the broker has them; until then a clear error.
tool_run --topic txn --num-records 10 --record-size 10 --throughput -1 --producer-props "$B" \
	--transactional-id perf-txn --transaction-duration-ms 100
if [ "$RC" != 0 ]; then
	expect_eq "$RC" 1 "transactional run exit status"
	grep -Eq "init transactions failed|not supported" "$OUT/e" || fail "transactions: unclear error: $(cat "$OUT/e")"
fi

broker_alive || fail "broker died"
it_pass
