#!/usr/bin/python3
"""tests/torture/torture.py - crash-loop torture (issue 7).

A librdkafka idempotent producer (acks=all, enable.idempotence=true) writes
numbered messages to one partition while the broker is SIGKILLed at random
moments CYCLES times (default 20).  With --torn (default on) random bytes
are appended to the last segment while the broker is down, as a torn
write of an unacknowledged batch would leave them.  After each restart a
read_committed consumer reads the whole partition and checks that every
message acknowledged before the kill is present exactly once, in order,
and no consumer ever sees a corrupt batch (check.crcs).

Prints per cycle and at the end:  acknowledged N found N lost N duplicated N
--transactional: a transactional producer (1..20 messages per transaction)
instead; committed transactions must show exactly once, aborted ones never
(read_committed).  "duplicated" then also counts visible aborted messages.

Exit 0 if nothing was lost, duplicated or reordered; 1 otherwise.

    /usr/bin/python3 tests/torture/torture.py                 # 20 kills, ~1 min
    /usr/bin/python3 tests/torture/torture.py --cycles 200    # by hand, longer
    GREGOR_BIN=build-san/bin/gregor /usr/bin/python3 tests/torture/torture.py
"""
import argparse, glob, os, random, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, log  # noqa: E402
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402

TOPIC = "torture"


class Writer:
    def __init__(self, bootstrap, idempotent):
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotent,
                           "linger.ms": 2, "message.timeout.ms": 600000, "retry.backoff.ms": 50,
                           "reconnect.backoff.max.ms": 200, "socket.timeout.ms": 3000})
        self.acked, self.failed, self.next, self.fatal = set(), 0, 0, None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def dr(self, err, msg):
        n = int(msg.value().split(b":")[1])
        with self.lock:
            if err is None:
                self.acked.add(n)
            else:
                self.failed += 1
                if err.fatal():
                    self.fatal = str(err)

    def run(self):
        while not self.stop.is_set():
            try:
                self.p.produce(TOPIC, value=b"m:%d:" % self.next + b"x" * random.randint(0, 300),
                               partition=0, on_delivery=self.dr)
                self.next += 1
            except BufferError:
                pass
            except KafkaException as e:
                self.fatal = str(e)
                return
            self.p.poll(0.001 if self.next % 50 else 0.01)

    def snapshot(self):
        with self.lock:
            return set(self.acked)

    def close(self):
        self.stop.set()
        self.t.join()
        self.p.flush(30)


class TxnWriter(Writer):
    """Transactional producer: transactions of 1..20 messages; a message counts
    as acknowledged once commit_transaction() returned.  Messages of a
    transaction whose commit failed are 'uncertain' (may or may not show)."""

    def __init__(self, bootstrap, idempotent):
        self.p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "torture-txn",
                           "transaction.timeout.ms": 60000, "message.timeout.ms": 60000,
                           "retry.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                           "socket.timeout.ms": 3000})
        self.acked, self.failed, self.next, self.fatal = set(), 0, 0, None
        self.uncertain = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        try:
            self.p.init_transactions(60)
        except KafkaException as e:
            self.fatal = "init_transactions: %s" % e
            return
        while not self.stop.is_set():
            batch = []
            try:
                self.p.begin_transaction()
                for _ in range(random.randint(1, 20)):
                    self.p.produce(TOPIC, value=b"m:%d:" % self.next, partition=0)
                    batch.append(self.next)
                    self.next += 1
                self.p.commit_transaction(30)
                with self.lock:
                    self.acked.update(batch)
            except KafkaException as e:
                err = e.args[0]
                with self.lock:
                    self.uncertain.update(batch)
                    self.failed += 1
                if err.fatal():
                    self.fatal = str(err)
                    return
                try:
                    if err.txn_requires_abort():
                        self.p.abort_transaction(30)
                except KafkaException as e2:
                    if e2.args[0].fatal():
                        self.fatal = str(e2)
                        return
                time.sleep(0.1)

    def close(self):
        self.stop.set()
        self.t.join()


def read_all(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "torture", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "check.crcs": True, "fetch.error.backoff.ms": 50})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=20)
    except KafkaException as e:
        c.close()
        if e.args[0].code() == KafkaError._UNKNOWN_PARTITION:
            return [], [], 0  # killed before the first produce created the topic
        raise
    c.assign([TopicPartition(TOPIC, 0, lo)])
    seen, errors = [], []
    deadline = time.time() + 60
    pos = lo
    while pos < hi and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
            continue
        pos = m.offset() + 1
        seen.append(int(m.value().split(b":")[1]))
    c.close()
    return seen, errors, hi


def torn_tail(b):
    segs = sorted(glob.glob(os.path.join(b.partition_dir(TOPIC, 0), "*.log")))
    if segs:
        with open(segs[-1], "ab") as f:
            f.write(os.urandom(random.randint(1, 200)))


def verify(acked, seen, allowed=None):
    """allowed: the messages that may legitimately show (None: any)."""
    counts = {}
    for n in seen:
        counts[n] = counts.get(n, 0) + 1
    lost = sorted(n for n in acked if n not in counts)
    dup = sorted(n for n, k in counts.items() if k > 1)
    order = sum(1 for a, b in zip(seen, seen[1:]) if b <= a)
    if allowed is not None:
        dup += sorted(n for n in counts if n not in allowed)  # aborted data visible
    return lost, dup, order


def allowed(w):
    """Transactional mode: only committed or uncertain messages may be read."""
    if not isinstance(w, TxnWriter):
        return None
    with w.lock:
        return set(w.acked) | set(w.uncertain) | set(range(w.next - 20, w.next))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--min-s", type=float, default=0.3)
    ap.add_argument("--max-s", type=float, default=1.5)
    ap.add_argument("--no-torn", action="store_true")
    ap.add_argument("--no-idempotence", action="store_true")
    ap.add_argument("--transactional", action="store_true",
                    help="transactional producer; checks committed exactly once, aborted never")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    random.seed(a.seed)
    log("seed %d, %d cycles" % (a.seed, a.cycles))
    bad = False
    with Broker(overrides={"num.partitions": "1"}, name="torture") as b:
        w = (TxnWriter if a.transactional else Writer)(b.bootstrap, not a.no_idempotence)
        for cycle in range(1, a.cycles + 1):
            time.sleep(random.uniform(a.min_s, a.max_s))
            acked = w.snapshot()
            b.kill9()
            if not a.no_torn and random.random() < 0.5:
                torn_tail(b)
            b.start()
            seen, errors, hw = read_all(b.bootstrap)
            lost, dup, order = verify(acked, seen, allowed(w))
            print("cycle %2d: acknowledged %d found %d lost %d duplicated %d out-of-order %d hw %d%s"
                  % (cycle, len(acked), len(seen), len(lost), len(dup), order, hw,
                     " consumer errors %s" % errors[:2] if errors else ""), flush=True)
            if lost or dup or order or errors or w.fatal:
                bad = True
                if lost:
                    print("  lost (first 10): %s" % lost[:10])
                if dup:
                    print("  duplicated (first 10): %s" % dup[:10])
                if w.fatal:
                    print("  producer fatal error: %s" % w.fatal)
                    break
        w.close()
        acked = w.snapshot()
        seen, errors, hw = read_all(b.bootstrap)
        lost, dup, order = verify(acked, seen, allowed(w))
        print("final: acknowledged %d found %d lost %d duplicated %d out-of-order %d (produced %d, failed %d)"
              % (len(acked), len(seen), len(lost), len(dup), order, w.next, w.failed), flush=True)
        bad |= bool(lost or dup or order or errors)
        b.stop()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
