#!/bin/bash
# kcat (librdkafka 2.0.2) with api.version.request=false, as against a broker
# too old for ApiVersions.  broker.version.fallback=0.8.2 gives Produce v0 /
# Fetch v0 / ListOffsets v0 with message format 0, 0.9.0 Produce v1 / Fetch v1
# (format 0).  0.10.0 is the setting users write for 0.10 brokers, but
# librdkafka maps any fallback >= 0.10 to a table holding only ApiVersions,
# which turns the query back on: it then speaks current versions (checked
# here too).  For each codec: 2000 keyed lines produced, read back from the
# beginning byte-identical with their offsets and keys, and "-o -5"
# (ListOffsets latest) gives the last five.
. "$(dirname "$0")/../lib/broker.sh"

broker_start --override auto.create.topics.enable=true --override num.partitions=1

in="$BROKER_DIR/in.txt"
"$PYTHON" - "$in" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(2000):
        f.write("key-%d:%05d %s\n" % (i % 13, i, "payload-" * (i % 40)))
PY
want="$BROKER_DIR/want.txt"
awk '{ split($0, a, ":"); printf "%d %s %s\n", NR - 1, a[1], substr($0, length(a[1]) + 2) }' "$in" >"$want"

for fallback in 0.8.2 0.9.0 0.10.0; do
	for codec in none gzip snappy lz4; do
		topic="kcat-legacy-$fallback-$codec"
		legacy=(-X api.version.request=false -X broker.version.fallback="$fallback")
		log "fallback $fallback, codec $codec"
		timeout 60 kcat -b "$BROKER_ADDR" "${legacy[@]}" -P -t "$topic" -p 0 -K : -z "$codec" \
			-X linger.ms=20 -X acks=all <"$in" || fail "kcat -P ($fallback, $codec) exited with status $?"
		got="$BROKER_DIR/got-$fallback-$codec.txt"
		timeout 60 kcat -b "$BROKER_ADDR" "${legacy[@]}" -C -t "$topic" -p 0 -o beginning -e -q \
			-f '%o %k %s\n' >"$got" || fail "kcat -C ($fallback, $codec) exited with status $?"
		if ! cmp -s "$want" "$got"; then
			diff "$want" "$got" | head -n 10
			fail "fallback $fallback, codec $codec: consumed data differs (first differences above)"
		fi
		tail=$(timeout 60 kcat -b "$BROKER_ADDR" "${legacy[@]}" -C -t "$topic" -p 0 -o -5 -e -q -f '%o\n' | tr '\n' ' ')
		expect_eq "$tail" "1995 1996 1997 1998 1999 " "fallback $fallback, codec $codec: offsets of -o -5"
	done
done
grep -q "request refused\|unsupported api key or version" "$BROKER_LOG" && fail "the broker refused a request"
broker_alive || fail "broker died"
it_pass
