"""Cluster mode: no acknowledged message lost while leaders are killed and a follower stalls.

itest: alone (three brokers, ZooKeeper and a 100,000-record producer on the machine's cores)

ZooKeeper and three brokers in the chroot /gregor/c190 (replica.lag.time.max.ms=4000,
zookeeper.session.timeout.ms=12000); topic "chaos", 6 partitions, replication factor 3,
min.insync.replicas=2:

  1. an idempotent confluent-kafka producer (acks=all, retries unbounded within
     message.timeout.ms) sends 100,000 numbered records, value i to partition i % 6,
     paced over the chaos below and released once it is over
  2. meanwhile, once: SIGSTOP a broker other than the controller for 8 s or more (more than replica.lag.time.max.ms,
     less than the ZooKeeper session) and SIGCONT it; 5 times: kill -9 the leader of a
     partition, wait until the controller has moved every partition it led to another
     broker (its ZooKeeper session expired), start it again and wait until it is
     registered
  3. every acknowledged record is read back by a consumer from the beginning of every
     partition (check.crcs) at the offset its acknowledgement gave, in order; within
     one producer epoch no value is read twice and the batches' sequence numbers run
     from 0 without a gap or a repeat, and no batch of an older epoch follows a newer
     one; kcat reads every partition to its end without an error
  4. once quiet, each partition's .log bytes are the same on the members of its ISR

ISR_CHANGES says whether leaders change the ISR (AlterPartition: shrink after
replica.lag.time.max.ms, expand once caught up) and followers truncate by
OffsetForLeaderEpoch (docs/cluster.md, "Replication").  With them, the stopped broker
must leave the ISR of the partitions it follows and rejoin them after SIGCONT, every
restarted broker must be back in every ISR before the next kill, and all three
brokers, all in the ISR at the end, must hold identical .log files.  Without them (ISR_CHANGES = False, for a build that has neither) a dead broker leaves
the ISR only when its session expires and never returns, so only the first kill can
be of a leader (a second would leave an ISR of one, below min.insync.replicas): the
four others kill -9 the restarted broker again, now a follower outside the ISR; the
stopped broker stays in the ISR and acks=all waits for it; a killed leader's
unreplicated tail is not truncated (its files may differ from the others' past the
high watermark it had), so the files are compared on the two ISR members.

Records the producer gave up on (message.timeout.ms, 60 s) were never acknowledged and
owe nothing; at least 60% must be acknowledged.  After such a timeout librdkafka bumps
the producer epoch and re-sends what it still holds from sequence 0 of the new epoch,
including records of a request whose answer it lost and the broker had written (its
INTRODUCTION.md, "Message timeout considerations"; librdkafka issue 4953).  A broker
must accept those (a new epoch starts at 0) and cannot tell them from new records, so
a value may then be read twice, once in each epoch: that is allowed only in a run with
timeouts, and only across epochs.  librdkafka 2.0 (Debian's) may keep sending
a partition to a former leader after quick leader changes, answered NOT_LEADER until the
records time out (librdkafka issue 4976: "not migrating away from preferred replica"): seen
in about 1 run in 5, on two partitions, while every broker's Metadata named the right leader.

GREGOR_SEED replays one run's choice of victims; RDK_DEBUG_FILE=path writes the producer's
librdkafka debug log there.
"""

import bisect
import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import kwire  # noqa: E402
from compaction import headers as disk_headers  # noqa: E402
from replicas import read_to_hws  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c190"
TOPIC = "chaos"
NPARTS = 6
N = int(os.environ.get("GREGOR_CHAOS_RECORDS", "100000"))
KILLS = 5
ISR_CHANGES = True
LAG_MS = 4000
STOP_S = 8.0
STOP_WAIT_S = 20.0  # at most this long stopped, waiting for it to leave the ISR
PACE_S = 60.0  # the records are spread over this long, or until the chaos is over
# librdkafka 2.0 can keep producing to a former leader for good after quick leader changes
# ("leader N unchanged, not migrating away from preferred replica": librdkafka issue 4976); its
# records to those partitions then time out, so the wait for them is bounded to a minute
MSG_TIMEOUT_S = 60
SETTINGS = {"zookeeper_session_timeout_ms": 12000, "replica_lag_time_max_ms": LAG_MS,
            "replica_high_watermark_checkpoint_interval_ms": 500}


