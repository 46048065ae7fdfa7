"""Cluster mode: client quotas live in ZooKeeper as in Kafka's ZooKeeper mode.

- A producer_byte_rate quota for client-id "slow" set through broker 1
  (AlterClientQuotas, raw) is written to /config/clients/slow
  ({"version":1,"config":{"producer_byte_rate":"2048"}}) with a
  /config/changes notification naming "clients/slow", and is enforced by
  brokers 2 and 3: producers with that client-id writing to partitions
  led by broker 2 and by broker 3 get throttle_time_ms > 0 from them
  (librdkafka's throttle_cb names the broker), while a client-id without
  a quota is not throttled.
- A <default> client-id quota set with gregor-configs through broker 3 is
  /config/clients/<default>, and DescribeClientQuotas through broker 2
  shows both.
- A broker started later (4) knows both quotas from ZooKeeper: its
  DescribeClientQuotas shows them and it throttles "slow"; it also reads
  a user+client-id znode no notification names
  (/config/users/zed%2Fx/clients/z%20app: Kafka's sanitized names), which
  the brokers already running do not see.
- A quota removed through broker 2 is gone from every broker's answer.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import build_bin, check, eq, log, main, run, wait_until  # noqa: E402
from zookeeper import cluster_broker, running_cluster, wait_listed  # noqa: E402
import quotawire as qw  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

CHROOT = "/gregor/c7080"
QUOTA = 2048


def throttled_by(bootstrap, topic, client_id, run_s=4.0):
    """Produces 1 KB records to topic for up to run_s; the broker ids that reported throttle time > 0."""
    seen = set()

    def on_throttle(ev):
        if ev.throttle_time > 0:
            seen.add(ev.broker_id)
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "acks": 1,
                  "throttle_cb": on_throttle, "queue.buffering.max.kbytes": 1024})
    t0 = time.monotonic()
    while time.monotonic() - t0 < run_s and not seen:
        try:
            p.produce(topic, b"q" * 1024)
        except BufferError:
            pass
        p.poll(0.01)
    p.purge()
    p.flush(10)
    return seen


def describe_all(port):
    err, _, got = qw.describe(port, [])
    eq(err, 0, "DescribeClientQuotas error")
    return got


def test():
    with running_cluster((1, 2, 3), CHROOT) as (zk, zc, bs):
        b1, b2, b3 = bs
        wait_listed(bs)
        a = AdminClient({"bootstrap.servers": b1.bootstrap})
        fs = a.create_topics([NewTopic("q-on-2", 1, replica_assignment=[[2]]),
                              NewTopic("q-on-3", 1, replica_assignment=[[3]])])
        for f in fs.values():
            f.result(15)
        res = qw.alter(b1.port, [([("client-id", "slow")], [("producer_byte_rate", QUOTA, False)])])
        eq([r[0] for r in res], [0], "AlterClientQuotas through broker 1")
        doc = json.loads(zc.get(CHROOT + "/config/clients/slow")[0])
        eq(doc, {"version": 1, "config": {"producer_byte_rate": str(QUOTA)}}, "/config/clients/slow")
        notes = [json.loads(zc.get(CHROOT + "/config/changes/" + n)[0])
                 for n in zc.get_children(CHROOT + "/config/changes")]
        check({"version": 2, "entity_path": "clients/slow"} in notes, "notification: %r" % notes)
        want = {(("client-id", "slow"),): {"producer_byte_rate": float(QUOTA)}}
        for b in (b2, b3):
            wait_until(lambda: describe_all(b.port) == want, 10, "broker %s describes the quota" % b.bootstrap)
        eq(throttled_by(b2.bootstrap, "q-on-2", "slow"), {2}, "broker 2 throttles client-id slow")
        eq(throttled_by(b3.bootstrap, "q-on-3", "slow"), {3}, "broker 3 throttles client-id slow")
        eq(throttled_by(b2.bootstrap, "q-on-2", "fast", 2.0), set(), "client-id fast is not throttled")

        r = run([build_bin("gregor-configs"), "--bootstrap-server", b3.bootstrap, "--entity-type", "clients",
                 "--entity-default", "--alter", "--add-config", "consumer_byte_rate=4096"])
        eq(r.stdout, b"Completed updating default config for clients in the cluster.\n", "gregor-configs on 3")
        eq(json.loads(zc.get(CHROOT + "/config/clients/<default>")[0])["config"], {"consumer_byte_rate": "4096"},
           "/config/clients/<default>")
        want[(("client-id", None),)] = {"consumer_byte_rate": 4096.0}
        wait_until(lambda: describe_all(b2.port) == want, 10, "broker 2 describes the default quota")
        r = run([build_bin("gregor-configs"), "--bootstrap-server", b2.bootstrap, "--entity-type", "clients",
                 "--entity-default", "--describe"])
        eq(r.stdout, b"Quota configs for the default client-id are consumer_byte_rate=4096.0\n", "described on 2")

        # as Kafka leaves it once its notification was purged: only broker 4 reads it, at its start
        zc.create(CHROOT + "/config/users/zed%2Fx/clients/z%20app",
                  json.dumps({"version": 1, "config": {"request_percentage": "12.5"}}).encode(), makepath=True)
        b4 = cluster_broker(zk.connect, 4, CHROOT)
        try:
            zed = dict(want)
            zed[(("client-id", "z app"), ("user", "zed/x"))] = {"request_percentage": 12.5}
            wait_until(lambda: describe_all(b4.port) == zed, 15, "broker 4, started later, knows the quotas")
            eq(describe_all(b1.port), want, "broker 1 was not told of zed's")
            log("broker 4 describes %r" % describe_all(b4.port))
            a.create_topics([NewTopic("q-on-4", 1, replica_assignment=[[4]])])["q-on-4"].result(15)
            eq(throttled_by(b4.bootstrap, "q-on-4", "slow"), {4}, "broker 4 throttles client-id slow")

            res = qw.alter(b2.port, [([("client-id", "slow")], [("producer_byte_rate", 0, True)])])
            eq([r[0] for r in res], [0], "removed through broker 2")
            del want[(("client-id", "slow"),)]
            for b in (b1, b2, b3):
                wait_until(lambda: describe_all(b.port) == want, 10, "%s: the quota is gone" % b.bootstrap)
            want[(("client-id", "z app"), ("user", "zed/x"))] = {"request_percentage": 12.5}
            wait_until(lambda: describe_all(b4.port) == want, 10, "broker 4: the quota is gone")
            eq(b4.stop(), 0, "exit status of broker 4")
        finally:
            b4.cleanup(keep=False)


if __name__ == "__main__":
    main(test)
