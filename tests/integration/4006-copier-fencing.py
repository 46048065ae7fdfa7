"""Fencing of eos-copier (issue 5): two copiers with the same transactional id.

Produces numbered messages to a 3-partition source while a first eos-copier
copies them; part-way through, a second eos-copier starts with the same
--transactional-id and --group.  Its InitProducerId bumps the epoch, so the
first copier is fenced: it must exit non-zero (not hang, not crash) with a
clear fencing message on stderr.  The second copier copies the rest and exits
when idle.  The sink read with read_committed then holds every input exactly
once, upper-cased, in order per partition.  Bounded to about 30 s."""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main, wait_until  # noqa: E402
from eos import read_sink, verify_copy  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 6000              # input messages: N // 3 before the first copier starts, the rest while copiers run
PARTS = 3
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COPIER = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin", "eos-copier")
PROPS = {
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}


def produce(b, topic, lo, hi, pace_s=0.0):
    """Produces msg-lo .. msg-(hi-1) to partition i % PARTS; pace_s sleeps between blocks of 100."""
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(lo, hi):
        p.produce(topic, value=b"msg-%07d" % i, partition=i % PARTS)
        if pace_s and i % 100 == 99:
            p.flush(10)
            time.sleep(pace_s)
    eq(p.flush(30), 0, "source messages left unflushed")


def sink_count(b, sink, isolation):
    """Sum over the sink's partitions of the end offset (read_uncommitted) or the LSO (read_committed)."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "count", "isolation.level": isolation})
    n = sum(c.get_watermark_offsets(TopicPartition(sink, p), timeout=10, cached=False)[1] for p in range(PARTS))
    c.close()
    return n


def start_copier(b, src, sink, idle_exit_ms):
    return subprocess.Popen([COPIER, "--bootstrap-server", b.bootstrap, "--from", src, "--to", sink,
                             "--group", "fence-copier", "--transactional-id", "fence-copier-1",
                             "--txn-messages", "100", "--txn-ms", "50",
                             "--transaction-timeout-ms", "10000", "--idle-exit-ms", str(idle_exit_ms),
                             "--session-timeout-ms", "2000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(cp, timeout_s):
    """Waits (bounded) for a copier; kills it if it hangs.  Returns (exit status, stderr text, hung)."""
    try:
        _, err = cp.communicate(timeout=timeout_s)
        hung = False
    except subprocess.TimeoutExpired:
        cp.kill()
        _, err = cp.communicate()
        hung = True
    return cp.returncode, err.decode(errors="replace"), hung


def test():
    check(os.access(COPIER, os.X_OK), "eos-copier is built at %s" % COPIER)
    t0 = time.time()
    with Broker(props=PROPS) as b:
        src, sink = "fence-source", "fence-sink"
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for t in (src, sink):
            admin.create_topics([NewTopic(t, num_partitions=PARTS, replication_factor=1)])[t].result(30)
        produce(b, src, 0, N // 3)

        first = start_copier(b, src, sink, 0)      # never exits on idle: only fencing may end it
        wait_until(lambda: sink_count(b, sink, "read_committed") > 0 or first.poll() is not None, 15,
                   "the first copier commits a transaction")
        check(first.poll() is None, "the first copier is still running before the second starts")
        # More input arrives while both copiers run, so the first is mid-transaction when fenced.
        feeder = threading.Thread(target=produce, args=(b, src, N // 3, N, 0.05))
        feeder.start()
        time.sleep(0.3)
        copied_before = sink_count(b, sink, "read_committed")
        log("first copier committed %d of %d before the second started" % (copied_before, N))
        check(copied_before < N, "the first copier copied only part of the input")
        second = start_copier(b, src, sink, 4000)

        rc1, err1, hung1 = finish(first, 15)
        log("first copier: exit %s, stderr: %s" % (rc1, err1.strip()[-1000:]))
        check(not hung1, "the fenced copier exits by itself (it hung and was killed)")
        check(rc1 not in (0, None) and rc1 > 0, "the fenced copier exits with a non-zero status, not a signal "
              "(got %s)" % rc1)
        check("eos-copier: fenced: another copier with the same transactional id 'fence-copier-1' took over"
              in err1, "the fenced copier says on stderr that a copier with the same transactional id fenced it")

        feeder.join(30)
        check(not feeder.is_alive(), "the source producer finished")
        rc2, err2, hung2 = finish(second, 20)
        log("second copier: exit %s, stderr: %s" % (rc2, err2.strip()[-1000:]))
        check(not hung2, "the second copier exits on idle")
        eq(rc2, 0, "the second copier's exit status")

        got = read_sink(b, sink, PARTS, "read_committed", N, 15)
        seen, dups, missing, order_bad, bad_case = verify_copy(got, N, PARTS)
        log("read_committed: expected %d, seen %d, duplicates %d, missing %d, out of order %d, not upper-case %d"
            % (N, seen, dups, missing, order_bad, bad_case))
        eq((seen, dups, missing, order_bad, bad_case), (N, 0, 0, 0, 0),
           "(seen, duplicates, missing, out of order, not upper-case)")
        log("total %.1fs" % (time.time() - t0))


main(test)
