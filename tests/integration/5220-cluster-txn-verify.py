"""Cluster mode, KIP-890 part 1: a partition leader appends a transactional
batch only once the producer's transaction coordinator, on another broker,
confirms that the partition is in the producer's ongoing transaction
(AddPartitionsToTxn v4 VerifyOnly, as Kafka 3.6+).

ZooKeeper and three brokers in the chroot /gregor/c220, each with its own
metrics.listener; a topic of 9 partitions (replication factor 1) led by all
three; a transactional id whose coordinator is broker C.  "Remote"
partitions are led by the other brokers, "local" ones by C.

  1. raw protocol: InitProducerId at C; one partition added to the
     transaction.  A transactional Produce of a partition not added to it is
     refused INVALID_TXN_STATE (48) by a remote leader and by C alike, and
     nothing is appended (end offsets unchanged); C counted exactly one
     AddPartitionsToTxn v4 (the remote leader's question)
  2. once AddPartitionsToTxn added those partitions, the same batches are
     appended; a second batch of the transaction to the remote partition is
     appended without asking C again (the v4 count does not move)
  2b. one Produce carrying two partitions of the transaction, both led by
     the same remote leader, costs C one AddPartitionsToTxn v4 (the leader
     asks about both in one request); both are appended.  Two Produce
     requests of one partition sent back to back (sequences 0 and 3) are
     both appended, in order
  3. InitProducerId again bumps the epoch (the open transaction is aborted);
     the old epoch's batch to untouched partitions is refused
     INVALID_PRODUCER_EPOCH (47) by a remote leader, after asking C, and by C
     alike; nothing appended
  3b. the coordinator's broker stopped (SIGSTOP): a first batch to a remote
     leader, Produce TimeoutMs 1500, is answered NOT_ENOUGH_REPLICAS (19,
     retriable) once that bound passed, nothing appended; with the broker
     running again (SIGCONT) the same batch is appended; the transaction is
     aborted
  3c. the ABORT marker ends the partition's record of the transaction: the
     next transaction's first batch there is verified again (one more v4)
  4. a confluent_kafka transactional producer of another id writes to all 9
     partitions: commit, abort, commit; read_committed sees exactly the
     committed records; its remote partitions were verified with C's
     coordinator (AddPartitionsToTxn v4 counted by some broker)
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import idemwire  # noqa: E402
import kwire  # noqa: E402
import promhttp  # noqa: E402
import txnwire  # noqa: E402
from eos import read_all  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, with_metrics  # noqa: E402

CHROOT = "/gregor/c220"
TID = "tx-5220"
TID2 = "tx-5220-client"
TOPIC = "t5220"
NPARTS = 9
SETTINGS = {"zookeeper_session_timeout_ms": 10000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 5, "offsets_topic_num_partitions": 3,
            "group_initial_rebalance_delay_ms": 0}
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
NOT_ENOUGH_REPLICAS = 19


def leaders(port):
    r = kwire.call(port, 3, 1, kwire.metadata_v1_body([TOPIC]))
    err, parts = kwire.parse_metadata_v1(r.d[r.p:])["topics"].get(TOPIC, (3, []))
    return {idx: leader for _e, idx, leader in parts if leader >= 0} if err == 0 else {}


def v4_count(b):
    """AddPartitionsToTxn v4 requests broker b answered (its /metrics)."""
    m = promhttp.scrape(b.metrics_port)
    return promhttp.sample(m, "kafka_network_requestmetrics_requests_total", request="AddPartitionsToTxn",
                           version=4) or 0


def init_pid(c, tid):
    """InitProducerId v1 at the coordinator, retried while the previous transaction completes -> (pid, epoch)."""
    for _ in range(200):
        r = c.call(22, 1, kwire.string(tid) + kwire.i32(60000))
        r.i32()
        err, pid, epoch = r.i16(), r.i64(), r.i16()
        if err not in (15, 51):  # COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS
            break
        time.sleep(0.1)
    eq(err, 0, "InitProducerId error")
    return pid, epoch


def txn_produce_body(tid, parts, acks=-1, timeout_ms=10000):
    """Produce v3 with transactional id tid of TOPIC's partitions, parts: [(partition, records)]."""
    return (kwire.string(tid) + kwire.i16(acks) + kwire.i32(timeout_ms) + kwire.array(
        [TOPIC], lambda t: kwire.string(t) + kwire.array(parts, lambda p: kwire.i32(p[0]) + kwire.nbytes(p[1]))))


