"""Cluster-mode checks of inter-broker connections over a secured listener
(TLS, SASL), shared by the 612x tests.

run(name, chroot, setup, client_conf, wrong, failure_line) starts ZooKeeper
and three brokers whose only listener is the secured one (setup(id, broker,
certs) sets each broker's overrides; there is no PLAINTEXT listener to fall
back to), with an authorizer on and the inter-broker principal a super
user, then:

  0. each of the refused set-ups makes a broker refuse to start
  1. every broker's Metadata (over the secured listener) lists the three
     and a controller
  2. a topic of 3 partitions, replication factor 3, min.insync.replicas=2:
     every partition's ISR in ZooKeeper is all three brokers and still is
     past replica.lag.time.max.ms (the followers fetch from the leaders over
     the inter-broker listener)
  3. a transaction of a confluent_kafka transactional producer over
     partitions led by different brokers commits (its partitions verified
     with the coordinator, KIP-890, and its markers written, across brokers)
     and read_committed reads it back
  4. acks=all records to partition 0, its leader killed with SIGKILL: a new
     leader is elected and every acknowledged record is read back from it
  5. the killed broker restarted with wrong(id, broker, certs) applied (a
     truststore of another CA, a wrong password): failure_line shows in its
     log and it stays out of the ISR of partition 0; the line is not logged
     again on every retry; restarted with its right settings it rejoins the
     ISR (a new connection redoes the handshake and the authentication)
"""

import os
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import tlscerts
from gregor import BrokerError, check, eq, log, wait_until
from replicas import state
from zookeeper import ZooKeeper, cluster_broker, logs_on_failure

TOPIC = "ib"
NPARTS = 3
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 3, "offsets_topic_num_partitions": 3,
            "group_initial_rebalance_delay_ms": 0, "replica_lag_time_max_ms": 4000,
            "authorizer_class_name": "kafka.security.authorizer.AclAuthorizer"}


def _admin(conf, b):
    return AdminClient(dict(conf, **{"bootstrap.servers": b.bootstrap}))


def _listed(conf, b, n):
    try:
        md = _admin(conf, b).list_topics(timeout=3)
    except Exception:
        return False
    return len(md.brokers) == n and md.controller_id >= 0


def _isr(zc, chroot, p):
    st = state(zc, chroot, TOPIC, p)[0] or {}
    return st.get("leader", -1), sorted(st.get("isr", []))


def _read(conf, bootstrap, parts, want, committed=False, timeout_s=30):
    c = Consumer(dict(conf, **{"bootstrap.servers": bootstrap, "group.id": "ib-%f" % time.time(),
                               "enable.auto.commit": False, "auto.offset.reset": "earliest",
                               "isolation.level": "read_committed" if committed else "read_uncommitted"}))
    c.assign([TopicPartition(TOPIC, p, 0) for p in parts])
    got = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and not want <= got:
            got |= {m.value() for m in c.consume(num_messages=500, timeout=0.5) if not m.error()}
    finally:
        c.close()
    return got


def _txn(conf, bootstrap, zc, chroot):
    lead = {p: _isr(zc, chroot, p)[0] for p in range(NPARTS)}
    parts = sorted({l: p for p, l in lead.items()}.values())  # one partition per leader
    check(len(parts) >= 2, "partitions led by different brokers: %s" % lead)
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "transactional.id": "ib-txn",
                               "message.timeout.ms": 30000}))
    p.init_transactions(60)
    p.begin_transaction()
    want = set()
    for part in parts:
        for i in range(5):
            v = b"txn-%d-%d" % (part, i)
            p.produce(TOPIC, value=v, partition=part)
            want.add(v)
    p.commit_transaction(60)
    got = _read(conf, bootstrap, parts, want, committed=True)
    eq(sorted(want - got), [], "committed records read with read_committed")
    log("transaction over partitions %s (leaders %s) committed and read back" %
        (parts, sorted(lead[x] for x in parts)))


