#!/usr/bin/python3
"""powercut.py - what a client was told survives a power cut (make test-powercut).

Each case runs a broker whose log dir is on a loop ext4 disk (disk.py),
drives real clients against it, cuts the power at a moment of the case's
choosing (canary file, SIGSTOP, O_DIRECT copy of the device), SIGKILLs the
broker, mounts the copy and starts a new broker on it, then checks:

  acks_all   a producer with acks=all streaming to 2 partitions: every
             acknowledged record is there at its offset with its value
  acks_1     acks=1 producer and a consumer reading as it goes: every
             consumed record is there (acknowledged-but-lost acks=1 records
             are counted, not failed: acks=1 is not promised durable)
  offsets    synchronous offset commits of a group: the last acknowledged
             commit is the committed offset
  txn_abort  committed, aborted, committed transactions, then a wait past
             the recovery-point checkpoint: read_committed serves exactly
             the committed records, none of the aborted ones
  create     one CreateTopics of 8 topics x 25 partitions (with a config),
             answered, then 8 more asked for and the power cut while their
             round waits in its syncfs (held by tests/lib/syncshim.so, so
             all their files are written, none synced): every answered
             topic is there with all its partitions and its config, none of
             the others is (not even in part)
  compact    a compacted topic (4 KiB segments, delete.retention.ms 0)
             taking acks=all updates of 40 keys and tombstones of 10 while
             the cleaner runs (log.cleaner.backoff.ms 50); the power is cut
             right after a pass's swap is logged: every key's last value
             served is its last acknowledged one, and no tombstoned key
             shows an older value

and in every case that the canary (written without fsync just before the
cut) is gone: otherwise the harness did not cut anything and the case
proves nothing.

    tests/powercut/powercut.py [case ...]      (default: all)

Exit 0 all passed, 1 a case failed, 77 loop devices or mount unavailable
(not root, no /dev/loop-control, ...).  GREGOR_KEEP=1 keeps the temp dir.
"""
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

import disk  # noqa: E402
from gregor import Broker, check, eq, log, wait_until  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

STREAM_S = 1.5  # how long producers stream before the cut


def create(b, topic, parts):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, parts, 1)])[topic].result(timeout=15)