class Raw:
    """One transactional producer spoken by hand: a connection to every broker."""

    def __init__(self, brokers):
        self.c = {b.broker_id: txnwire.Client(b.port) for b in brokers}

    def produce(self, leader, part, pid, epoch, seq, n=3):
        batch = idemwire.batch(n, pid=pid, epoch=epoch, seq=seq, transactional=True, value=b"r%d" % part)
        return self.c[leader].produce_txn(TID, TOPIC, part, batch)

    def send(self, leader, parts, pid, epoch, corr, timeout_ms=10000):
        """Sends a Produce of parts [(partition, seq)] to leader without waiting for its answer."""
        recs = [(p, idemwire.batch(3, pid=pid, epoch=epoch, seq=seq, transactional=True, value=b"r%d" % p))
                for p, seq in parts]
        self.c[leader].sock.sendall(kwire.request(0, 3, corr, txn_produce_body(TID, recs, timeout_ms=timeout_ms)))

    def recv(self, leader, corr):
        got, body = kwire.recv_response(self.c[leader].sock)
        eq(got, corr, "correlation id")
        return {p: v for (_t, p), v in kwire.parse_produce_v3(body).items()}

    def end(self, leader, part):
        return self.c[leader].list_offset(TOPIC, part)


def read_committed(bootstrap, expect, timeout_s=30):
    """The client-produced values ("c...") a read_committed reader sees in TOPIC."""
    return [v for v in read_all(bootstrap, TOPIC, NPARTS, "read_committed", expect, timeout_s) if v.startswith("c")]


