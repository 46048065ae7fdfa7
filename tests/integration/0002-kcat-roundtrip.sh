#!/bin/bash
# 10,000 lines produced with kcat -P come back byte-identical and in order
# from kcat -C -e -o beginning (single-partition topic, auto-created).
. "$(dirname "$0")/../lib/broker.sh"

broker_start --override auto.create.topics.enable=true --override num.partitions=1

topic=itest-roundtrip-$$
in="$BROKER_DIR/in.txt"
got="$BROKER_DIR/out.txt"

# Deterministic lines of varying length (1..~1200 bytes), no empty lines
# (kcat -P skips nothing, but an empty line would be an empty message).
"$PYTHON" - "$in" <<'PY'
import random, sys
rnd = random.Random(42)
alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:;,!?"
with open(sys.argv[1], "w") as f:
    for i in range(10000):
        n = rnd.choice([0, 1, 10, 100, 1000]) + rnd.randrange(0, 200)
        f.write("%05d %s\n" % (i, "".join(rnd.choice(alpha) for _ in range(n))))
PY
expect_eq "$(wc -l <"$in")" 10000 "input lines"

log "producing 10000 lines"
timeout 120 kcat -b "$BROKER_ADDR" -P -t "$topic" -p 0 -X linger.ms=20 -X acks=all <"$in" ||
	fail "kcat -P exited with status $?"

log "consuming"
timeout 120 kcat -b "$BROKER_ADDR" -C -t "$topic" -p 0 -o beginning -e -q >"$got" ||
	fail "kcat -C exited with status $?"

expect_eq "$(wc -l <"$got")" 10000 "consumed lines"
if ! cmp -s "$in" "$got"; then
	diff "$in" "$got" | head -n 20
	fail "consumed data differs from produced data (first differences above)"
fi

# Offsets: the 10,000 messages sit at offsets 0..9999.
last=$(timeout 60 kcat -b "$BROKER_ADDR" -C -t "$topic" -p 0 -o -1 -e -q -f '%o\n') || fail "kcat -C -o -1 failed"
expect_eq "$last" 9999 "offset of the last message"
first=$(timeout 60 kcat -b "$BROKER_ADDR" -C -t "$topic" -p 0 -o beginning -c 1 -q -f '%o\n') || fail "kcat -C -c 1 failed"
expect_eq "$first" 0 "offset of the first message"

broker_stop
it_pass