def read_all(b, topic, parts, isolation="read_uncommitted"):
    """{(partition, offset): value} of everything a consumer gets up to the end."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    got, eof, deadline = {}, set(), time.monotonic() + 30
    while len(eof) < parts:
        check(time.monotonic() < deadline, "reading %s back timed out" % topic)
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            check(m.error().code() == -191, "consume error: %s" % m.error())  # _PARTITION_EOF
            eof.add(m.partition())
            continue
        got[(m.partition(), m.offset())] = m.value()
    c.close()
    return got


def missing(want, got):
    """Entries of want ({key: value}) not in got with the same value."""
    return sorted(k for k, v in want.items() if got.get(k) != v)


def stream(p, topic, parts, on_tick=None):
    """Produces to topic round-robin for STREAM_S seconds."""
    i, end = 0, time.monotonic() + STREAM_S
    while time.monotonic() < end:
        try:
            p.produce(topic, value=b"%s-%d" % (topic.encode(), i), partition=i % parts)
            i += 1
        except BufferError:
            pass
        p.poll(0.001)
        if on_tick:
            on_tick()
    return i


def acked_recorder():
    acked = {}

    def cb(err, msg):
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()
    return acked, cb


# -- cases: workload(b, cut) -> state, then verify(b, state) on the copy --

def acks_all_workload(b, cut):
    create(b, "t", 2)
    acked, cb = acked_recorder()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 2, "on_delivery": cb})
    sent = stream(p, "t", 2)
    cut()
    p.poll(0.5)  # acknowledgements that reached the client before the cut
    p.purge()
    log("acks_all: %d produced, %d acknowledged before the cut" % (sent, len(acked)))
    check(acked, "nothing was acknowledged before the cut")
    return dict(acked)


def acks_all_verify(b, acked):
    lost = missing(acked, read_all(b, "t", 2))
    eq(lost[:10], [], "acks=all records lost (%d of %d)" % (len(lost), len(acked)))


def acks_1_workload(b, cut):
    create(b, "t", 2)
    acked, cb = acked_recorder()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 2, "on_delivery": cb})
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "live", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10})
    c.assign([TopicPartition("t", p_, 0) for p_ in range(2)])
    consumed = {}

    def consume():
        for m in c.consume(100, 0.001):
            if not m.error():
                consumed[(m.partition(), m.offset())] = m.value()
    stream(p, "t", 2, consume)
    cut()
    p.poll(0.5)
    p.purge()
    c.close()
    log("acks_1: %d acknowledged, %d consumed before the cut" % (len(acked), len(consumed)))
    check(consumed, "nothing was consumed before the cut")
    return {"acked": dict(acked), "consumed": consumed}


def acks_1_verify(b, st):
    got = read_all(b, "t", 2)
    lost_acked = missing(st["acked"], got)
    log("acks_1: %d of %d acknowledged records lost (acks=1 is not promised durable)"
        % (len(lost_acked), len(st["acked"])))
    lost = missing(st["consumed"], got)
    eq(lost[:10], [], "consumed records lost (%d of %d)" % (len(lost), len(st["consumed"])))


def offsets_workload(b, cut):
    create(b, "t", 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(200):
        p.produce("t", value=b"%d" % i, partition=0)
    eq(p.flush(10), 0, "unsent")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    last, end = 0, time.monotonic() + STREAM_S
    while time.monotonic() < end and last < 200:
        c.commit(offsets=[TopicPartition("t", 0, last + 1)], asynchronous=False)
        last += 1
    cut()
    log("offsets: last acknowledged commit %d" % last)
    return last


def offsets_verify(b, last):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
    got = c.committed([TopicPartition("t", 0)], timeout=15)[0].offset
    c.close()
    eq(got, last, "committed offset after the cut")


def txn_abort_workload(b, cut):
    create(b, "t", 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "powercut"})
    p.init_transactions(15)
    want = {}
    for phase in ("committed-1", "aborted", "committed-2"):
        p.begin_transaction()
        for i in range(10):
            p.produce("t", value=b"%s-%d" % (phase.encode(), i), partition=0)
        eq(p.flush(10), 0, "unsent")
        if phase == "aborted":
            p.abort_transaction(15)
        else:
            p.commit_transaction(15)
            want.update({v: True for v in (b"%s-%d" % (phase.encode(), i) for i in range(10))})
    time.sleep(6)  # past the periodic recovery-point checkpoint (5 s)
    cut()
    return sorted(want)


def txn_abort_verify(b, want):
    got = sorted(read_all(b, "t", 1, "read_committed").values())
    aborted = [v for v in got if v.startswith(b"aborted")]
    eq(aborted[:5], [], "aborted records served to read_committed (%d)" % len(aborted))
    eq(got, want, "committed records after the cut")


COMPACT_KEYS, COMPACT_DELETED = 40, 10


def compact_workload(b, cut):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    cfg = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": "0"}
    a.create_topics([NewTopic("c", 1, 1, config=cfg)])["c"].result(timeout=15)
    last = {}  # key -> (offset, value) of its last acknowledged record

    def cb(err, msg):
        if err is None and msg.offset() > last.get(msg.key(), (-1, None))[0]:
            last[msg.key()] = (msg.offset(), msg.value())
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 2, "on_delivery": cb})
    for v in range(30):
        for k in range(COMPACT_KEYS):
            deleted = v >= 20 and k < COMPACT_DELETED
            p.produce("c", key=b"k%02d" % k, value=None if deleted else b"k%02d-v%d" % (k, v), partition=0)
        eq(p.flush(15), 0, "unflushed")
        if v == 25:
            b.wait_log("cleaner: '", timeout_s=30)
    since = b.log_size()
    p.produce("c", key=b"k%02d" % (COMPACT_KEYS - 1), value=b"x" * 5000, partition=0)  # seals a segment
    eq(p.flush(15), 0, "unflushed")
    b.wait_log("cleaner: '", timeout_s=30, since=since)
    cut()
    p.purge()
    log("compact: %d keys acknowledged, the cut right after: %s" % (len(last), b.log_text()[since:].strip()[-160:]))
    check(len(last) == COMPACT_KEYS, "every key acknowledged")
    return {k: v for k, (_, v) in last.items()}


def compact_verify(b, want):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "check.crcs": True})
    c.assign([TopicPartition("c", 0, 0)])
    seen, deadline = {}, time.monotonic() + 30
    while True:
        check(time.monotonic() < deadline, "reading c back timed out")
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            check(m.error().code() == -191, "consume error: %s" % m.error())  # _PARTITION_EOF
            break
        seen[m.key()] = m.value()
    c.close()
    log("compact: %d keys served after the cut, %d of them tombstoned" % (len(seen), sum(v is None for v in seen.values())))
    wrong = sorted(k for k, v in want.items() if seen.get(k) != v and not (v is None and k not in seen))
    eq(wrong[:5], [], "keys whose last value served is not the last acknowledged (%d)" % len(wrong))


SHIM = {}


def create_env():
    SHIM["shim"] = SyncShim()
    return SHIM["shim"].env()


def create_workload(b, cut):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    acked = ["made-%d" % i for i in range(8)]
    fs = a.create_topics([NewTopic(n, 25, 1, config={"retention.ms": "4321000"}) for n in acked])
    for n in acked:
        fs[n].result(timeout=60)
    late = ["late-%d" % i for i in range(8)]
    SHIM["shim"].hold_syncfs()
    a.create_topics([NewTopic(n, 25, 1, config={"retention.ms": "4321000"}) for n in late], request_timeout=5)
    data = b.data_dir
    wait_until(lambda: sum(d.startswith("late-") for d in os.listdir(data)) >= 8 * 25, 30,
               "the second round's files")
    cut()
    return {"acked": acked, "late": late}


def create_verify(b, st):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    md = a.list_topics(timeout=15).topics
    eq([n for n in st["late"] if n in md], [], "unanswered topics listed after the cut")
    for n in st["acked"]:
        check(n in md, "answered topic %s there after the cut" % n)
        eq(md[n].error, None, "%s topic error" % n)
        eq(len(md[n].partitions), 25, "partitions of %s" % n)
        res = ConfigResource("topic", n)
        eq(a.describe_configs([res])[res].result(timeout=15)["retention.ms"].value, "4321000",
           "retention.ms of %s" % n)


CASES = {
    "acks_all": (acks_all_workload, acks_all_verify),
    "acks_1": (acks_1_workload, acks_1_verify),
    "offsets": (offsets_workload, offsets_verify),
    "txn_abort": (txn_abort_workload, txn_abort_verify),
    "create": (create_workload, create_verify, create_env),
    "compact": (compact_workload, compact_verify),
}
CASE_OVERRIDES = {"compact": {"log.cleaner.backoff.ms": "50"}}


def run_case(tmp, name):
    workload, verify = CASES[name][:2]
    env = CASES[name][2]() if len(CASES[name]) > 2 else None
    overrides = dict({"num.partitions": "1", "auto.create.topics.enable": "false"}, **CASE_OVERRIDES.get(name, {}))
    with disk.Disk(tmp, name) as d:
        b = Broker(data_dir=os.path.join(d.mnt, "data"), overrides=overrides, name="powercut-" + name,
                   start=False, env=env)
        after = None
        try:
            b.start()
            copy = []

            def cut():
                d.write_canary()
                os.kill(b.pid, signal.SIGSTOP)
                copy.append(d.cut())
            state = workload(b, cut)
            b.kill9()
            mnt = d.mount_copy(copy[0])
            check(not d.canary_survived(mnt), "harness: unsynced data survived the cut; it proves nothing")
            after = Broker(data_dir=os.path.join(mnt, "data"), overrides=overrides,
                           name="powercut-%s-after" % name)
            after.start()
            verify(after, state)
            eq(after.stop(), 0, "exit status of the broker on the copy")
        except BaseException:
            for br in (b, after):
                if br:
                    br.dump_log()
            raise
        finally:
            for br in (b, after):
                if br:
                    br.cleanup(keep=os.environ.get("GREGOR_KEEP") == "1")


def main(argv):
    why = disk.available()
    if why:
        print("SKIP powercut: %s" % why)
        return disk.SKIP
    names = argv or list(CASES)
    for n in names:
        if n not in CASES:
            print("unknown case '%s' (cases: %s)" % (n, " ".join(CASES)))
            return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: unmounts, detaches
    tmp = tempfile.mkdtemp(prefix="gregor-powercut-")
    failed = []
    try:
        for n in names:
            t0 = time.monotonic()
            try:
                run_case(tmp, n)
                print("PASS %s (%.0fs)" % (n, time.monotonic() - t0), flush=True)
            except disk.Unavailable as e:
                print("SKIP powercut: %s" % e)
                return disk.SKIP
            except AssertionError as e:
                print("FAIL %s: %s" % (n, e), flush=True)
                failed.append(n)
    finally:
        if os.environ.get("GREGOR_KEEP") == "1":
            print("kept %s (disk images: <case>.img, the cut copy <case>-cut.img)" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed%s" % (len(names) - len(failed), len(failed),
                                      (": " + " ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
