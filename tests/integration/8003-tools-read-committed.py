"""gregor-console-consumer --isolation-level: a committed and an aborted
transaction (python3-confluent-kafka), then the console consumer with
read_committed shows only the committed records and read_uncommitted shows
both, each followed by Kafka's "Processed a total of N messages"."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main, run  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONSUMER = os.path.join(ROOT, BUILD, "bin", "gregor-console-consumer")
TOPIC = "rc-topic"


def transaction(p, values, commit):
    p.begin_transaction()
    for v in values:
        p.produce(TOPIC, value=v.encode(), partition=0)
    if commit:
        p.commit_transaction(30)
    else:
        p.flush(30)
        p.abort_transaction(30)


def consume(b, isolation):
    r = run([CONSUMER, "--bootstrap-server", b.bootstrap, "--topic", TOPIC, "--from-beginning",
             "--isolation-level", isolation, "--timeout-ms", "3000"], timeout_s=60)
    return r.stdout.decode().split(), r.stderr.decode()


def test():
    with Broker(props={"transaction.state.log.num.partitions": "1", "offsets.topic.num.partitions": "1"}) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "rc-tool"})
        p.init_transactions(30)
        transaction(p, ["c1", "c2"], commit=True)
        transaction(p, ["a1", "a2", "a3"], commit=False)
        transaction(p, ["c3"], commit=True)
        got, err = consume(b, "read_committed")
        log("read_committed: %s" % got)
        eq(got, ["c1", "c2", "c3"], "read_committed values")
        eq("Processed a total of 3 messages" in err, True, "read_committed summary line")
        got, err = consume(b, "read_uncommitted")
        log("read_uncommitted: %s" % got)
        eq(got, ["c1", "c2", "a1", "a2", "a3", "c3"], "read_uncommitted values")
        eq("Processed a total of 6 messages" in err, True, "read_uncommitted summary line")


main(test)
