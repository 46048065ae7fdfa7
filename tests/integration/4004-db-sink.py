"""db-sink (consumer-side idempotence): examples/db-sink consumes a topic into
SQLite, killed with SIGKILL at random moments and restarted; the database must
end with every message exactly once (processed rows, business effect rows and
counters), resuming each time from the offsets stored in the database."""

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = int(os.environ.get("DB_SINK_MESSAGES", "20000"))
KILLS = 6
PARTS = 3
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SINK = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin", "db-sink")


def test():
    check(os.access(SINK, os.X_OK), "db-sink is built at %s" % SINK)
    with Broker(props={"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}) as b:
        topic = "db-sink-in"
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=PARTS, replication_factor=1)])[topic].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
        for i in range(N):
            p.produce(topic, value=b"v-%d" % i, partition=i % PARTS)
            if i % 10000 == 0:
                p.poll(0)
        eq(p.flush(60), 0, "unflushed")
        db = os.path.join(b.tmp, "sink.db")
        cmd = [SINK, "--bootstrap-server", b.bootstrap, "--topic", topic, "--group", "db-sink",
               "--db", db, "--batch", "50", "--idle-exit-ms", "3000"]
        for k in range(KILLS):
            sp = subprocess.Popen(cmd, stderr=subprocess.PIPE)
            time.sleep(random.uniform(0.3, 1.2))
            sp.send_signal(signal.SIGKILL)
            sp.wait()
        cmd[-1] = "8000"  # longer than session.timeout.ms: the killed members' partitions come back
        for attempt in range(3):
            sp = subprocess.Popen(cmd, stderr=subprocess.PIPE)
            _, err = sp.communicate(timeout=120)
            eq(sp.returncode, 0, "db-sink exit status (%s)" % err.decode(errors="replace")[-500:])
            con = sqlite3.connect(db)
            done = con.execute("SELECT COUNT(*) FROM processed").fetchone()[0]
            con.close()
            if done >= N:
                break
        con = sqlite3.connect(db)
        q = lambda s: con.execute(s).fetchone()[0]  # noqa: E731
        counts = (q("SELECT COUNT(*) FROM processed"), q("SELECT COUNT(*) FROM messages"),
                  q("SELECT COUNT(DISTINCT value) FROM messages"), q("SELECT COALESCE(SUM(n), 0) FROM counters"))
        log("db-sink after %d kills: processed %d, messages %d, distinct %d, counters %d" % ((KILLS,) + counts))
        eq(counts, (N, N, N, N), "(processed, messages, distinct values, counter sum)")


main(test)