def rdkafka_debug():
    """RDK_DEBUG_FILE=path: the producer's librdkafka debug lines (contexts RDK_DEBUG, default
    eos,broker,topic) go to that file."""
    if not os.environ.get("RDK_DEBUG_FILE"):
        return {}
    lg = logging.getLogger("rdkafka")
    lg.addHandler(logging.FileHandler(os.environ["RDK_DEBUG_FILE"]))
    lg.setLevel(logging.DEBUG)
    return {"debug": os.environ.get("RDK_DEBUG", "eos,broker,topic"), "logger": lg}


class Sender(threading.Thread):
    """The producer: acks[value] = (partition, offset), errors = [(value, error)]."""

    def __init__(self, bootstrap):
        super().__init__(daemon=True)
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "message.timeout.ms": MSG_TIMEOUT_S * 1000, "retry.backoff.ms": 50,
                           "topic.metadata.refresh.interval.ms": 1000, **rdkafka_debug()})
        self.acks, self.errors, self.sent = {}, [], 0
        self.release = threading.Event()
        self.done = False

    def on_delivery(self, err, m):
        v = int(m.value())
        if err:
            self.errors.append((v, str(err)))
        else:
            self.acks[v] = (m.partition(), m.offset())

    def run(self):
        t0 = time.monotonic()
        for i in range(N):
            while not self.release.is_set() and time.monotonic() - t0 < i * PACE_S / N:
                self.p.poll(0.01)
            while True:
                try:
                    self.p.produce(TOPIC, value=b"%d" % i, partition=i % NPARTS, on_delivery=self.on_delivery)
                    break
                except BufferError:
                    self.p.poll(0.05)
            self.sent = i + 1
            self.p.poll(0)
        self.left = self.p.flush(MSG_TIMEOUT_S + 5)
        self.done = True


def metadata(admin):
    """{partition: (leader, sorted isr)}."""
    parts = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions
    return {p: (m.leader, sorted(m.isrs)) for p, m in parts.items()}


def wait_md(admin, pred, timeout_s, what, via=None):
    """via: a broker's port to ask (Metadata v1) instead of the admin client, which may
    keep asking a stopped broker and time out."""
    md = {}

    def ok():
        try:
            md.update(kwire.partition_isrs(via, TOPIC) if via else metadata(admin))
        except Exception:
            return False
        return len(md) == NPARTS and pred(md)
    wait_until(ok, timeout_s, what, interval_s=0.2)
    return md


def kill_one(admin, zc, brokers, k, rng, out_of_isr):
    """Kills a leader (or, once one is out of the ISR for good, that broker again) and restarts it."""
    # a leader whose followers all lagged out of its ISR (a loaded machine) has no clean successor: wait for one
    md = wait_md(admin, lambda m: all(len(isr) >= 2 for _, isr in m.values()), 60,
                 "a follower in the ISR of every partition before kill %d" % (k + 1))
    if out_of_isr:
        vid = out_of_isr[0]
    else:
        vid = md[rng.randrange(NPARTS)][0]
    victim = brokers[vid - 1]
    led = sorted(q for q, (lead, _) in md.items() if lead == vid)
    victim.kill9()
    t0 = time.monotonic()
    wait_md(admin, lambda m: all(m[q][0] not in (vid, -1) for q in led), 40,
            "partitions %s led by another broker after broker %d's kill" % (led, vid))
    wait_until(lambda: str(vid) not in zc.get_children(CHROOT + "/brokers/ids"), 40,
               "broker %d's ZooKeeper session expired" % vid)
    victim.start()
    wait_until(lambda: str(vid) in zc.get_children(CHROOT + "/brokers/ids"), 20, "broker %d registered" % vid)
    log("kill %d: broker %d (leader of %s) killed and restarted in %.1f s" % (k + 1, vid, led, time.monotonic() - t0))
    if ISR_CHANGES:
        wait_md(admin, lambda m: all(vid in isr for _, isr in m.values()), 60,
                "broker %d back in the ISR of every partition after its restart" % vid)
        log("kill %d: broker %d back in every ISR after %.1f s" % (k + 1, vid, time.monotonic() - t0))
    elif not out_of_isr:
        wait_md(admin, lambda m: all(vid not in isr for _, isr in m.values()), 20,
                "broker %d out of every ISR" % vid)
        out_of_isr.append(vid)


