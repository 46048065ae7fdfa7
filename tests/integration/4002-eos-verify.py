"""eos-verify: the exactly-once verifier of issue 5.

Produces N numbered messages (EOS_VERIFY_MESSAGES, default 20000; the issue's
full run is EOS_VERIFY_MESSAGES=100000) to a 6-partition source, runs
examples/eos-copier and kills it with SIGKILL at random moments (>= 10 times,
EOS_VERIFY_KILLS), restarting it each time, and restarts the broker with
kill -9 twice during the run.  Then reads the sink with read_committed and
checks every input appears exactly once, upper-cased, in order per source
partition, printing expected / seen / duplicates / missing; a read_uncommitted
reader must see aborted duplicates (so the isolation level is what matters)."""

import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402
from eos import read_sink, verify_copy  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = int(os.environ.get("EOS_VERIFY_MESSAGES", "20000"))
KILLS = int(os.environ.get("EOS_VERIFY_KILLS", "10"))
PARTS = 6
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COPIER = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin", "eos-copier")
PROPS = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def produce_source(b, topic):
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(N):
        while True:
            try:
                p.produce(topic, value=b"msg-%07d" % i, partition=i % PARTS)
                break
            except BufferError:
                p.poll(0.1)
    eq(p.flush(60), 0, "source messages left unflushed")


def sink_hw(b, sink):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "hw", "isolation.level": "read_uncommitted"})
    n = sum(c.get_watermark_offsets(TopicPartition(sink, p), timeout=10, cached=False)[1] for p in range(PARTS))
    c.close()
    return n


def start_copier(b, src, sink):
    return subprocess.Popen([COPIER, "--bootstrap-server", b.bootstrap, "--from", src, "--to", sink,
                             "--group", "eos-copier", "--transactional-id", "eos-copier-1",
                             "--txn-messages", "200", "--txn-ms", "100",
                             "--transaction-timeout-ms", "10000", "--idle-exit-ms", "4000",
                             "--session-timeout-ms", "6000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test():
    check(os.access(COPIER, os.X_OK), "eos-copier is built at %s" % COPIER)
    random.seed(int(os.environ.get("EOS_VERIFY_SEED", str(os.getpid()))))
    with Broker(props=PROPS) as b:
        src, sink = "eos-source", "eos-sink"
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for t in (src, sink):
            admin.create_topics([NewTopic(t, num_partitions=PARTS, replication_factor=1)])[t].result(30)
        t0 = time.time()
        produce_source(b, src)
        log("produced %d source messages in %.1fs" % (N, time.time() - t0))

        broker_kills = {KILLS // 3, (2 * KILLS) // 3}
        for k in range(KILLS):
            before = sink_hw(b, sink)
            cp = start_copier(b, src, sink)
            deadline = time.time() + 20
            while time.time() < deadline and sink_hw(b, sink) <= before and cp.poll() is None:
                time.sleep(0.05)  # kill while it is copying, so transactions are open
            time.sleep(random.uniform(0.0, 0.2))
            cp.send_signal(signal.SIGKILL)
            cp.wait()
            if k in broker_kills:
                b.kill9()
                b.start()
                log("copier kill %d: broker kill -9 and restart" % (k + 1))
        log("%d copier kills done; running it to the end" % KILLS)
        for attempt in range(5):
            cp = start_copier(b, src, sink)
            try:
                _, err = cp.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                cp.kill()
                _, err = cp.communicate()
            if cp.returncode != 0:
                log("copier exit %d: %s" % (cp.returncode, err.decode(errors="replace")[-2000:]))
            got = read_sink(b, sink, PARTS, "read_committed", N, 20)
            if sum(len(v) for v in got.values()) >= N:
                break
        seen, dups, missing, order_bad, bad_case = verify_copy(got, N, PARTS)
        log("read_committed: expected %d, seen %d, duplicates %d, missing %d, out of order %d, not upper-case %d"
            % (N, seen, dups, missing, order_bad, bad_case))
        unc = read_sink(b, sink, PARTS, "read_uncommitted", N, 20)
        useen, udups, umissing, _, _ = verify_copy(unc, N, PARTS)
        log("read_uncommitted: seen %d, duplicates %d, missing %d" % (useen, udups, umissing))
        eq((seen, dups, missing, order_bad, bad_case), (N, 0, 0, 0, 0),
           "(seen, duplicates, missing, out of order, bad case)")
        check(udups > 0, "read_uncommitted shows the aborted duplicates")
        log("total %.1fs" % (time.time() - t0))


main(test)