def raw_checks(brokers, coord, lead):
    by_id = {b.broker_id: b for b in brokers}
    others = sorted({lead[p] for p in lead} - {coord})
    check(len(others) == 2, "partitions led by all three brokers: %s" % lead)
    l1 = [p for p in sorted(lead) if lead[p] == others[0]]
    l2 = [p for p in sorted(lead) if lead[p] == others[1]]
    local = [p for p in sorted(lead) if lead[p] == coord]
    check(len(l1) >= 3 and len(l2) >= 3 and len(local) >= 2, "three partitions per broker: %s" % lead)
    pr, pb1, pb2 = l1[0], l1[1], l1[2]  # one leader: the first checks, then two in one Produce
    added, pr3, pp = l2[0], l2[1], l2[2]  # the other: added first, fenced, pipelined
    pl, pl2 = local[0], local[1]
    w = Raw(brokers)
    cc = w.c[coord]
    pid, epoch = init_pid(cc, TID)
    eq(cc.add_partitions(TID, pid, epoch, TOPIC, [added]), {added: 0}, "AddPartitionsToTxn of one partition")
    ends = {p: w.end(lead[p], p) for p in (pr, pl, pr3, pl2, pb1, pb2, pp)}
    n0 = v4_count(by_id[coord])

    # 1. not added to the transaction: refused, remotely and locally alike, nothing appended
    eq(w.produce(lead[pr], pr, pid, epoch, 0)[0], INVALID_TXN_STATE, "remote leader, partition not added")
    eq(w.produce(lead[pl], pl, pid, epoch, 0)[0], INVALID_TXN_STATE, "local coordinator, partition not added")
    eq({p: w.end(lead[p], p) for p in (pr, pl)}, {p: ends[p] for p in (pr, pl)}, "end offsets, nothing appended")
    eq(v4_count(by_id[coord]), n0 + 1, "AddPartitionsToTxn v4 at the coordinator: the remote leader asked once")
    log("partition %d (leader %d) and %d (coordinator %d) not in the transaction: refused 48" %
        (pr, lead[pr], pl, coord))

    # 2. added: appended; the second batch of the transaction is not verified again
    eq(cc.add_partitions(TID, pid, epoch, TOPIC, [pr, pl]), {pr: 0, pl: 0}, "AddPartitionsToTxn")
    eq(w.produce(lead[pr], pr, pid, epoch, 0), (0, ends[pr]), "remote leader, added partition")
    eq(w.produce(lead[pl], pl, pid, epoch, 0), (0, ends[pl]), "local coordinator, added partition")
    eq(v4_count(by_id[coord]), n0 + 2, "AddPartitionsToTxn v4 after the first accepted batch")
    eq(w.produce(lead[pr], pr, pid, epoch, 3), (0, ends[pr] + 3), "the transaction's second batch")
    eq(v4_count(by_id[coord]), n0 + 2, "AddPartitionsToTxn v4: the second batch was not verified again")
    log("added partitions appended; the second batch needed no round trip")

    # 2b. two partitions of one leader in one Produce: one question; back-to-back requests keep their order
    eq(cc.add_partitions(TID, pid, epoch, TOPIC, [pb1, pb2, pp]), {pb1: 0, pb2: 0, pp: 0}, "AddPartitionsToTxn")
    n2 = v4_count(by_id[coord])
    w.send(lead[pb1], [(pb1, 0), (pb2, 0)], pid, epoch, 101)
    eq(w.recv(lead[pb1], 101), {pb1: (0, ends[pb1]), pb2: (0, ends[pb2])}, "two partitions in one Produce")
    eq(v4_count(by_id[coord]), n2 + 1, "AddPartitionsToTxn v4: one question for both partitions")
    w.send(lead[pp], [(pp, 0)], pid, epoch, 102)
    w.send(lead[pp], [(pp, 3)], pid, epoch, 103)
    eq((w.recv(lead[pp], 102), w.recv(lead[pp], 103)), ({pp: (0, ends[pp])}, {pp: (0, ends[pp] + 3)}),
       "back-to-back Produce requests, in order")
    log("two partitions verified in one question; pipelined batches appended in order")

    # 3. fenced by a newer epoch at the coordinator
    pid2, epoch2 = init_pid(cc, TID)
    check(pid2 == pid and epoch2 > epoch, "InitProducerId bumps the epoch: %d/%d -> %d/%d" % (pid, epoch, pid2, epoch2))
    n1 = v4_count(by_id[coord])
    eq(w.produce(lead[pr3], pr3, pid, epoch, 0)[0], INVALID_PRODUCER_EPOCH, "remote leader, fenced epoch")
    eq(w.produce(lead[pl2], pl2, pid, epoch, 0)[0], INVALID_PRODUCER_EPOCH, "local coordinator, fenced epoch")
    eq(v4_count(by_id[coord]), n1 + 1, "AddPartitionsToTxn v4: the remote leader asked")
    eq({p: w.end(lead[p], p) for p in (pr3, pl2)}, {p: ends[p] for p in (pr3, pl2)}, "fenced: nothing appended")
    log("old epoch %d refused 47 on partitions %d (leader %d) and %d (coordinator)" % (epoch, pr3, lead[pr3], pl2))

    # 3b. no answer from the coordinator within the Produce's timeout: retriable, nothing appended
    eq(cc.add_partitions(TID, pid2, epoch2, TOPIC, [pr3]), {pr3: 0}, "AddPartitionsToTxn with the new epoch")
    by_id[coord].proc.send_signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        w.send(lead[pr3], [(pr3, 0)], pid2, epoch2, 201, timeout_ms=1500)
        eq(w.recv(lead[pr3], 201)[pr3][0], NOT_ENOUGH_REPLICAS, "coordinator stopped: retriable")
        waited = time.monotonic() - t0
        eq(w.end(lead[pr3], pr3), ends[pr3], "nothing appended while unverified")
    finally:
        by_id[coord].proc.send_signal(signal.SIGCONT)
    check(waited >= 1.4, "answered after the Produce's timeout, not before (%.1f s)" % waited)
    eq(w.produce(lead[pr3], pr3, pid2, epoch2, 0), (0, ends[pr3]), "the same batch, coordinator running again")
    log("coordinator stopped: NOT_ENOUGH_REPLICAS after %.1f s; appended once it answers" % waited)
    r = cc.call(26, 0, kwire.string(TID) + kwire.i64(pid2) + kwire.i16(epoch2) + kwire.i8(0))
    r.i32()
    eq(r.i16(), 0, "EndTxn (abort): the partition's transaction ends, read_committed reads past it")

    # 3c. the marker ended what the partition knew: the next transaction's first batch is verified again
    for _ in range(100):  # CONCURRENT_TRANSACTIONS until the abort's markers are written
        got = cc.add_partitions(TID, pid2, epoch2, TOPIC, [pr3])
        if got != {pr3: 51}:
            break
        time.sleep(0.1)
    eq(got, {pr3: 0}, "AddPartitionsToTxn of the next transaction")
    n3 = v4_count(by_id[coord])
    eq(w.produce(lead[pr3], pr3, pid2, epoch2, 3), (0, ends[pr3] + 4), "the next transaction's first batch")
    eq(v4_count(by_id[coord]), n3 + 1, "AddPartitionsToTxn v4: verified again after the marker")
    r = cc.call(26, 0, kwire.string(TID) + kwire.i64(pid2) + kwire.i16(epoch2) + kwire.i8(1))
    r.i32()
    eq(r.i16(), 0, "EndTxn (commit)")
    for c in w.c.values():
        c.close()