def stall_follower(admin, zc, brokers, rng):
    md = metadata(admin)
    # not the controller: stopped, it answers no AlterPartition, so no ISR shrinks until its
    # session expires (as in Kafka), and clients asking it for metadata wait out their timeouts
    ctl = json.loads(zc.get(CHROOT + "/controller")[0])["brokerid"]
    vid = rng.choice([i for i in (1, 2, 3) if i != ctl])
    b = brokers[vid - 1]
    followed = sorted(q for q, (lead, isr) in md.items() if lead != vid and vid in isr)
    check(followed, "broker %d follows a partition: %s" % (vid, md))
    os.kill(b.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        if ISR_CHANGES:
            # the leaders' shrink takes the lag time plus a check period; on a loaded machine it may
            # come later, and past the session timeout the controller takes it out instead: either way
            wait_md(admin, lambda m: all(vid not in m[q][1] for q in followed), STOP_WAIT_S,
                    "broker %d out of the ISR of %s while stopped" % (vid, followed), via=brokers[ctl - 1].port)
            log("broker %d stopped: out of the ISR of %s after %.1f s" % (vid, followed, time.monotonic() - t0))
        time.sleep(max(0.0, STOP_S - (time.monotonic() - t0)))
    finally:
        os.kill(b.pid, signal.SIGCONT)
    if ISR_CHANGES:
        wait_md(admin, lambda m: all(vid in isr for _, isr in m.values()), 40,
                "broker %d back in the ISR of every partition after SIGCONT" % vid)
    log("broker %d stopped for %.1f s and continued" % (vid, STOP_S))


def read_all(b, hws):
    """{partition: [(offset, value)]} read from the beginning to each high watermark, check.crcs on."""
    return read_to_hws(b.bootstrap, TOPIC, hws, "c190")


def batch_headers(b, p):
    """[(base offset, last offset, producer id, producer epoch, base sequence)] of every batch
    in partition p's .log files on broker b."""
    return [(h.base_offset, h.base_offset + h.last_offset_delta, h.producer_id, h.producer_epoch, h.base_sequence)
            for h in disk_headers(b, TOPIC, p)]


def check_sequences(p, hdrs):
    """What the broker's idempotence owes, batch by batch: per producer id, epochs never go
    back, a new epoch starts at sequence 0, and within an epoch each batch follows the last."""
    last = {}  # producer id: (epoch, last sequence)
    for base, end, pid, epoch, seq in hdrs:
        if pid < 0:
            continue
        prev_epoch, prev_seq = last.get(pid, (-1, -1))
        check(epoch >= prev_epoch,
              "partition %d: batch at %d of producer %d has epoch %d after epoch %d" % (p, base, pid, epoch, prev_epoch))
        want = 0 if epoch > prev_epoch else prev_seq + 1
        eq(seq, want, "partition %d: base sequence of the batch at %d (producer %d, epoch %d)" % (p, base, pid, epoch))
        last[pid] = (epoch, seq + end - base)


def check_read(sender, got, hdrs, timed_out):
    """got: {partition: [(offset, value)]}; hdrs: {partition: batch_headers of its leader}."""
    twice = 0
    for p in range(NPARTS):
        check(all(v % NPARTS == p for _, v in got[p]), "partition %d holds only its own values" % p)
        check_sequences(p, hdrs[p])
        starts = [h[0] for h in hdrs[p]]
        by_epoch = {}
        for o, v in got[p]:
            h = hdrs[p][bisect.bisect_right(starts, o) - 1]
            check(h[0] <= o <= h[1], "partition %d: offset %d read is in a batch on disk" % (p, o))
            by_epoch.setdefault((h[2], h[3]), []).append((o, v))
        for (pid, epoch), recs in by_epoch.items():
            bad = next(((a, b) for a, b in zip(recs, recs[1:]) if a[1] >= b[1]), None)
            check(not bad, "partition %d, producer %d epoch %d: every value once, in order "
                  "(first bad pair of (offset, value): %s)" % (p, pid, epoch, bad))
        values = [v for _, v in got[p]]
        twice += len(values) - len(set(values))
    if twice:
        log("%d value(s) read twice, in two producer epochs (librdkafka's epoch bump after its timeouts)" % twice)
        check(timed_out, "a value read twice although no record timed out (so no epoch bump)")
    at = {}
    for p in range(NPARTS):
        for o, v in got[p]:
            at.setdefault(v, []).append((p, o))
    missing = [v for v in sender.acks if v not in at]
    eq(missing[:10], [], "acknowledged values not read back (%d of them)" % len(missing))
    moved = [(v, sender.acks[v], at[v]) for v in sender.acks if sender.acks[v] not in at[v]]
    eq(moved[:10], [], "acknowledged values read at another offset (%d of them)" % len(moved))


def kcat_check(b, hws):
    out = subprocess.run(["kcat", "-b", b.bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q",
                          "-X", "check.crcs=true", "-f", "%p\n"], capture_output=True, timeout=120)
    eq(out.returncode, 0, "kcat: %s" % out.stderr.decode(errors="replace")[-500:])
    counts = {}
    for line in out.stdout.decode().split():
        counts[int(line)] = counts.get(int(line), 0) + 1
    return counts


def log_bytes(b, p):
    d = b.partition_dir(TOPIC, p)
    out = b""
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                out += f.read()
    return out


def test():
    seed = int(os.environ.get("GREGOR_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    log("GREGOR_SEED=%d" % seed)
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (_zk, zc, brokers):
        wait_listed(brokers, controller=True)
        boot = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic(TOPIC, NPARTS, 3, config={"min.insync.replicas": "2"})],
                            operation_timeout=15)[TOPIC].result(timeout=30)
        wait_md(admin, lambda m: all(lead > 0 and len(isr) == 3 for lead, isr in m.values()), 30,
                "a leader and an ISR of 3 for every partition")
        sender = Sender(boot)
        t0 = time.monotonic()
        sender.start()
        out_of_isr = []  # without ISR_CHANGES: the broker the first kill left outside the ISR
        wait_until(lambda: sender.acks or sender.errors, 30, "the first acknowledgements")
        stall_follower(admin, zc, brokers, rng)
        for k in range(KILLS):
            kill_one(admin, zc, brokers, k, rng, out_of_isr)
            log("after %d kills: %d sent, %d acknowledged" % (k + 1, sender.sent, len(sender.acks)))
        sender.release.set()
        sender.join(MSG_TIMEOUT_S + 10)
        check(sender.done, "the producer finished within its bounds")
        eq(sender.left, 0, "records not delivered after flush")
        # a record the producer gave up on (message.timeout.ms, while its partition had no leader on a
        # loaded machine) was never acknowledged, so it owes nothing; any other delivery error is a failure
        timed_out = [e for e in sender.errors if "_MSG_TIMED_OUT" in str(e)]
        other = [e for e in sender.errors if "_MSG_TIMED_OUT" not in str(e)]
        eq(other[:5], [], "delivery errors other than a timeout (%d)" % len(other))
        check(len(sender.acks) >= 0.6 * N, "records acknowledged: %d of %d" % (len(sender.acks), N))
        log("%d of %d records acknowledged (%d timed out) in %.1f s through %d leader kills and a stalled follower"
            % (len(sender.acks), N, len(timed_out), time.monotonic() - t0, KILLS))

        hws = {}
        for p in range(NPARTS):
            c = Consumer({"bootstrap.servers": boot, "group.id": "c190-hw"})
            hws[p] = c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
            c.close()
        got = read_all(brokers[0], hws)
        leaders = wait_md(admin, lambda m: all(lead > 0 for lead, _ in m.values()), 30, "a leader for every partition")
        hdrs = {p: batch_headers(brokers[leaders[p][0] - 1], p) for p in range(NPARTS)}
        check_read(sender, got, hdrs, timed_out)
        log("every acknowledged record read back at its acknowledged offset; within each producer epoch "
            "once, in order, with sequences unbroken")
        counts = kcat_check(brokers[1], hws)
        eq(counts, {p: len(got[p]) for p in range(NPARTS) if got[p]}, "records per partition read by kcat")
        log("kcat read every partition to its end: %s" % counts)

        md = metadata(admin)
        if ISR_CHANGES:
            eq([len(isr) for _, isr in md.values()], [3] * NPARTS, "ISR sizes at the end")

        def same_bytes():
            return all(log_bytes(brokers[i - 1], p) == log_bytes(brokers[md[p][1][0] - 1], p)
                       for p in range(NPARTS) for i in md[p][1])
        wait_until(same_bytes, 30, "each partition's .log bytes the same on its ISR members %s" % md)
        log("each partition's .log files are the same bytes on its ISR members: %s" % md)


if __name__ == "__main__":
    main(test)
