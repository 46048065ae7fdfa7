"""Cluster mode: a power cut of the whole cluster loses no acknowledged record.

ZooKeeper and three brokers in the chroot /gregor/c191, each under the LD_PRELOAD shim
(tests/lib/syncshim.c) that journals the length of every file each successful
fdatasync/fsync covered. Twice, each time on a topic of its own created while the three
brokers are registered (3 partitions, replication factor 3, min.insync.replicas=2):

  1. an idempotent confluent-kafka producer (acks=all) sends numbered records without
     pause; once 1,000 are acknowledged on every partition, the three brokers are
     SIGKILLed together while more are in flight (in the second round the followers
     still hold partitions of the first topic that they cannot fetch, OFFSET_OUT_OF_RANGE,
     which must not hold up the others)
  2. round "cut": for the last 1.5 s before the kill, syncs of .log files are held on
     brokers 2 and 3 (so what they appended then is not durable, and must not have
     been acknowledged); after the kill every .log/.txnindex file of every broker is
     cut back to the length its last successful sync covered (what a power loss
     leaves); round "kill": the files stay as the SIGKILL left them (page cache kept)
  3. broker 2 starts alone (the controller makes it leader of every partition), then
     the other two: every acknowledged record is read back (check.crcs) at the
     offset its acknowledgement gave, each value at most once, in order; kcat reads
     every partition to its end without an error; once the followers have caught up,
     each partition's .log files hold the same bytes on the three brokers up to the
     high watermark

ISR_CHANGES says whether followers truncate by OffsetForLeaderEpoch and leaders add
caught-up followers back to the ISR (docs/cluster.md, "Replication").  With them the
three brokers' .log files must end up identical and every ISR whole again.  Without
them (ISR_CHANGES = False, for a build that has neither) the first broker to register after the crash is the only ISR member
and leader of every partition, and a follower that had synced more than it keeps
that tail (its fetches get OFFSET_OUT_OF_RANGE), so the files are compared up to the
high watermark, where every replica must hold the same bytes.
"""

import os
import signal
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from replicas import read_to_hws  # noqa: E402
from gregor import check, eq, log, main, run, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker, wait_listed  # noqa: E402

CHROOT = "/gregor/c191"
NPARTS = 3
ACKED_BEFORE_CUT = 3000
ISR_CHANGES = True
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "replica_high_watermark_checkpoint_interval_ms": 500}


class Sender(threading.Thread):
    """Sends value i to partition i % NPARTS until stopped; acks[value] = (partition, offset)."""

    def __init__(self, bootstrap, topic):
        super().__init__(daemon=True)
        self.topic = topic
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 2, "message.timeout.ms": 20000})
        self.acks, self.errors = {}, []
        self.stop = threading.Event()

    def on_delivery(self, err, m):
        if err:
            self.errors.append(str(err))
        else:
            self.acks[int(m.value())] = (m.partition(), m.offset())

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.p.produce(self.topic, value=b"%d" % i, partition=i % NPARTS, on_delivery=self.on_delivery)
                i += 1
            except BufferError:
                pass
            self.p.poll(0.0005 if i % 50 else 0.002)
        self.p.poll(0)


def metadata(admin, topic):
    parts = admin.list_topics(topic, timeout=5).topics[topic].partitions
    return {p: (m.leader, sorted(m.isrs)) for p, m in parts.items()}


def wait_led(admin, topic, isr_size):
    def ok():
        try:
            md = metadata(admin, topic)
        except Exception:
            return False
        return len(md) == NPARTS and all(lead > 0 and len(isr) >= isr_size for lead, isr in md.values())
    wait_until(ok, 40, "every partition of %s led (ISR of %d or more)" % (topic, isr_size), interval_s=0.2)