def client_checks(brokers, bootstrap):
    before = sum(v4_count(b) for b in brokers)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": TID2, "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    committed = []
    for n, commit in ((1, True), (2, False), (3, True)):
        batch = ["c%d-%d-%d" % (n, part, i) for part in range(NPARTS) for i in range(10)]
        p.begin_transaction()
        for v in batch:
            p.produce(TOPIC, value=v.encode(), partition=int(v.split("-")[1]))
        eq(p.flush(30), 0, "records left unsent")
        if commit:
            p.commit_transaction(30)
            committed += batch
        else:
            p.abort_transaction(30)
    eq(sorted(read_committed(bootstrap, len(committed))), sorted(committed), "read_committed")
    check(sum(v4_count(b) for b in brokers) > before, "the client's batches were verified with AddPartitionsToTxn v4")
    log("confluent_kafka: commit, abort, commit over every broker's partitions")


def test():
    mports = {}
    with running_cluster((1, 2, 3), CHROOT, setup=with_metrics(mports), **SETTINGS) as (_zk, _zc, brokers):
        for i, b in zip((1, 2, 3), brokers):
            b.broker_id, b.metrics_port = i, mports[i]
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, NPARTS, 1)]).values():
            f.result(30)
        wait_until(lambda: all(len(leaders(b.port)) == NPARTS for b in brokers), 30, "leaders known everywhere")
        lead = leaders(brokers[0].port)
        wait_until(lambda: all(kwire.find_coordinator(b.port, TID, 1)[0] == 0 for b in brokers), 60,
                   "a coordinator for " + TID)
        coord = kwire.find_coordinator(brokers[0].port, TID, 1)[1]
        log("coordinator of %s: %d; leaders %s" % (TID, coord, lead))
        raw_checks(brokers, coord, lead)
        client_checks(brokers, bootstrap)


if __name__ == "__main__":
    main(test)
