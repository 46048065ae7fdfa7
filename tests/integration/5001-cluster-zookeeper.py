"""Cluster mode through ZooKeeper: three brokers register, one is controller,
every broker's Metadata lists all of them, and the cluster survives the loss
of its controller, of ZooKeeper and of a session.

ZooKeeper is Debian's server (tests/lib/zookeeper.py, mk/zookeeper.sh) on a
free loopback port; brokers use the chroot /gregor/c1 (created by them) and a
3 s session timeout so that failures are noticed within the test.

  1. brokers 1, 2, 3 register (3 advertising "localhost" for 127.0.0.1);
     their znodes have Kafka's JSON shapes (kazoo)
  2. Metadata from each (confluent_kafka, kcat -L -J, kafka-python for racks)
     lists all three, the same controller and /cluster/id
  3. a second broker.id 2 stops with exit status 2 and says why
  4. kill -9 of the controller: another is elected, /controller_epoch grows;
     the killed broker starts again and rejoins
  5. ZooKeeper stopped for 2 s and started again: each broker gives its
     connection up after zookeeper.connection.timeout.ms (1 s), retries, and
     is registered again; none restarted or crashed
  6. a broker frozen past its session timeout (SIGSTOP) gets a new session
     and registers again by itself
  7. a broker whose zookeeper.connect points nowhere keeps serving, logs each
     retry with a growing backoff and uses almost no CPU (no busy loop)
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

from gregor import BrokerError, check, eq, free_port, log, main, run, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, cpu_seconds  # noqa: E402

CHROOT = "/gregor/c1"
SESSION = {"zookeeper_session_timeout_ms": 3000, "zookeeper_connection_timeout_ms": 1000}
RACKS = {1: "rack-a", 2: "rack-b"}  # broker 3 has none
ADVERTISED = {3: "localhost"}  # broker 3 advertises another host name than it listens on
V5_KEYS = {"features", "listener_security_protocol_map", "endpoints", "jmx_port", "host", "port", "timestamp",
           "version"}


def advertised(b):
    """host:port a broker registers and every Metadata reports for it."""
    return "%s:%d" % (ADVERTISED.get(int(b.overrides["broker.id"]), b.host), b.port)


def zget(zc, path):
    data, stat = zc.get(CHROOT + path)
    return data, stat


def registered(zc):
    return sorted(int(c) for c in zc.get_children(CHROOT + "/brokers/ids"))


def controller_of(zc):
    """(broker id, epoch) from /controller and /controller_epoch, or None while vacant."""
    from kazoo.exceptions import NoNodeError
    try:  # /controller may go between two reads
        return json.loads(zget(zc, "/controller")[0])["brokerid"], int(zget(zc, "/controller_epoch")[0])
    except NoNodeError:
        return None


def check_znodes(zc, brokers):
    """Kafka's JSON shapes, read back with kazoo."""
    cid = json.loads(zget(zc, "/cluster/id")[0])
    eq(sorted(cid), ["id", "version"], "/cluster/id keys")
    eq(cid["version"], "1", "/cluster/id version")
    eq(len(cid["id"]), 22, "/cluster/id id length (base64 uuid)")
    for b in brokers:
        bid = int(b.overrides["broker.id"])
        data, stat = zget(zc, "/brokers/ids/%d" % bid)
        reg = json.loads(data)
        check(stat.ephemeralOwner != 0, "/brokers/ids/%d is not ephemeral" % bid)
        eq(set(reg), V5_KEYS | ({"rack"} if bid in RACKS else set()), "/brokers/ids/%d keys" % bid)
        eq(reg["version"], 5, "registration version")
        eq(reg["endpoints"], ["PLAINTEXT://%s" % advertised(b)], "endpoints of %d" % bid)
        eq(reg["listener_security_protocol_map"], {"PLAINTEXT": "PLAINTEXT"}, "protocol map")
        eq(("%s:%d" % (reg["host"], reg["port"]), reg["jmx_port"]), (advertised(b), -1), "host, port, jmx_port")
        check(isinstance(reg["timestamp"], str) and abs(int(reg["timestamp"]) / 1000 - time.time()) < 120,
              "timestamp %r is not the registration time in ms, as a string" % reg["timestamp"])
        eq(reg.get("rack"), RACKS.get(bid), "rack of %d" % bid)
    ctl = json.loads(zget(zc, "/controller")[0])
    eq(sorted(ctl), ["brokerid", "timestamp", "version"], "/controller keys")
    eq(ctl["version"], 1, "/controller version")
    check(zget(zc, "/controller")[1].ephemeralOwner != 0, "/controller is not ephemeral")
    check(int(zget(zc, "/controller_epoch")[0]) >= 1, "/controller_epoch")
    for p in ("/brokers/topics", "/brokers/seqid", "/config/topics", "/config/changes", "/admin/delete_topics",
              "/isr_change_notification", "/latest_producer_id_block"):
        check(zc.exists(CHROOT + p), "%s missing" % p)
    return cid["id"]


