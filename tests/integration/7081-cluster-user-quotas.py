"""Cluster mode: a user's quotas and SCRAM credentials share /config/users/<user>.

- A producer_byte_rate quota for user "ann" (AlterClientQuotas through
  broker 1), then a SCRAM-SHA-512 credential for ann (gregor-configs
  through broker 2): /config/users/ann holds both keys, ann's quota is
  still described by every broker and ann logs in on broker 1.
- The other order for user "bob": credential first, then a quota through
  broker 2: both survive; removing bob's quota keeps his credential.
- A quota in /config/users/carl as Kafka wrote it, then a credential for
  carl through broker 1: the quota stays, and broker 2 reads it.
- A user named dan@ex.com: credential and quota both in
  /config/users/dan%40ex.com (Kafka's sanitized name); he logs in on the
  other broker.
- A user+client-id quota is /config/users/ann/clients/app and is
  described by broker 1.
- ZooKeeper stopped: AlterClientQuotas gets REQUEST_TIMED_OUT and the
  quota described afterwards is unchanged.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import build_bin, check, eq, main, run, wait_until  # noqa: E402
from zookeeper import running_cluster, with_sasl  # noqa: E402
import quotawire as qw  # noqa: E402

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

CHROOT = "/gregor/c7081"
REQUEST_TIMED_OUT = 7


def can_login(port, user, password):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password,
            "error_cb": lambda e: None}
    try:
        AdminClient(conf).list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def add_user(b, user, password):
    r = run([build_bin("gregor-configs"), "--bootstrap-server", b.bootstrap, "--entity-type", "users",
             "--entity-name", user, "--alter", "--add-config",
             "SCRAM-SHA-512=[iterations=8192,password=%s]" % password])
    check(b"Completed updating config for user %s." % user.encode() in r.stdout, "alter: %r" % r.stdout)


def user_quota(port, user, value):
    op = ("producer_byte_rate", value or 0, value is None)
    return [r[0] for r in qw.alter(port, [([("user", user)], [op])])]


def keys(zc, path):
    return sorted(json.loads(zc.get(path)[0])["config"]) if zc.exists(path) else None


def described(port, entity):
    return qw.describe(port, [])[2].get(entity)


def test():
    ports = {}
    with running_cluster(ids=(1, 2), chroot=CHROOT, setup=with_sasl(ports, "SCRAM-SHA-512")) as (zk, zc, bs):
        b1, b2 = bs
        sasl = [ports[1], ports[2]]
        path = CHROOT + "/config/users/"

        eq(user_quota(b1.port, "ann", 5000), [0], "ann's quota through broker 1")
        add_user(b2, "ann", "ann-pw")
        wait_until(lambda: keys(zc, path + "ann") == ["SCRAM-SHA-512", "producer_byte_rate"], 10,
                   "/config/users/ann holds both (last %r)" % keys(zc, path + "ann"))
        cfg = json.loads(zc.get(path + "ann")[0])["config"]
        eq(cfg["producer_byte_rate"], "5000", "ann's quota in zookeeper")
        for b in bs:
            wait_until(lambda: described(b.port, (("user", "ann"),)) == {"producer_byte_rate": 5000.0}, 10,
                       "%s describes ann's quota" % b.bootstrap)
        wait_until(lambda: can_login(sasl[0], "ann", "ann-pw"), 10, "ann logs in on broker 1")

        add_user(b1, "bob", "bob-pw")
        wait_until(lambda: keys(zc, path + "bob") == ["SCRAM-SHA-512"], 10, "bob's credential in zookeeper")
        eq(user_quota(b2.port, "bob", 7000), [0], "bob's quota through broker 2")
        eq(sorted(json.loads(zc.get(path + "bob")[0])["config"]), ["SCRAM-SHA-512", "producer_byte_rate"],
           "/config/users/bob keys")
        wait_until(lambda: can_login(sasl[0], "bob", "bob-pw"), 10, "bob logs in on broker 1")
        eq(user_quota(b1.port, "bob", None), [0], "bob's quota removed")
        eq(sorted(json.loads(zc.get(path + "bob")[0])["config"]), ["SCRAM-SHA-512"], "bob's credential kept")
        wait_until(lambda: described(b2.port, (("user", "bob"),)) is None, 10, "bob's quota gone on broker 2")
        check(can_login(sasl[1], "bob", "bob-pw"), "bob still logs in on broker 2")

        # a quota Kafka wrote (no notification left): a credential added later keeps it
        zc.create(path + "carl", json.dumps({"version": 1, "config": {"consumer_byte_rate": "3000"}}).encode())
        add_user(b1, "carl", "carl-pw")
        wait_until(lambda: keys(zc, path + "carl") == ["SCRAM-SHA-512", "consumer_byte_rate"], 10,
                   "carl's quota kept beside his credential (last %r)" % keys(zc, path + "carl"))
        wait_until(lambda: described(b2.port, (("user", "carl"),)) == {"consumer_byte_rate": 3000.0}, 10,
                   "broker 2 read carl's quota with his credential's notification")

        # names are sanitized as Kafka's Sanitizer does, the same for credentials and quotas
        add_user(b1, "dan@ex.com", "dan-pw")
        eq(user_quota(b2.port, "dan@ex.com", 6000), [0], "dan@ex.com's quota")
        wait_until(lambda: keys(zc, path + "dan%40ex.com") == ["SCRAM-SHA-512", "producer_byte_rate"], 10,
                   "/config/users/dan%%40ex.com holds both (last %r)" % keys(zc, path + "dan%40ex.com"))
        wait_until(lambda: can_login(sasl[1], "dan@ex.com", "dan-pw"), 10, "dan@ex.com logs in on broker 2")
        wait_until(lambda: described(b1.port, (("user", "dan@ex.com"),)) == {"producer_byte_rate": 6000.0}, 10,
                   "broker 1 describes dan@ex.com's quota")

        res = qw.alter(b2.port, [([("user", "ann"), ("client-id", "app")], [("request_percentage", 25.5, False)])])
        eq([r[0] for r in res], [0], "ann/app quota")
        eq(json.loads(zc.get(path + "ann/clients/app")[0])["config"], {"request_percentage": "25.5"},
           "/config/users/ann/clients/app")
        wait_until(lambda: described(b1.port, (("client-id", "app"), ("user", "ann"))) ==
                   {"request_percentage": 25.5}, 10, "broker 1 describes ann/app")

        ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
        zk.stop()
        last = {}

        def timed_out():
            last["r"] = user_quota(b2.port, "ann", 9000)
            return last["r"] == [REQUEST_TIMED_OUT]
        wait_until(timed_out, 30, "REQUEST_TIMED_OUT without zookeeper (last %r)" % last)
        for b in bs:
            eq(described(b.port, (("user", "ann"),)), {"producer_byte_rate": 5000.0},
               "%s: ann's quota unchanged" % b.bootstrap)
        for b in sorted(bs, key=lambda b: bs.index(b) + 1 == ctl):  # the controller last: the other asks it
            eq(b.stop(), 0, "exit status of %s" % b.bootstrap)


if __name__ == "__main__":
    main(test)
