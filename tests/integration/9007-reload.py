#!/usr/bin/python3
"""9007: SIGHUP reload and connections.max.idle.ms (issue 7).

Reload: a broker with small segments (log.segment.bytes=4000) and a fast
retention check holds ~40 KiB in one partition.  The properties file is
rewritten with log.retention.bytes=8000 (dynamic), a new
socket.request.max.bytes (not dynamic) and message.max.bytes (dynamic but
also given with --override, which must keep winning); SIGHUP:
  - the log says log.retention.bytes changed and socket.request.max.bytes
    "needs a restart"; nothing about message.max.bytes;
  - the topic, which follows the broker default, reports retention.bytes
    8000 (DescribeConfigs) and old segments are deleted: the log start
    offset moves up and the partition shrinks to about 8000 bytes;
  - a file that no longer parses logs an error, the running config stays
    (retention.bytes still 8000) and the broker keeps serving.
Idle connections: with connections.max.idle.ms=1000 an idle raw socket is
closed within a few seconds; one sending a request every 300 ms is not.
Runtime ~10 s.
"""
import glob, os, signal, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402
import kwire  # noqa: E402

TOPIC = "reload"


def write_props(b, extra):
    b.props = dict(extra)
    b._write_props()


def topic_config(bootstrap, key):
    from confluent_kafka.admin import AdminClient, ConfigResource
    a = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    cfg = a.describe_configs([res])[res].result(20)
    return cfg[key].value


def low_high(bootstrap):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g9007"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    finally:
        c.close()


def produce(bootstrap, n, start=0):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(start, start + n):
        p.produce(TOPIC, value=b"%06d" % i + b"x" * 194, partition=0)
        p.poll(0)
    eq(p.flush(30), 0, "messages left unflushed")


def log_bytes(b):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(b.partition_dir(TOPIC), "*.log")))


def test_reload():
    base = {"log.segment.bytes": "4000", "log.retention.check.interval.ms": "200",
            "message.max.bytes": "1048588"}
    with Broker(props=base, overrides={"num.partitions": "1", "message.max.bytes": "500000"}) as b:
        produce(b.bootstrap, 200)
        time.sleep(0.5)  # a few retention checks: nothing to delete yet
        eq(low_high(b.bootstrap), (0, 200), "watermarks before the reload")
        eq(topic_config(b.bootstrap, "retention.bytes"), "-1", "retention.bytes before the reload")
        before = log_bytes(b)
        check(before > 30000, "partition holds %d bytes > 30000" % before)

        write_props(b, dict(base, **{"log.retention.bytes": "8000", "socket.request.max.bytes": "1000000",
                                     "message.max.bytes": "2000000"}))
        since = b.log_size()
        b.proc.send_signal(signal.SIGHUP)
        b.wait_log("'log.retention.bytes' changed from '-1' to '8000'", since=since)
        line = b.wait_log("needs a restart", since=since)
        log("restart line: %s" % line)
        check("'socket.request.max.bytes'" in line and "'1000000'" in line, "the restart line names the key")
        done = b.wait_log("config reloaded from", since=since)
        log(done)
        text = b.log_text()[since:]
        check("message.max.bytes" not in text, "--override message.max.bytes keeps winning over the file")
        eq(text.count("needs a restart"), 1, "restart lines")

        eq(topic_config(b.bootstrap, "retention.bytes"), "8000", "topic retention.bytes follows the broker")
        wait_until(lambda: low_high(b.bootstrap)[0] > 0, 5, "log start offset moves after the reload")
        lo, hi = low_high(b.bootstrap)
        after = log_bytes(b)
        log("after the reload: watermarks %d..%d, %d -> %d bytes of segments" % (lo, hi, before, after))
        eq(hi, 200, "high watermark")
        check(after <= 8000 + 4200, "partition shrank to %d bytes (retention.bytes 8000 + one segment)" % after)

        with open(b.props_path, "a") as f:
            f.write("this.is.not.a.key=1\n")
        since = b.log_size()
        b.proc.send_signal(signal.SIGHUP)
        line = b.wait_log("config reload of", since=since)
        log("broken file: %s" % line)
        check("keeping the running config" in line and "this.is.not.a.key" in line, "error names the key")
        check(b.alive(), "broker still running")
        produce(b.bootstrap, 10, start=200)
        eq(low_high(b.bootstrap)[1], 210, "produce after a failed reload")
        eq(topic_config(b.bootstrap, "retention.bytes"), "8000", "running config kept")


def api_versions(sock, corr):
    sock.sendall(kwire.request(18, 0, corr, kwire.api_versions_v0_body()))
    got, _ = kwire.recv_response(sock)
    eq(got, corr, "ApiVersions correlation id")


def fetch_v4_body(topic, partition, offset, max_wait_ms):
    part = kwire.i32(partition) + kwire.i64(offset) + kwire.i32(1 << 20)
    return (kwire.i32(-1) + kwire.i32(max_wait_ms) + kwire.i32(1) + kwire.i32(1 << 20) + kwire.i8(0)
            + kwire.array([kwire.string(topic) + kwire.array([part])]))


def test_idle():
    with Broker(overrides={"connections.max.idle.ms": "1000"}) as b:
        idle = kwire.connect(b.port)
        active = kwire.connect(b.port)
        api_versions(idle, 1)  # one request, then silence
        t0 = time.monotonic()
        idle_closed_at = None
        corr = 100
        while time.monotonic() - t0 < 4.0:
            api_versions(active, corr)
            corr += 1
            if idle_closed_at is None:
                closed, _ = kwire.wait_closed(idle, 0.3)
                if closed:
                    idle_closed_at = time.monotonic() - t0
            else:
                time.sleep(0.3)
        check(idle_closed_at is not None, "idle connection closed by the broker within 4 s")
        log("idle connection closed after %.1f s; active one made %d requests" % (idle_closed_at, corr - 100))
        check(idle_closed_at >= 0.9, "not closed before connections.max.idle.ms (%.1f s)" % idle_closed_at)
        api_versions(active, corr)  # still open
        # a parked long-poll fetch (2.5 s > connections.max.idle.ms) is activity
        parked = kwire.connect(b.port)
        parked.sendall(kwire.request(3, 1, 2, kwire.metadata_v1_body(["idle"])))  # auto-creates it
        kwire.recv_response(parked)
        for _ in range(100):  # made off the event loop: LEADER_NOT_AVAILABLE (5) until then
            md = kwire.parse_metadata_v1(kwire.call(b.port, 3, 1, kwire.metadata_v1_body(["idle"])).d)
            if md["topics"]["idle"][0] != 5:
                break
            time.sleep(0.02)
        t1 = time.monotonic()
        parked.sendall(kwire.request(1, 4, 3, fetch_v4_body("idle", 0, 0, 2500)))
        got, _ = kwire.recv_response(parked)
        waited = time.monotonic() - t1
        log("long-poll fetch answered after %.1f s on a connection with nothing else to do" % waited)
        eq(got, 3, "Fetch correlation id")
        check(waited >= 2.0, "the fetch was parked (%.1f s)" % waited)
        api_versions(parked, 4)
        parked.close()
        fresh = kwire.connect(b.port)
        api_versions(fresh, 7)
        fresh.close()
        active.close()
        idle.close()


def test():
    test_reload()
    test_idle()


main(test)
