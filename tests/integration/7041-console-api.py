#!/usr/bin/python3
"""7041: the web console's JSON API answers what the Kafka admin API does,
and bad input gets a 4xx JSON error while the broker keeps serving.

  1. A topic with 4 partitions, records in three of them (one batch lz4
     compressed, with headers); a confluent_kafka consumer group reads
     part of them and commits, then leaves.
  2. /api/brokers: the brokers, controller and cluster id of Metadata.
     /api/topics and /api/topics/<t>: partition count, leader, replicas,
     ISR as Metadata gives them; log start and high watermark as
     get_watermark_offsets (ListOffsets) gives them.
     /api/groups and /api/groups/<g>: the group's state as ListGroups
     gives it; committed offsets as OffsetFetch gives them; lag = high
     watermark - committed.
     /api/topics/<t>/partitions/<p>/records?limit=N: the last N records a
     consumer reads from that partition (offset, key, value, headers),
     the compressed batch included; keys, values and header values over
     4 KiB cut, their full size given.
  3. Bad input: unknown topic, partition, group or path (404), a partition
     or limit that is not a number in range (400), POST while the console
     is read-only (403), PUT (405), a long URL; each answered with an error,
     after which a producer and a consumer still work and the API answers.
On a broker without the console every /api/ path is 404 and step 2 fails.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from consolehttp import api_get, api_post, is_error  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main, wait_until  # noqa: E402
from promhttp import http_get  # noqa: E402

TOPIC = "console-7041"
GROUP = "console-7041-g"
NPARTS = 4


def produce(b):
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
    for i in range(30):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    eq(p.flush(20), 0, "records unflushed")
    lz = Producer({"bootstrap.servers": b.bootstrap, "compression.type": "lz4", "linger.ms": 50})
    for i in range(5):
        lz.produce(TOPIC, key=b"lz%d" % i, value=(b"compressed-%d " % i) * 20, partition=1,
                   headers=[("h", b"x%d" % i), ("bin", b"\x00\xff")])
    eq(lz.flush(20), 0, "lz4 records unflushed")


def consume_some(b, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": "itest-7041"})
    c.subscribe([TOPIC])
    got, deadline = 0, time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    check(got >= n, "consumed %d of %d" % (got, n))
    c.commit(asynchronous=False)
    c.close()


def check_brokers(mport, md):
    st, v = api_get(mport, "/api/brokers")
    eq(st, 200, "/api/brokers")
    eq(sorted(x["node_id"] for x in v["brokers"]), sorted(md.brokers), "broker ids")
    eq(v["controller_id"], md.controller_id, "controller")
    eq(v["cluster_id"], md.cluster_id, "cluster id")
    for x in v["brokers"]:
        eq("%s:%d" % (x["host"], x["port"]), "%s:%d" % (md.brokers[x["node_id"]].host, md.brokers[x["node_id"]].port),
           "broker address")


def check_topic(b, mport, md):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "console-7041-probe"})
    st, all_topics = api_get(mport, "/api/topics")
    eq(st, 200, "/api/topics")
    listed = {t["name"]: t for t in all_topics["topics"]}
    check(TOPIC in listed, "topic listed")
    st, t = api_get(mport, "/api/topics/" + TOPIC)
    eq(st, 200, "/api/topics/<t>")
    eq(t, listed[TOPIC], "one topic's answer equals its entry in the list")
    mt = md.topics[TOPIC]
    eq(t["partition_count"], len(mt.partitions), "partition count")
    eq(t["partition_count"], NPARTS, "partition count")
    for p in t["partitions"]:
        mp = mt.partitions[p["partition"]]
        eq((p["leader"], p["replicas"], p["isr"]), (mp.leader, list(mp.replicas), list(mp.isrs)),
           "leader, replicas, ISR of %d" % p["partition"])
        lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, p["partition"]), timeout=10)
        eq((p["log_start_offset"], p["high_watermark"]), (lo, hi), "watermarks of %d" % p["partition"])
        check(p["size_bytes"] > 0 or hi == 0, "size of %d" % p["partition"])
    eq(t["messages_in"], 35, "messages in")
    c.close()


def check_group(b, mport):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    state = [g.state for g in admin.list_groups(GROUP, timeout=10)]
    st, v = api_get(mport, "/api/groups")
    eq(st, 200, "/api/groups")
    eq([g["state"] for g in v["groups"] if g["group_id"] == GROUP], state, "group state")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP})
    tps = [TopicPartition(TOPIC, p) for p in range(NPARTS)]
    committed = {tp.partition: tp.offset for tp in c.committed(tps, timeout=10) if tp.offset >= 0}
    high = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in committed}
    c.close()
    st, g = api_get(mport, "/api/groups/" + GROUP)
    eq(st, 200, "/api/groups/<g>")
    eq(g["state"], "Empty", "group state after the consumer left")
    got = {o["partition"]: (o["committed_offset"], o["high_watermark"], o["lag"]) for o in g["offsets"]}
    want = {p: (committed[p], high[p], high[p] - committed[p]) for p in committed}
    eq(got, want, "committed offsets, high watermarks and lag")
    check(any(lag > 0 for _, _, lag in want.values()), "some lag")


def check_records(b, mport):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "console-7041-reader"})
    tp = TopicPartition(TOPIC, 1, 0)
    c.assign([tp])
    read, deadline = [], time.monotonic() + 20
    while len(read) < 15 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            read.append((m.offset(), m.key(), m.value(), [(k, v) for k, v in (m.headers() or [])]))
    c.close()
    eq(len(read), 15, "records read from partition 1")
    st, v = api_get(mport, "/api/topics/%s/partitions/1/records?limit=7" % TOPIC)
    eq(st, 200, "records")
    got = [(r["offset"], bytes.fromhex(r["key"]["hex"]), bytes.fromhex(r["value"]["hex"]),
            [(h["key"], bytes.fromhex(h["value"]["hex"])) for h in r["headers"]]) for r in v["records"]]
    eq(got, read[-7:], "the last 7 records as a consumer reads them")
    eq(v["records"][-1]["key"]["text"], "lz4", "key as text")


def check_bad_input(b, mport):
    bad = [
        ("/api/topics/no-such-topic", 404), ("/api/topics/%s/partitions/9/records" % TOPIC, 404),
        ("/api/topics/%s/partitions/x/records" % TOPIC, 400), ("/api/topics/%s/partitions/-1/records" % TOPIC, 400),
        ("/api/topics/%s/partitions/99999999999/records" % TOPIC, 400),
        ("/api/topics/%s/partitions/0/records?limit=0" % TOPIC, 400),
        ("/api/topics/%s/partitions/0/records?limit=501" % TOPIC, 400),
        ("/api/topics/%s/partitions/0/records?limit=1000000000000000000000" % TOPIC, 400),
        ("/api/topics/%s/partitions/0/records?limit=abc" % TOPIC, 400),
        ("/api/topics/%s/partitions/0/nope" % TOPIC, 400), ("/api/topics/%s/nope" % TOPIC, 404),
        ("/api/groups/no-such-group", 404), ("/api/nope", 404), ("/api/topics/" + "x" * 300, 400),
    ]
    for path, status in bad:
        check(is_error(api_get(mport, path), status), "%s -> %d JSON error" % (path, status))
    eq(api_get(mport, "/api/console"), (200, {"write_enabled": False}), "/api/console")
    check(is_error(api_post(mport, "/api/topics", {"name": "t7041", "partitions": 1}), 403), "POST read-only -> 403")
    check(is_error(api_post(mport, "/api/groups/%s/offsets" % GROUP, {"to": "earliest"}), 403), "reset -> 403")
    eq(api_post(mport, "/api/topics", b"{}", method="PUT")[0], 405, "PUT")
    eq(http_get(mport, "/api/topics/" + "y" * 20000)[0] in (414, 431, 400), True, "huge URL refused")
    p = Producer({"bootstrap.servers": b.bootstrap})
    p.produce(TOPIC, value=b"after-bad-input", partition=3)
    eq(p.flush(20), 0, "produce after bad input")
    wait_until(lambda: api_get(mport, "/api/topics/%s/partitions/3/records?limit=1" % TOPIC)[1]["records"][0]["value"]
               ["text"] == "after-bad-input", 10, "the API still answers")


def check_cut(b, mport):
    """Keys, values and header values over 4 KiB are cut, their full size given."""
    p = Producer({"bootstrap.servers": b.bootstrap})
    big = bytes(range(256)) * 40
    p.produce(TOPIC, key=b"K" * 5000, value=big, partition=3, headers=[("big", b"h" * 9000), ("after", b"x")])
    eq(p.flush(20), 0, "big record unflushed")
    st, v = api_get(mport, "/api/topics/%s/partitions/3/records?limit=1" % TOPIC)
    eq(st, 200, "records")
    r = v["records"][0]
    eq((r["value"]["size"], r["value"]["truncated"], r["value"]["hex"]), (len(big), True, big[:4096].hex()), "value")
    eq((r["key"]["size"], r["key"]["truncated"], r["key"]["text"]), (5000, True, "K" * 4096), "key")
    eq([(h["key"], h["value"]["size"], h["value"]["truncated"]) for h in r["headers"]],
       [("big", 9000, True), ("after", 1, False)], "headers")


def test():
    mport = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport},
                overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, NPARTS, 1)])[TOPIC].result(20)
        produce(b)
        consume_some(b, 12)
        md = admin.list_topics(timeout=10)
        check_brokers(mport, md)
        check_topic(b, mport, md)
        log("brokers and topics as Metadata and ListOffsets give them")
        check_group(b, mport)
        log("group state, committed offsets and lag as ListGroups and OffsetFetch give them")
        check_records(b, mport)
        log("records as a consumer reads them")
        check_bad_input(b, mport)
        log("bad input: 4xx JSON errors, the broker still serves")
        check_cut(b, mport)
        log("keys, values and headers over 4 KiB cut, their size given")


main(test)
