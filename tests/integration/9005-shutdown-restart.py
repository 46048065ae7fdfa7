#!/usr/bin/python3
# itest: alone (it bounds shutdown and load times under its own load only)
"""9005: graceful operations (issue 7).

1,000 partitions (10 topics x 100), one message in each.  SIGTERM while a
producer and a consumer are connected: the broker exits 0 within 5 s and
logs "clean shutdown complete".  The restart skips recovery ("clean
shutdown, no recovery needed") and the log states the load time, which
must be under 1,000 ms (3,000 under sanitizers); the broker accepts
connections within 2 s of exec.  After a SIGKILL the next start says it
recovered, and every message is still there.  Runtime ~10 s.
"""
import os, re, signal, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402

SAN = "san" in os.environ.get("BUILD", "") or "san" in os.environ.get("GREGOR_BIN", "")
LOAD_MS_MAX = 3000 if SAN else 1000
TOPICS = ["gr%d" % i for i in range(10)]


def load_line(b, since):
    text = b.log_text()[since:]
    m = re.findall(r"loaded (\d+) topics with (\d+) partitions from .*?( \(.*\))? in (\d+) ms", text)
    check(m, "a 'loaded ... in N ms' line in the broker log")
    return m[-1]


def produce_all(bootstrap):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for t in TOPICS:
        for part in range(100):
            p.produce(t, value=b"%s-%d" % (t.encode(), part), partition=part)
    eq(p.flush(30), 0, "messages left unflushed")


def count_all(bootstrap):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g9005"})
    n = 0
    for t in TOPICS:
        for part in range(100):
            lo, hi = c.get_watermark_offsets(TopicPartition(t, part), timeout=10)
            n += hi - lo
    c.close()
    return n


def test():
    with Broker(overrides={"num.partitions": "100"}) as b:
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in a.create_topics([NewTopic(t, 100, 1) for t in TOPICS]).values():
            f.result(30)
        produce_all(b.bootstrap)
        t0 = time.monotonic()
        b.proc.send_signal(signal.SIGTERM)
        rc = b.proc.wait(10)
        took = time.monotonic() - t0
        log("SIGTERM to exit: %.2fs, status %d" % (took, rc))
        eq(rc, 0, "exit status after SIGTERM")
        check(took < 5.0, "shutdown took %.2fs < 5s" % took)
        check("clean shutdown complete" in b.log_text(), "clean shutdown logged")
        since = b.log_size()
        t0 = time.monotonic()
        b.start()
        up = time.monotonic() - t0
        ntop, nparts, how, ms = load_line(b, since)
        log("restart after clean shutdown: %s topics, %s partitions%s, load %s ms, accepting after %.2fs"
            % (ntop, nparts, how, ms, up))
        eq(int(nparts), 1000, "partitions loaded")
        check("clean shutdown" in how, "recovery skipped after a clean shutdown (%s)" % how)
        check(int(ms) < LOAD_MS_MAX, "load took %s ms < %d ms" % (ms, LOAD_MS_MAX))
        check(up < 2.0 * (3 if SAN else 1), "accepting connections after %.2fs" % up)
        eq(count_all(b.bootstrap), 1000, "messages after clean restart")
        b.kill9()
        since = b.log_size()
        b.start()
        ntop, nparts, how, ms = load_line(b, since)
        log("restart after SIGKILL: %s partitions%s, load %s ms" % (nparts, how, ms))
        check("recovered" in how, "recovery after SIGKILL (%s)" % how)
        eq(count_all(b.bootstrap), 1000, "messages after SIGKILL restart")
        b.stop()


main(test)