def read_all(bootstrap, topic):
    """{partition: [(offset, value)]} from the beginning to the high watermark, check.crcs on."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "c191-hw"})
    try:
        hws = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(NPARTS)}
    finally:
        c.close()
    return read_to_hws(bootstrap, topic, hws, "c191"), hws


def check_read(acks, got, topic):
    for p in range(NPARTS):
        values = [v for _, v in got[p]]
        check(all(a < b for a, b in zip(values, values[1:])), "%s-%d: each value once, in order" % (topic, p))
    at = {v: (p, o) for p in range(NPARTS) for o, v in got[p]}
    missing = sorted(v for v in acks if v not in at)
    eq(missing[:10], [], "%s: acknowledged values lost (%d of them)" % (topic, len(missing)))
    moved = [(v, acks[v], at[v]) for v in acks if at[v] != acks[v]]
    eq(moved[:10], [], "%s: acknowledged values read at another offset" % topic)


def log_bytes(b, topic, p):
    d = b.partition_dir(topic, p)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def prefix_len(data, hw):
    """Bytes of the batches of a .log (segments concatenated) whose last offset is below hw."""
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack(">qi", data[pos:pos + 12])
        last_delta = struct.unpack(">i", data[pos + 23:pos + 27])[0]
        if length <= 0 or base + last_delta >= hw or pos + 12 + length > len(data):
            break
        pos += 12 + length
    return pos


def replicas_agree(brokers, topic, hws):
    for p in range(NPARTS):
        logs = [log_bytes(b, topic, p) for b in brokers]
        if ISR_CHANGES:
            if logs[1:] != logs[:2]:
                return False
            continue
        upto = [x[:prefix_len(x, hws[p])] for x in logs]
        if upto[1:] != upto[:2] or (hws[p] and not upto[0]):
            log("%s-%d: .log bytes %s, up to the high watermark %d: %s" %
                (topic, p, [len(x) for x in logs], hws[p], [len(x) for x in upto]))
            return False
    return True


def crash_round(zc, brokers, shims, boot, topic, cut):
    wait_listed(brokers, controller=True)
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(topic, NPARTS, 3, config={"min.insync.replicas": "2"})],
                        operation_timeout=15)[topic].result(timeout=30)
    wait_led(admin, topic, 3)
    s = Sender(boot, topic)
    s.start()
    def per_partition():
        n = [0] * NPARTS
        for p, _ in list(s.acks.values()):
            n[p] += 1
        return n
    wait_until(lambda: min(per_partition()) >= ACKED_BEFORE_CUT // NPARTS or s.errors, 60,
               "%d acknowledgements on every partition of %s" %
               (ACKED_BEFORE_CUT // NPARTS, topic))
    eq(s.errors[:3], [], "delivery errors before the crash")
    if cut:  # brokers 2 and 3 append but do not sync for a while: nothing of that may be acknowledged
        for shim in shims[1:]:
            shim.hold(".log")
        time.sleep(1.5)
    for b in brokers:
        os.kill(b.pid, signal.SIGKILL)
    acks = dict(s.acks)  # nothing is acknowledged after the kill
    for b in brokers:
        b.kill9()
    s.stop.set()
    s.join(30)
    s.p.purge()  # what was in flight stays unacknowledged; no retry after the restart
    wait_until(lambda: not zc.get_children(CHROOT + "/brokers/ids"), 30,
               "the ZooKeeper sessions of the killed brokers expired")
    lost = {}
    if cut:
        for b, shim in zip(brokers, shims):
            lost.update(shim.power_cut(b.data_dir))
    log("%s: %d acknowledged before the SIGKILL of all three; %s" %
        (topic, len(acks), "power cut took %d bytes from %d files" % (sum(lost.values()), len(lost))
         if cut else "files kept"))
    for shim in shims:
        shim.release()
    brokers[1].start()  # alone first: broker 2 leads every partition and the others follow it
    wait_led(admin, topic, 1)
    for b in (brokers[0], brokers[2]):
        b.start()
    got, hws = read_all(boot, topic)
    check_read(acks, got, topic)
    log("%s: every acknowledged record read back once, in order, at its offset (%d read)" %
        (topic, sum(len(v) for v in got.values())))
    out = run(["kcat", "-b", boot, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-X", "check.crcs=true",
               "-f", "%p\n"], timeout_s=60)
    eq(len(out.stdout.split()), sum(len(v) for v in got.values()), "records kcat read from %s" % topic)
    wait_until(lambda: replicas_agree(brokers, topic, hws), 30,
               "%s: every partition's .log bytes the same on the three brokers%s" %
               (topic, "" if ISR_CHANGES else " up to the high watermarks %s" % hws))
    if ISR_CHANGES:
        admin = AdminClient({"bootstrap.servers": boot})
        wait_led(admin, topic, 3)
    log("%s: the replicas' .log files agree%s" % (topic, "" if ISR_CHANGES else " up to the high watermark"))
    return acks, got


def test():
    with ZooKeeper() as zk:
        brokers, shims = [], []
        try:
            for i in (1, 2, 3):
                shim = SyncShim()
                b = cluster_broker(zk.connect, i, CHROOT, start=False, **SETTINGS)
                b.env.update(shim.env())
                b.start()
                brokers.append(b)
                shims.append(shim)
            boot = ",".join(b.bootstrap for b in brokers)
            zc = zk.client()
            wait_until(lambda: zc.exists(CHROOT + "/controller") and
                       len(zc.get_children(CHROOT + "/brokers/ids")) == 3, 20, "three brokers registered")
            cut_acks, cut_got = crash_round(zc, brokers, shims, boot, "cut", cut=True)
            wait_until(lambda: len(zc.get_children(CHROOT + "/brokers/ids")) == 3, 20, "three brokers registered")
            crash_round(zc, brokers, shims, boot, "kill", cut=False)
            check_read(cut_acks, read_all(boot, "cut")[0], "cut")
            for b in brokers:
                eq(b.stop(), 0, "exit status of %s" % b.bootstrap)
        except BaseException:
            for b in brokers:
                b.dump_log()
            raise
        finally:
            for b in brokers:
                b.cleanup(keep=False)


if __name__ == "__main__":
    main(test)