def check_metadata(b, want, controller, cluster_id):
    """Metadata from broker b with three clients: want = the live Broker objects."""
    want_ids = {int(x.overrides["broker.id"]): x for x in want}
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
    eq({i: "%s:%d" % (m.host, m.port) for i, m in md.brokers.items()}, {i: advertised(x) for i, x in want_ids.items()},
       "confluent_kafka brokers from %s" % b.bootstrap)
    eq(md.controller_id, controller, "confluent_kafka controller from %s" % b.bootstrap)
    eq(md.cluster_id, cluster_id, "confluent_kafka cluster id from %s" % b.bootstrap)
    k = json.loads(run(["kcat", "-b", b.bootstrap, "-L", "-J"], timeout_s=20).stdout)
    eq(sorted((x["id"], x["name"]) for x in k["brokers"]), sorted((i, advertised(x)) for i, x in want_ids.items()),
       "kcat brokers from %s" % b.bootstrap)
    eq(k["controllerid"], controller, "kcat controller from %s" % b.bootstrap)


def check_racks(b, want):
    adm = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    try:
        cl = adm.describe_cluster()
    finally:
        adm.close()
    eq(sorted((x["node_id"], x["rack"]) for x in cl["brokers"]),
       sorted((int(x.overrides["broker.id"]), RACKS.get(int(x.overrides["broker.id"]))) for x in want),
       "kafka-python brokers and racks")


def duplicate_id(zk):
    """A broker.id held by a live broker: exit status 2 and a clear message."""
    dup = cluster_broker(zk.connect, 2, CHROOT, start=False, **SESSION)
    try:
        try:
            dup.start()
        except BrokerError:
            pass  # it may exit before its port is seen accepting
        if dup.proc:
            dup.proc.wait(timeout=15)
            dup.last_returncode = dup.proc.returncode
            dup.proc = None
        eq(dup.last_returncode, 2, "exit status of a second broker.id 2")
        check("broker.id 2 is already registered" in dup.log_text(), "no clear message:\n" + dup.log_tail())
    finally:
        dup.cleanup()


def controller_failover(zc, brokers, cluster_id):
    ctl, epoch = controller_of(zc)
    victim = next(b for b in brokers if int(b.overrides["broker.id"]) == ctl)
    victim.kill9()
    log("killed controller %d (epoch %d)" % (ctl, epoch))
    new = wait_until(lambda: (c := controller_of(zc)) and c[0] != ctl and c, 20, "a new controller")
    check(new[1] > epoch, "controller epoch %d did not grow past %d" % (new[1], epoch))
    eq(registered(zc), sorted(int(b.overrides["broker.id"]) for b in brokers if b is not victim),
       "registered after the kill")
    live = [b for b in brokers if b is not victim]
    wait_until(lambda: len(AdminClient({"bootstrap.servers": live[0].bootstrap}).list_topics(timeout=10).brokers)
               == 2, 10, "Metadata to drop the dead broker")
    for b in live:
        check_metadata(b, live, new[0], cluster_id)
    log("broker %d is controller, epoch %d" % new)
    victim.start()
    wait_until(lambda: registered(zc) == [1, 2, 3], 15, "the killed broker to register again")


