#!/bin/bash
# Driver for 0003-librdkafka.c: one broker, the C test once per codec.
. "$(dirname "$0")/../lib/broker.sh"
bin="$REPO_ROOT/$BUILD/bin/itest/0003-librdkafka"
case "$BUILD" in /*) bin="$BUILD/bin/itest/0003-librdkafka" ;; esac
[ -x "$bin" ] || fail "test binary $bin missing (make $BUILD/bin/itest/0003-librdkafka)"

broker_start
for codec in none gzip snappy lz4 zstd; do
	log "codec $codec"
	timeout 120 "$bin" "$BROKER_ADDR" "$codec" || fail "0003-librdkafka $codec exited with status $?"
	broker_alive || fail "broker died during codec $codec"
done
broker_stop
it_pass
