#!/usr/bin/python3
"""7043: the web console's JSON API in cluster mode (ZooKeeper and three
brokers in the chroot /gregor/c7043, each with its own console, writes on).

  1. /api/brokers through every broker lists the three brokers, their
     addresses and the controller as Metadata gives them (the metadata
     cache), cluster_mode true, and marks itself.
  2. A topic of 6 partitions made with AdminClient (replication factor
     1: spread over the three brokers): /api/topics/<t> through every
     broker gives each partition's leader, replicas and ISR as Metadata
     does, and the offsets of the partitions it leads (a record produced
     to every partition: high watermark 1), null for the others.
  3. POST /api/topics answers 501 (topics are the controller's to make
     from ZooKeeper: the Kafka admin API is the way) and creates nothing.
On a broker without the console every /api/ path is 404 and step 1 fails;
with offsets read from a local log the broker does not lead, step 2 fails.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from consolehttp import api_get, api_post, is_error  # noqa: E402
import gregor  # noqa: E402
from gregor import check, eq, free_port, log, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c7043"
TOPIC = "console-7043"
IDS = (1, 2, 3)


def metadata_view(md):
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in md.topics[TOPIC].partitions.values()}


def console_view(mport):
    st, t = api_get(mport, "/api/topics/" + TOPIC)
    if st != 200:
        return None
    return {p["partition"]: (p["leader"], p["replicas"], p["isr"]) for p in t["partitions"]}


def check_brokers(mports, md):
    want = sorted((i, "%s:%d" % (md.brokers[i].host, md.brokers[i].port)) for i in md.brokers)
    eq([i for i, _ in want], list(IDS), "Metadata's brokers")
    for i, mport in mports.items():
        st, v = api_get(mport, "/api/brokers")
        eq(st, 200, "/api/brokers of broker %d" % i)
        eq(sorted((x["node_id"], "%s:%d" % (x["host"], x["port"])) for x in v["brokers"]), want,
           "brokers through broker %d" % i)
        eq((v["controller_id"], v["cluster_mode"], v["node_id"]), (md.controller_id, True, i),
           "controller through broker %d" % i)
        eq([x["node_id"] for x in v["brokers"] if x["self"]], [i], "itself through broker %d" % i)


def check_topic(brokers, mports):
    admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    admin.create_topics([NewTopic(TOPIC, 6, 1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": brokers[0].bootstrap, "acks": "all"})
    for part in range(6):
        p.produce(TOPIC, value=b"r%d" % part, partition=part)
    eq(p.flush(30), 0, "records unflushed")
    last = {}

    def same():
        md = admin.list_topics(timeout=10)
        want = metadata_view(md)
        ok = len(want) == 6 and len({v[0] for v in want.values()}) == 3
        for i, mport in mports.items():
            last[i] = console_view(mport)
            ok = ok and last[i] == want
            st, t = api_get(mport, "/api/topics/" + TOPIC)
            last["high watermarks through %d" % i] = [x["high_watermark"] for x in t["partitions"]] if st == 200 else st
            ok = ok and st == 200 and all(x["high_watermark"] == (1 if x["leader"] == i else None)
                                          for x in t["partitions"])
        last["metadata"] = want
        return ok
    try:
        wait_until(same, 30, "every console's partitions equal Metadata's, offsets where led")
    except AssertionError:
        log("last views: %r" % last)
        raise


def test():
    with ZooKeeper() as zk:
        brokers = []
        try:
            mports = {i: free_port() for i in IDS}
            brokers = [cluster_broker(zk.connect, i, CHROOT, zookeeper_session_timeout_ms=3000,
                                      metrics_listener="http://127.0.0.1:%d" % mports[i],
                                      console_write_enable="true") for i in IDS]
            zc = zk.client()
            wait_until(lambda: zc.exists(CHROOT + "/controller") and
                       sorted(int(c) for c in zc.get_children(CHROOT + "/brokers/ids")) == list(IDS), 20,
                       "brokers registered and a controller")
            wait_listed(brokers)
            md = AdminClient({"bootstrap.servers": brokers[0].bootstrap}).list_topics(timeout=10)
            wait_until(lambda: all(len(api_get(m, "/api/brokers")[1]["brokers"]) == 3 for m in mports.values()),
                       20, "every console lists three brokers")
            check_brokers(mports, md)
            log("brokers and controller as Metadata gives them, through every broker")
            check_topic(brokers, mports)
            log("partitions' leader, replicas, ISR and offsets through every broker")
            for i, mport in mports.items():
                check(is_error(api_post(mport, "/api/topics", {"name": "c7043-made", "partitions": 1}), 501),
                      "create in cluster mode -> 501 through broker %d" % i)
            md = AdminClient({"bootstrap.servers": brokers[1].bootstrap}).list_topics(timeout=10)
            check("c7043-made" not in md.topics, "nothing created")
            log("create: 501 in cluster mode")
            for b in brokers:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in brokers:
                b.dump_log()
            raise
        finally:
            for b in brokers:
                b.cleanup(keep=False)


main(test)
