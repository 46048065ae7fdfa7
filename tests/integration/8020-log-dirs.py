"""DescribeLogDirs (api key 35) and gregor-log-dirs against the real broker.

- ApiVersions advertises DescribeLogDirs 0-4.
- Raw protocol, every version 0-4: the answer decodes to the last byte,
  names the data directory by its absolute path with no error, v3+ carries
  the top-level ErrorCode 0, v4 the volume's TotalBytes (statvfs, exact)
  and UsableBytes; v0-v3 have neither.
- Partition sizes are the bytes of the partition's .log files on disk,
  before producing (0) and after (grown, several segments), the same in
  every version.
- Topics null lists every partition directory on disk; a topic filter
  answers just the named partitions (unknown topics and partitions absent,
  a partition named twice once); an empty topic list answers no partition.
- kafka-python: python3-kafka 2.0.2 has no describe_log_dirs() (it came in
  kafka-python 2.1), so v0 and v1 are defined with kafka-python's own
  protocol types and sent over its KafkaAdminClient connection; its decoder
  reads the same sizes.
- gregor-log-dirs --describe prints Kafka's two lines and JSON whose sizes
  match the disk; --topic-list filters; --broker-list 0 works.
- Garbage: truncated bodies at every version, a huge array count, a
  negative count and random bytes close only that connection (or are
  answered); a new connection is answered after each, and a connection
  open throughout is still answered at the end.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, log, main, run  # noqa: E402
import kwire as kw  # noqa: E402
from idemwire import uvarint  # noqa: E402
from logdirswire import API_KEY, describe, frame, parse_response, request_body  # noqa: E402

from kafka import KafkaAdminClient, KafkaProducer  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.protocol.api import Request, Response  # noqa: E402
from kafka.protocol.types import Array, Boolean, Int16, Int32, Int64, Schema, String  # noqa: E402

TOPIC_A = "ld-a"  # 3 partitions, small segments
TOPIC_B = "ld-b"  # 1 partition
SEGMENT_BYTES = 2048


def one_dir(resp, b, version):
    eq(len(resp["dirs"]), 1, "log dirs in the v%d answer" % version)
    d = resp["dirs"][0]
    eq(d["path"], os.path.realpath(b.data_dir), "LogDir (v%d)" % version)
    eq(d["error"], 0, "LogDir ErrorCode (v%d)" % version)
    return d


# ---- the truth on disk ----

def disk_sizes(b):
    """{(topic, partition): bytes of its .log files} for every partition directory."""
    out = {}
    for name in os.listdir(b.data_dir):
        path = os.path.join(b.data_dir, name)
        topic, _, idx = name.rpartition("-")
        if not os.path.isdir(path) or not topic or not idx.isdigit():
            continue
        out[(topic, int(idx))] = sum(os.path.getsize(os.path.join(path, f))
                                     for f in os.listdir(path) if f.endswith(".log"))
    return out


def log_files(b, topic, p):
    return sorted(f for f in os.listdir(b.partition_dir(topic, p)) if f.endswith(".log"))


def sizes_of(d):
    return {tp: v[0] for tp, v in d["parts"].items()}


# ---- checks ----

def check_all_versions(b, want_sizes):
    """Every version with Topics null: the sizes on disk, lag 0, not future, v4 volume sizes."""
    for v in range(5):
        resp = describe(b.port, v)
        eq(resp["error"], 0 if v >= 3 else None, "top-level ErrorCode (v%d)" % v)
        d = one_dir(resp, b, v)
        eq(sizes_of(d), want_sizes, "partition sizes (v%d)" % v)
        for tp, (_, lag, future) in d["parts"].items():
            eq((lag, future), (0, 0), "OffsetLag/IsFutureKey of %s (v%d)" % (tp, v))
        if v >= 4:
            st = os.statvfs(b.data_dir)
            eq(d["total"], st.f_blocks * st.f_frsize, "TotalBytes (v4)")
            check(0 < d["usable"] <= d["total"], "UsableBytes %d of %d" % (d["usable"], d["total"]))
        else:
            eq((d["total"], d["usable"]), (None, None), "no volume sizes before v4")


def check_filters(b):
    sizes = disk_sizes(b)
    for v in range(5):
        d = one_dir(describe(b.port, v, [(TOPIC_A, [2, 0, 7, -1, 0]), ("ld-missing", [0]), (TOPIC_B, [0, 0]),
                                         ("bad/name", [0])]), b, v)
        eq(sizes_of(d), {(TOPIC_A, 0): sizes[(TOPIC_A, 0)], (TOPIC_A, 2): 0, (TOPIC_B, 0): sizes[(TOPIC_B, 0)]},
           "filtered answer (v%d)" % v)
        eq(describe(b.port, v, [])["dirs"][0]["parts"], {}, "empty topic list (v%d)" % v)
        eq(sizes_of(one_dir(describe(b.port, v, [(TOPIC_B, [])]), b, v)), {}, "topic with no partitions (v%d)" % v)


class DescribeLogDirsResponse_v0(Response):
    API_KEY = API_KEY
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("log_dirs", Array(
            ("error_code", Int16),
            ("log_dir", String("utf-8")),
            ("topics", Array(
                ("name", String("utf-8")),
                ("partitions", Array(
                    ("partition_index", Int32),
                    ("partition_size", Int64),
                    ("offset_lag", Int64),
                    ("is_future_key", Boolean))))))))


class DescribeLogDirsResponse_v1(DescribeLogDirsResponse_v0):
    API_VERSION = 1


class DescribeLogDirsRequest_v0(Request):
    API_KEY = API_KEY
    API_VERSION = 0
    RESPONSE_TYPE = DescribeLogDirsResponse_v0
    SCHEMA = Schema(("topics", Array(("topic", String("utf-8")), ("partitions", Array(Int32)))))


class DescribeLogDirsRequest_v1(DescribeLogDirsRequest_v0):
    API_VERSION = 1
    RESPONSE_TYPE = DescribeLogDirsResponse_v1


def kafka_python_describe(admin, cls, topics):
    fut = admin._send_request_to_node(0, cls(topics))
    admin._wait_for_futures([fut])
    resp = fut.value
    eq(len(resp.log_dirs), 1, "kafka-python: log dirs")
    err, path, topics = resp.log_dirs[0]
    return err, path, {(t, p[0]): p[1] for t, parts in topics for p in parts}


def check_kafka_python(b, admin):
    want = disk_sizes(b)
    for cls in (DescribeLogDirsRequest_v0, DescribeLogDirsRequest_v1):
        err, path, sizes = kafka_python_describe(admin, cls, None)
        eq((err, path), (0, os.path.realpath(b.data_dir)), "kafka-python v%d: error and path" % cls.API_VERSION)
        eq(sizes, want, "kafka-python v%d: sizes" % cls.API_VERSION)
        _, _, sizes = kafka_python_describe(admin, cls, [(TOPIC_A, [1])])
        eq(sizes, {(TOPIC_A, 1): want[(TOPIC_A, 1)]}, "kafka-python v%d: filtered" % cls.API_VERSION)


def tool(b, *args):
    r = run([build_bin("gregor-log-dirs"), "--bootstrap-server", b.bootstrap, "--describe"] + list(args),
            timeout_s=60)
    lines = r.stdout.decode().splitlines()
    eq(lines[:2], ["Querying brokers for log directories information",
                   "Received log directory information from brokers 0"], "tool: first lines")
    eq(len(lines), 3, "tool: lines of output")
    return json.loads(lines[2])


def check_tool(b):
    want = disk_sizes(b)
    out = tool(b)
    eq(out["version"], 1, "tool: version")
    eq([br["broker"] for br in out["brokers"]], [0], "tool: brokers")
    dirs = out["brokers"][0]["logDirs"]
    eq([(d["logDir"], d["error"]) for d in dirs], [(os.path.realpath(b.data_dir), None)], "tool: log dirs")
    got = {}
    for p in dirs[0]["partitions"]:
        eq(sorted(p), ["isFuture", "offsetLag", "partition", "size"], "tool: partition keys")
        eq((p["offsetLag"], p["isFuture"]), (0, False), "tool: %s lag/future" % p["partition"])
        topic, _, idx = p["partition"].rpartition("-")
        got[(topic, int(idx))] = p["size"]
    eq(got, want, "tool: sizes")
    only_b = tool(b, "--topic-list", TOPIC_B, "--broker-list", "0")["brokers"][0]["logDirs"][0]["partitions"]
    eq([(p["partition"], p["size"]) for p in only_b], [("%s-0" % TOPIC_B, want[(TOPIC_B, 0)])], "tool: --topic-list")
    r = run([build_bin("gregor-log-dirs"), "--bootstrap-server", b.bootstrap, "--describe", "--broker-list", "5"],
            timeout_s=60, check_rc=False)
    eq(r.returncode, 1, "tool: unknown broker exit status")
    check(b"5" in r.stderr and b"not in the cluster" in r.stderr, "tool: unknown broker message %r" % r.stderr)


def closes(port, data, wait_s=3.0):
    """Sends data; True if the broker closes the connection within wait_s. Then a new connection is answered."""
    s = kw.connect(port)
    try:
        s.sendall(data)
        closed, _ = kw.wait_closed(s, wait_s)
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    finally:
        s.close()
    describe(port, 0)
    return closed


def check_garbage(b):
    keep = kw.connect(b.port)  # open through all of it: must still be served afterwards
    keep.sendall(frame(4, request_body(4, None), corr=7))
    eq(kw.recv_response(keep)[0], 7, "kept connection, before")
    for v in range(5):
        body = request_body(v, [(TOPIC_A, [0, 1, 2])])
        for cut in range(len(body)):
            if not closes(b.port, frame(v, body[:cut])):
                raise AssertionError("v%d body cut at %d of %d: connection stays open" % (v, cut, len(body)))
    check(closes(b.port, frame(0, kw.i32(0x7FFFFFFF))), "huge array count closes")
    check(closes(b.port, frame(1, kw.i32(1) + kw.string(TOPIC_A) + kw.i32(-5))), "negative partition count closes")
    check(closes(b.port, frame(3, uvarint(2) + uvarint(0xFFFFFFF))), "huge compact count closes")
    rnd = random.Random(8020)
    for _ in range(40):
        closes(b.port, frame(rnd.randrange(5), bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))), 0.3)
    check(b.alive(), "broker alive after garbage")
    keep.sendall(frame(4, request_body(4, None), corr=8))
    corr, body = kw.recv_response(keep)
    eq(corr, 8, "kept connection, after")
    eq(sizes_of(parse_response(4, body)["dirs"][0]), disk_sizes(b), "kept connection's answer")
    keep.close()


def produce(b):
    p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=0, batch_size=512)
    for i in range(300):
        p.send(TOPIC_A, value=b"a%04d" % i * 10, partition=0)
    for i in range(20):
        p.send(TOPIC_A, value=b"x%04d" % i, partition=1)
        p.send(TOPIC_B, value=b"y%04d" % i, partition=0)
    p.flush(30)
    p.close(10)


def test():
    with Broker(overrides={"num.partitions": "1", "auto.create.topics.enable": "false"}) as b:
        s = kw.connect(b.port)
        s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
        _, apis, _ = kw.parse_api_versions_v0(kw.recv_response(s)[1])
        s.close()
        eq(apis.get(API_KEY), (0, 4), "ApiVersions: DescribeLogDirs range")

        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=20000)
        admin.create_topics([NewTopic(TOPIC_A, 3, 1, topic_configs={"segment.bytes": str(SEGMENT_BYTES)}),
                             NewTopic(TOPIC_B, 1, 1)])
        empty = disk_sizes(b)
        eq(empty, {(TOPIC_A, 0): 0, (TOPIC_A, 1): 0, (TOPIC_A, 2): 0, (TOPIC_B, 0): 0}, "partitions on disk")
        check_all_versions(b, empty)
        log("empty partitions: every version answers size 0")

        produce(b)
        grown = disk_sizes(b)
        check(grown[(TOPIC_A, 0)] > SEGMENT_BYTES and len(log_files(b, TOPIC_A, 0)) >= 2,
              "%s-0 spans segments: %d bytes in %s" % (TOPIC_A, grown[(TOPIC_A, 0)], log_files(b, TOPIC_A, 0)))
        check(grown[(TOPIC_A, 1)] > 0 and grown[(TOPIC_B, 0)] > 0, "sizes grew: %r" % grown)
        eq(grown[(TOPIC_A, 2)], 0, "untouched partition")
        check_all_versions(b, grown)
        log("after producing: sizes %r match the .log files in every version" % sorted(grown.items()))

        check_filters(b)
        log("topic filters, unknown and repeated partitions, empty lists")
        check_kafka_python(b, admin)
        admin.close()
        log("kafka-python's codec reads v0 and v1")
        check_tool(b)
        log("gregor-log-dirs JSON")
        check_garbage(b)
        log("garbage closes only its connection")
        eq(sizes_of(one_dir(describe(b.port, 4), b, 4)), disk_sizes(b), "sizes after everything")


main(test)
