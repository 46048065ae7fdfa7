#!/bin/bash
# kcat -L lists this broker (at the listener address) and a topic that was
# auto-created by producing to it, with num.partitions partitions, each led by
# the broker with no error.
. "$(dirname "$0")/../lib/broker.sh"

broker_start --override auto.create.topics.enable=true --override num.partitions=3

# 1. Broker list before any topic exists.
out=$(timeout 30 kcat -b "$BROKER_ADDR" -L -m 10 2>&1) || fail "kcat -L: $out"
echo "$out"
echo "$out" | grep -Eq "^ *1 brokers:" || fail "want exactly '1 brokers:' in kcat -L output"
echo "$out" | grep -Eq "^ *broker [0-9]+ at 127\.0\.0\.1:$BROKER_PORT( \(controller\))?$" ||
	fail "want 'broker N at 127.0.0.1:$BROKER_PORT' (the advertised listener) in kcat -L output"

# 2. Produce one message to a new topic: auto-create.
topic=itest-meta-$$
printf 'hello\n' | timeout 30 kcat -b "$BROKER_ADDR" -P -t "$topic" -m 10 ||
	fail "kcat -P to auto-created topic $topic failed"

# 3. Metadata for that topic, as JSON, checked field by field.
json=""
for i in $(seq 1 50); do
	json=$(timeout 30 kcat -b "$BROKER_ADDR" -L -t "$topic" -J -m 10 2>/dev/null) && break
	sleep 0.2
done
echo "$json"
"$PYTHON" - "$json" "$topic" "$BROKER_PORT" <<'PY' || fail "metadata check failed"
import json, sys
md = json.loads(sys.argv[1]); topic = sys.argv[2]; port = sys.argv[3]
brokers = md["brokers"]
assert len(brokers) == 1, "brokers: got %r, want one" % brokers
b = brokers[0]
assert b["name"] == "127.0.0.1:" + port, "broker name: got %r, want %r" % (b["name"], "127.0.0.1:" + port)
ts = [t for t in md["topics"] if t["topic"] == topic]
assert len(ts) == 1, "topic %s: got %r" % (topic, md["topics"])
t = ts[0]
assert "error" not in t, "topic error: %r" % t.get("error")
parts = sorted(t["partitions"], key=lambda p: p["partition"])
assert [p["partition"] for p in parts] == [0, 1, 2], "partitions: got %r, want [0, 1, 2]" % [p["partition"] for p in parts]
for p in parts:
    assert "error" not in p, "partition %d error: %r" % (p["partition"], p.get("error"))
    assert p["leader"] == b["id"], "partition %d leader: got %r, want %r" % (p["partition"], p["leader"], b["id"])
    assert [r["id"] for r in p["replicas"]] == [b["id"]], "partition %d replicas: %r" % (p["partition"], p["replicas"])
    assert [r["id"] for r in p["isrs"]] == [b["id"]], "partition %d isrs: %r" % (p["partition"], p["isrs"])
print("metadata ok: broker %d at %s, topic %s with 3 partitions" % (b["id"], b["name"], topic))
PY

# 4. Plain -L also lists the topic with 3 partitions.
out=$(timeout 30 kcat -b "$BROKER_ADDR" -L -m 10 2>&1) || fail "kcat -L: $out"
echo "$out" | grep -Eq "^ *topic \"$topic\" with 3 partitions:" || fail "kcat -L does not list topic $topic with 3 partitions:
$out"

# 5. The message is there (in one of the 3 partitions).
got=$(timeout 30 kcat -b "$BROKER_ADDR" -C -t "$topic" -e -o beginning -q -m 10) || fail "kcat -C failed"
expect_eq "$got" "hello" "consumed messages"

broker_stop
it_pass