def zookeeper_outage(zk, zc, brokers):
    marks = [b.log_size() for b in brokers]
    zk.stop()
    time.sleep(2)
    for b in brokers:
        check(b.alive(), "broker %s died without zookeeper" % b.bootstrap)
        # the cache keeps the last membership it read (as Kafka's metadata cache does)
        md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
        eq(sorted(md.brokers), [1, 2, 3], "Metadata brokers of %s while zookeeper is down" % b.bootstrap)
    zk.start()
    for b, m in zip(brokers, marks):
        b.wait_log("lost the connection to zookeeper", 10, since=m)
        b.wait_log("cannot reach zookeeper", 10, since=m)  # gave the handle up after 1 s, retried
        b.wait_log("connected to zookeeper", 20, since=m)
    wait_until(lambda: registered(zc) == [1, 2, 3] and controller_of(zc), 20, "all registered after the outage")
    for b in brokers:
        check(b.alive(), "broker %s died after the outage" % b.bootstrap)


def session_expiry(zc, brokers):
    b = next(x for x in brokers if int(x.overrides["broker.id"]) != controller_of(zc)[0])
    bid = int(b.overrides["broker.id"])
    owner = zget(zc, "/brokers/ids/%d" % bid)[1].ephemeralOwner
    mark = b.log_size()
    os.kill(b.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: bid not in registered(zc), 15, "the frozen broker's session to expire")
    finally:
        os.kill(b.pid, signal.SIGCONT)
    b.wait_log("expired", 15, since=mark)
    wait_until(lambda: bid in registered(zc), 15, "re-registration after expiry")
    check(zget(zc, "/brokers/ids/%d" % bid)[1].ephemeralOwner != owner, "registered again under a new session")


def unreachable_checks(lost, t_start):
    """The broker started against a port where no ZooKeeper listens."""
    text = lost.log_text()
    tries = [ln for ln in text.splitlines() if "cannot reach zookeeper at 127.0.0.1:" in ln]
    check(len(tries) >= 3, "expected at least 3 retry lines:\n" + lost.log_tail())
    waits = [int(ln.rsplit("retrying in ", 1)[1].split()[0]) for ln in tries]
    eq(waits[:3], [1000, 2000, 4000], "backoff of the retries")
    cpu = cpu_seconds(lost.pid)
    check(cpu < 1.5, "%.2f s of CPU in %.0f s waiting for zookeeper: a busy loop?" % (cpu, time.monotonic() - t_start))
    md = AdminClient({"bootstrap.servers": lost.bootstrap}).list_topics(timeout=10)
    eq((list(md.brokers), md.controller_id), ([9], -1), "Metadata of a broker without zookeeper")
    log("unreachable zookeeper: %d retries logged, %.2f s CPU" % (len(tries), cpu))


def test():
    lost = cluster_broker("127.0.0.1:%d" % free_port(), 9, zookeeper_connection_timeout_ms=500)
    t_lost = time.monotonic()
    brokers = []
    with ZooKeeper() as zk:
        try:
            zc = zk.client()
            brokers = [cluster_broker(zk.connect, i, CHROOT, broker_rack=RACKS[i], **SESSION) for i in (1, 2)]
            b3 = cluster_broker(zk.connect, 3, CHROOT, start=False, **SESSION)
            b3.overrides["advertised.listeners"] = "PLAINTEXT://%s:%d" % (ADVERTISED[3], b3.port)
            brokers.append(b3.start())
            wait_until(lambda: registered(zc) == [1, 2, 3] and controller_of(zc), 15, "three brokers registered")
            cluster_id = check_znodes(zc, brokers)
            ctl = controller_of(zc)[0]
            for b in brokers:
                check_metadata(b, brokers, ctl, cluster_id)
            check_racks(brokers[0], brokers)
            log("3 brokers registered, controller %d, cluster %s" % (ctl, cluster_id))
            duplicate_id(zk)
            controller_failover(zc, brokers, cluster_id)
            zookeeper_outage(zk, zc, brokers)
            log("every broker registered again after zookeeper came back")
            session_expiry(zc, brokers)
            wait_until(lambda: registered(zc) == [1, 2, 3] and controller_of(zc), 10, "cluster whole again")
            for b in brokers:
                check_metadata(b, brokers, controller_of(zc)[0], cluster_id)
            unreachable_checks(lost, t_lost)
            for b in brokers + [lost]:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in brokers + [lost]:
                b.dump_log()
            raise
        finally:
            for b in brokers + [lost]:
                b.cleanup(keep=False)


main(test)
