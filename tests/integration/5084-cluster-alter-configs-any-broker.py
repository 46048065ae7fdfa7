"""Cluster mode: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs of
a topic work through any broker, as in Kafka's ZooKeeper mode, and the
alterations are answered only once ZooKeeper holds the change.

ZooKeeper and three brokers in the chroot /gregor/c84; raw requests (kwire)
so each goes to the broker named; kazoo reads the znodes.

  1. a topic of one partition (one replica): IncrementalAlterConfigs through
     a broker holding no replica of it succeeds, /config/topics/<t> holds the
     override the moment the answer is back, the broker holding the
     replica shows it (DescribeConfigs) within a few seconds, and so does
     DescribeConfigs through the other non-replica (read from ZooKeeper)
  2. AlterConfigs through another non-replica replaces the overrides
     (retention.ms set, the earlier override gone) in ZooKeeper
  3. an invalid value: INVALID_CONFIG, ZooKeeper unchanged; an unknown topic:
     UNKNOWN_TOPIC_OR_PARTITION
  4. ZooKeeper stopped: the broker holding the replica answers
     REQUEST_TIMED_OUT and keeps its config (it used to answer success and
     change only itself); ZooKeeper back: the change goes through
  5. notifications are purged 15 minutes after they were made, as Kafka's
     brokers do: a broker restarted with its wall clock 20 minutes ahead
     (Debian's libfaketime; its monotonic clock left alone) deletes every
     /config/changes notification; changes go on
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c84"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
SESSION = {"zookeeper_session_timeout_ms": 20000, "zookeeper_connection_timeout_ms": 1000}
TOPIC = "lone"
TOPIC_TYPE = 2


def result(r):
    r.i32()
    return [(e, n) for e, _, _, n in r.array(lambda r: (r.i16(), r.string(), r.i8(), r.string()))]


def incremental(b, topic, ops):
    """ops: [(name, op, value)], op 0 SET, 1 DELETE -> [(error, topic)]."""
    body = kwire.array([topic], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array(
        ops, lambda o: kwire.string(o[0]) + kwire.i8(o[1]) + kwire.string(o[2]))) + kwire.i8(0)
    return result(kwire.call(b.port, 44, 0, body))


def alter(b, topic, configs):
    body = kwire.array([topic], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array(
        sorted(configs.items()), lambda kv: kwire.string(kv[0]) + kwire.string(kv[1]))) + kwire.i8(0)
    return result(kwire.call(b.port, 33, 0, body))


def describe(b, key):
    """(value, is_default) of one key through b, or None if b answers an error."""
    body = kwire.array([TOPIC], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array([key], kwire.string))
    r = kwire.call(b.port, 32, 0, body)
    r.i32()

    def res(r):
        err, _, _, _ = r.i16(), r.string(), r.i8(), r.string()
        cfgs = r.array(lambda r: (r.string(), r.string(), r.i8(), r.i8(), r.i8()))
        return err, {c[0]: (c[1], bool(c[3])) for c in cfgs}
    err, cfgs = r.array(res)[0]
    return None if err else cfgs.get(key)


def overrides(zc):
    return json.loads(zc.get(CHROOT + "/config/topics/" + TOPIC)[0])["config"]


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        wait_listed(brokers)
        eq(kwire.create_topic(brokers[0].port, TOPIC, 1)[0], 0, "CreateTopics")
        holder_id = json.loads(zc.get(CHROOT + "/brokers/topics/" + TOPIC)[0])["partitions"]["0"][0]
        holder = brokers[holder_id - 1]
        others = [b for b in brokers if b is not holder]
        wait_until(lambda: describe(holder, "retention.ms") is not None, 15, "the replica made")
        eq(describe(others[0], "retention.ms"), ("604800000", True), "DescribeConfigs through a non-replica")

        eq(incremental(others[0], TOPIC, [("segment.ms", 0, "600000")]), [(0, TOPIC)],
           "IncrementalAlterConfigs through a non-replica")
        eq(overrides(zc), {"segment.ms": "600000"}, "/config/topics/%s right after the answer" % TOPIC)
        wait_until(lambda: describe(holder, "segment.ms") == ("600000", False), 5, "the replica applied it")
        eq(describe(others[1], "segment.ms"), ("600000", False), "DescribeConfigs through the other non-replica")
        log("IncrementalAlterConfigs through broker %s reached broker %d" % (others[0].bootstrap, holder_id))

        eq(alter(others[1], TOPIC, {"retention.ms": "3600000"}), [(0, TOPIC)], "AlterConfigs through a non-replica")
        eq(overrides(zc), {"retention.ms": "3600000"}, "AlterConfigs replaced the overrides")
        wait_until(lambda: describe(holder, "segment.ms") == ("604800000", True) and
                   describe(holder, "retention.ms") == ("3600000", False), 5, "the replica applied the replacement")

        eq(incremental(others[0], TOPIC, [("retention.ms", 0, "soon")]), [(40, TOPIC)], "an invalid value")
        eq(overrides(zc), {"retention.ms": "3600000"}, "overrides after the invalid value")
        eq(incremental(others[0], "nosuch", [("retention.ms", 0, "1000")]), [(3, "nosuch")], "an unknown topic")

        zk.stop()
        wait_until(lambda: "zookeeper" in holder.log_text().split("=== gregor-itest")[-1].lower() and
                   incremental(holder, TOPIC, [("retention.ms", 0, "7200000")]) == [(7, TOPIC)], 20,
                   "REQUEST_TIMED_OUT while ZooKeeper is down")
        eq(describe(holder, "retention.ms"), ("3600000", False), "the replica kept its config")
        zk.start()
        wait_until(lambda: incremental(holder, TOPIC, [("retention.ms", 0, "7200000")]) == [(0, TOPIC)], 30,
                   "the change once ZooKeeper is back")
        eq(overrides(zc), {"retention.ms": "7200000"}, "overrides after ZooKeeper came back")
        purge(zc, brokers, holder)


def purge(zc, brokers, holder):
    changes = CHROOT + "/config/changes"
    n = len(zc.get_children(changes))
    check(n >= 3, "notifications so far: %d" % n)
    other = next(b for b in brokers if b is not holder)
    eq(other.stop(), 0, "exit status of broker %s" % other.bootstrap)
    other.env = {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "+20m", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                 "FAKETIME_NO_CACHE": "1"}
    other.start()
    wait_until(lambda: not zc.get_children(changes), 20, "every notification purged (%d were there)" % n)
    log("%d notifications purged by the broker 20 minutes ahead" % n)
    eq(incremental(holder, TOPIC, [("retention.ms", 0, "9000000")]), [(0, TOPIC)], "a change after the purge")
    eq(overrides(zc), {"retention.ms": "9000000"}, "overrides after the purge")


if __name__ == "__main__":
    main(test)