def _produce(conf, bootstrap, n):
    p = Producer(dict(conf, **{"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000}))
    acked = set()

    def on_delivery(err, m):
        if err is None:
            acked.add(m.value())
    for i in range(n):
        p.produce(TOPIC, value=b"rec-%d" % i, partition=0, on_delivery=on_delivery)
    p.flush(30)
    return acked


def _failures(bs, line):
    return sum(b.log_text().count(line) for b in bs)


def _wrong_then_right(b, bs, wrong, failure_line, zc, chroot):
    """Restarts b with wrong settings: it stays out of the ISR, failure_line logged (by b or the brokers
    connecting to it) without a retry storm."""
    right = dict(b.overrides)
    wrong(b)
    b.start()
    wait_until(lambda: _failures(bs, failure_line), 30, "%r in a broker's log" % failure_line)
    time.sleep(2)  # every connection has tried once
    n = _failures(bs, failure_line)
    time.sleep(8)  # several reconnection attempts (the backoff tops at 5 s)
    leader, isr = _isr(zc, chroot, 0)
    check(b.broker_id not in isr, "broker %d with wrong settings kept out of the ISR %s" % (b.broker_id, isr))
    m = _failures(bs, failure_line)
    # each connection retries about 6 times in 8 s; a connection opened meanwhile logs its first failure
    check(m - n <= 2, "failure logged once per state change, not per retry: %d lines, then %d after 8 s" % (n, m))
    log("broker %d with wrong settings: %r logged %d time(s), not in the ISR %s" % (b.broker_id, failure_line, n, isr))
    b.kill9()  # its controlled shutdown would wait for a controller it may not reach
    wait_until(lambda: not zc.exists("%s/brokers/ids/%d" % (chroot, b.broker_id)), 30,
               "the registration of the killed broker %d gone" % b.broker_id)
    b.overrides = right
    b.start()
    wait_until(lambda: b.broker_id in _isr(zc, chroot, 0)[1], 60,
               "broker %d back in the ISR with its right settings" % b.broker_id)
    log("broker %d rejoined the ISR with its right settings" % b.broker_id)


def _refused(zk, chroot, setup, certs, bad, message):
    """A broker set up as the others but with the overrides bad refuses to start, saying message."""
    b = cluster_broker(zk.connect, 9, chroot, start=False, **SETTINGS)
    setup(9, b, certs)
    b.overrides.update(bad)
    try:
        b.start()
        raise AssertionError("broker started with %s" % bad)
    except BrokerError:
        check(message in b.log_text(), "%r in the log of the broker refusing %s" % (message, bad))
    finally:
        b.cleanup(keep=False)
    log("refused at start-up: %s (%s)" % (bad, message))


def run(chroot, setup, conf, wrong, failure_line, refused=(), before=None):
    """refused: (overrides, message) pairs, each a set-up the brokers refuse at start-up; before(zc), if given,
    runs before the first broker starts (e.g. writes users' SCRAM credentials into ZooKeeper)."""
    with ZooKeeper() as zk:
        zc = zk.client()
        if before:
            before(zc)
        with logs_on_failure([]) as bs:
            certs = tlscerts.make(zk.tmp)
            for bad, message in refused:
                _refused(zk, chroot, setup, certs, bad, message)
            for i in (1, 2, 3):
                b = cluster_broker(zk.connect, i, chroot, start=False, **SETTINGS)
                b.broker_id = i
                setup(i, b, certs)
                b.start()
                bs.append(b)
            for b in bs:
                wait_until(lambda: _listed(conf, b, 3), 30, "Metadata of broker %s lists 3 brokers" % b.bootstrap)
            admin = _admin(conf, bs[0])  # kept: the result needs its handle alive
            admin.create_topics([NewTopic(TOPIC, NPARTS, 3, config={"min.insync.replicas": "2"})],
                                operation_timeout=20)[TOPIC].result(timeout=30)
            wait_until(lambda: all(_isr(zc, chroot, p)[1] == [1, 2, 3] for p in range(NPARTS)), 60,
                       "every partition's ISR is the three brokers")
            time.sleep(SETTINGS["replica_lag_time_max_ms"] / 1000 + 2)  # a follower not fetching is out by now
            eq([_isr(zc, chroot, p)[1] for p in range(NPARTS)], [[1, 2, 3]] * NPARTS,
               "every partition's ISR after replica.lag.time.max.ms (the followers fetch)")
            log("RF 3: every ISR is [1, 2, 3] and stays so")
            bootstrap = ",".join(b.bootstrap for b in bs)
            _txn(conf, bootstrap, zc, chroot)

            acked = _produce(conf, bootstrap, 200)
            eq(len(acked), 200, "acks=all records acknowledged")
            old = _isr(zc, chroot, 0)[0]
            victim = bs[old - 1]
            victim.kill9()
            wait_until(lambda: _isr(zc, chroot, 0)[0] not in (-1, old), 60, "a new leader of partition 0")
            new = _isr(zc, chroot, 0)[0]
            live = [b for b in bs if b is not victim]
            got = _read(conf, bs[new - 1].bootstrap, [0], acked)
            eq(sorted(acked - got), [], "acknowledged records read from the new leader %d" % new)
            log("leader %d killed; new leader %d has all %d acknowledged records" % (old, new, len(acked)))

            _wrong_then_right(victim, bs, lambda b: wrong(b, certs), failure_line, zc, chroot)
            for b in live + [victim]:
                eq(b.stop(), 0, "exit status of broker %s" % b.bootstrap)


def other_ca(dirpath):
    """The CA of another certificate set: a truststore that trusts none of the brokers."""
    return tlscerts.make(os.path.join(dirpath, "other"))["ca"]
