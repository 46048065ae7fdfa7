"""Cluster mode: a topic's config changed through one broker reaches every
broker, as in Kafka's ZooKeeper mode: AlterConfigs / IncrementalAlterConfigs
write /config/topics/<t> and a sequential /config/changes/config_change_<n>
({"version":2,"entity_path":"topics/<t>"}), and each broker applies the
topic's overrides to its replicas when it sees the notification.

ZooKeeper and three brokers in the chroot /gregor/c62; kazoo reads the
znodes; the admin requests are raw (kwire) so each goes to the broker named.

  1. a topic of 6 partitions (every broker holds some); AlterConfigs v0
     through broker 1 sets retention.ms and cleanup.policy: /config/topics/<t>
     holds both, a config_change_ notification names the topic, and
     DescribeConfigs through broker 3 (and 2) shows both as topic overrides
     within a few seconds (each broker used to change only its own copy)
  2. IncrementalAlterConfigs v0 through broker 2 sets retention.ms again and
     deletes cleanup.policy: broker 1 and 3 show the new retention.ms and
     cleanup.policy back at its default
  3. broker 3 restarted keeps the overrides (its topic.properties was written)
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c62"
SESSION = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 2000}
TOPIC = "conf6"
TOPIC_TYPE = 2


def create(b, topic, nparts):
    eq(kwire.create_topic(b.port, topic, nparts)[0], 0, "CreateTopics of %s" % topic)


def alter_result(r, what):
    r.i32()
    res = r.array(lambda r: (r.i16(), r.string(), r.i8(), r.string()))
    eq([(e, n) for e, _, _, n in res], [(0, TOPIC)], what + " (%r)" % res)


def alter(b, configs):
    body = kwire.array([TOPIC], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array(
        sorted(configs.items()), lambda kv: kwire.string(kv[0]) + kwire.string(kv[1]))) + kwire.i8(0)
    alter_result(kwire.call(b.port, 33, 0, body), "AlterConfigs through %s" % b.bootstrap)


def incremental(b, ops):
    """ops: [(name, op, value)], op 0 SET, 1 DELETE."""
    body = kwire.array([TOPIC], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array(
        ops, lambda o: kwire.string(o[0]) + kwire.i8(o[1]) + kwire.string(o[2]))) + kwire.i8(0)
    alter_result(kwire.call(b.port, 44, 0, body), "IncrementalAlterConfigs through %s" % b.bootstrap)


def describe(b, keys):
    """{name: (value, is_default)} of DescribeConfigs v0 for the topic through b."""
    body = kwire.array([TOPIC], lambda t: kwire.i8(TOPIC_TYPE) + kwire.string(t) + kwire.array(keys, kwire.string))
    r = kwire.call(b.port, 32, 0, body)
    r.i32()

    def result(r):
        err, _, _, name = r.i16(), r.string(), r.i8(), r.string()
        cfgs = r.array(lambda r: (r.string(), r.string(), r.i8(), r.i8(), r.i8()))
        return err, name, {c[0]: (c[1], bool(c[3])) for c in cfgs}
    res = r.array(result)
    eq([(e, n) for e, n, _ in res], [(0, TOPIC)], "DescribeConfigs through %s" % b.bootstrap)
    return res[0][2]


def zjson(zc, path):
    return json.loads(zc.get(CHROOT + path)[0])


def wait_shown(b, want, what):
    last = {}

    def ok():
        last["got"] = describe(b, sorted(want))
        return last["got"] == want
    wait_until(ok, 5, "%s through %s (last %r)" % (what, b.bootstrap, last))


def test():
    with running_cluster((1, 2, 3), CHROOT, **SESSION) as (zk, zc, brokers):
        b1, b2, b3 = brokers
        wait_until(lambda: zc.exists(CHROOT + "/controller") and
                   len(zc.get_children(CHROOT + "/brokers/ids")) == 3, 20, "three brokers and a controller")
        wait_listed(brokers)
        create(b1, TOPIC, 6)
        a = zjson(zc, "/brokers/topics/" + TOPIC)["partitions"]
        eq(sorted(set(r[0] for r in a.values())), [1, 2, 3], "every broker holds a partition")
        wait_until(lambda: all(os.path.isdir(brokers[r[0] - 1].partition_dir(TOPIC, int(p))) for p, r in a.items())
                   and all(os.path.isdir(b.partition_dir(TOPIC, 0)) and describe_ok(b) for b in brokers), 15,
                   "every broker made its partitions (a topic's files are done once <t>-0 is there)")

        alter(b1, {"retention.ms": "3600000", "cleanup.policy": "compact"})
        # the request is answered once broker 1 applied it; ZooKeeper takes it a round trip later
        want_zk = {"version": 1, "config": {"retention.ms": "3600000", "cleanup.policy": "compact"}}
        wait_until(lambda: zjson(zc, "/config/topics/" + TOPIC) == want_zk, 5, "/config/topics/%s" % TOPIC)
        changes = sorted(zc.get_children(CHROOT + "/config/changes"))
        check(changes and changes[-1].startswith("config_change_") and len(changes[-1]) == 24,
              "a sequential config_change_ notification: %r" % changes)
        eq(zjson(zc, "/config/changes/" + changes[-1]), {"version": 2, "entity_path": "topics/" + TOPIC},
           "the notification")
        want = {"retention.ms": ("3600000", False), "cleanup.policy": ("compact", False)}
        for b in (b3, b2):
            wait_shown(b, want, "the overrides set through broker 1")
        log("AlterConfigs through broker 1 seen through brokers 2 and 3")

        incremental(b2, [("retention.ms", 0, "7200000"), ("cleanup.policy", 1, None)])
        want = {"retention.ms": ("7200000", False), "cleanup.policy": ("delete", True)}
        for b in (b1, b3):
            wait_shown(b, want, "the overrides changed through broker 2")
        wait_until(lambda: zjson(zc, "/config/topics/" + TOPIC)["config"] == {"retention.ms": "7200000"}, 5,
                   "overrides in zookeeper")
        log("IncrementalAlterConfigs through broker 2 seen through brokers 1 and 3")

        eq(b3.stop(), 0, "exit status of broker 3")
        b3.start()
        wait_until(lambda: describe_ok(b3), 20, "broker 3 back")
        wait_shown(b3, want, "after a restart")


def describe_ok(b):
    try:
        describe(b, ["retention.ms"])
        return True
    except (AssertionError, OSError):
        return False


if __name__ == "__main__":
    main(test)
