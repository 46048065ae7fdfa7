"""Cluster mode: SCRAM users live in ZooKeeper as in Kafka's ZooKeeper
mode. A user created with gregor-configs through broker 1 is written to
/config/users/<user> ({"version":1,"config":{"SCRAM-SHA-512":"salt=...,
stored_key=...,server_key=...,iterations=8192"}}) with a
/config/changes/config_change_<n> naming "users/<user>", and logs in over
SASL_PLAINTEXT on broker 2; DescribeUserScramCredentials through broker 2
shows it; deleted through broker 2 it can no longer log in on broker 1;
a user created while broker 1 is down logs in on it after its restart; a
user whose /config/users znode Kafka wrote without a notification left
(Kafka purges them after 15 minutes) logs in once the broker starts;
with ZooKeeper gone an alteration is refused (UNKNOWN_SERVER_ERROR) and
changes nothing."""

import base64
import hashlib
import hmac
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import build_bin, check, eq, main, run, wait_until  # noqa: E402
from zookeeper import running_cluster, with_sasl  # noqa: E402
import scramwire as sw  # noqa: E402

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

CHROOT = "/gregor/c6083"


def can_login(port, user, password, mech="SCRAM-SHA-512"):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password,
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


def kafka_user_doc(password, iterations=4096):
    """/config/users/<u> as Kafka's ZooKeeper mode writes it, for SCRAM-SHA-256."""
    salt = os.urandom(20)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", hashlib.sha256).digest()).digest()
    server = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    cred = "salt=%s,stored_key=%s,server_key=%s,iterations=%d" % (b64(salt), b64(stored), b64(server), iterations)
    return json.dumps({"version": 1, "config": {"SCRAM-SHA-256": cred}}).encode()


def test():
    ports = {}
    with running_cluster(ids=(1, 2), chroot=CHROOT, setup=with_sasl(ports, "SCRAM-SHA-512,SCRAM-SHA-256")) as (zk, zc, bs):
        b1, b2 = bs
        sasl = [ports[1], ports[2]]
        check(not can_login(sasl[1], "carl", "carl-pw"), "no such user yet")
        add_user(b1, "carl", "carl-pw")
        wait_until(lambda: zc.exists(CHROOT + "/config/users/carl"), 5, "/config/users/carl")
        doc = json.loads(zc.get(CHROOT + "/config/users/carl")[0])
        eq(sorted(doc["config"]), ["SCRAM-SHA-512"], "mechanisms in /config/users/carl")
        cred = dict(kv.split("=", 1) for kv in doc["config"]["SCRAM-SHA-512"].split(","))
        eq(sorted(cred), ["iterations", "salt", "server_key", "stored_key"], "Kafka's credential fields")
        eq(cred["iterations"], "8192", "iterations")
        eq(doc["version"], 1, "version")
        notes = [json.loads(zc.get(CHROOT + "/config/changes/" + n)[0])
                 for n in sorted(zc.get_children(CHROOT + "/config/changes"))]
        check({"version": 2, "entity_path": "users/carl"} in notes, "notification: %r" % notes)
        wait_until(lambda: can_login(sasl[1], "carl", "carl-pw"), 10, "carl logs in on broker 2")
        check(not can_login(sasl[1], "carl", "wrong"), "a wrong password on broker 2")
        eq(sw.describe(b2.port, ["carl"])[1], [("carl", 0, None, [(sw.SHA512, 8192)])], "described on 2")

        eq(sw.alter(b2.port, deletions=[("carl", sw.SHA512)]), [("carl", 0, None)], "deleted through 2")
        wait_until(lambda: not can_login(sasl[0], "carl", "carl-pw"), 10, "carl refused on broker 1")
        eq(json.loads(zc.get(CHROOT + "/config/users/carl")[0])["config"], {}, "no credential left in zookeeper")

        eq(b1.stop(), 0, "exit status of broker 1")
        zc.create(CHROOT + "/config/users/eve", kafka_user_doc("eve-pw"))
        add_user(b2, "dora", "dora-pw")
        time.sleep(0.5)
        b1.start()
        wait_until(lambda: can_login(sasl[0], "dora", "dora-pw"), 15, "dora logs in on restarted broker 1")
        check(not can_login(sasl[0], "carl", "carl-pw"), "carl still refused after the restart")
        check(can_login(sasl[0], "eve", "eve-pw", "SCRAM-SHA-256"), "eve (no notification) on restarted broker 1")
        check(not can_login(sasl[1], "eve", "eve-pw", "SCRAM-SHA-256"), "broker 2 has not read eve's znode")

        zk.stop()
        last = {}

        def refused():
            last["r"] = sw.alter(b2.port, upsertions=[sw.upsertion("fay", sw.SHA512, "fay-pw")])
            return last["r"][0][1] == -1
        wait_until(refused, 20, "alteration refused without zookeeper (last %r)" % last)
        eq(sw.describe(b2.port, ["fay"])[1][0][1], 91, "fay not created")
        for b in bs:
            eq(b.stop(), 0, "exit status of %s" % b.bootstrap)


if __name__ == "__main__":
    main(test)
