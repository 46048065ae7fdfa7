"""kafka-python 2.0.2 (version probe, no api_version pinned): admin
create_topics, KafkaProducer send/flush with headers and timestamps,
KafkaConsumer assign + seek_to_beginning without a group, beginning/end
offsets, offsets_for_times."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, check, log, main  # noqa: E402

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.errors import TopicAlreadyExistsError  # noqa: E402

N = 200
T0 = 1700000000000


def value(i):
    return (b"kp-%04d:" % i) + bytes((i * 31 + k) & 0xFF for k in range(i % 300))


def test():
    with Broker(overrides={"auto.create.topics.enable": "false", "num.partitions": "1"}) as b:
        topic = "itest-kafka-python-%d" % os.getpid()

        # -- admin ------------------------------------------------------
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, client_id="itest-0005",
                                 request_timeout_ms=15000)
        log("kafka-python inferred broker api_version %s" % (admin.config["api_version"],))
        check(admin.config["api_version"] >= (0, 11), "inferred api_version %r < (0, 11): headers/record "
              "batches unusable" % (admin.config["api_version"],))
        resp = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout_ms=10000)
        errs = [(t[0], t[1]) for t in resp.topic_errors]
        eq(errs, [(topic, 0)], "create_topics (topic, error_code)")
        try:
            admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout_ms=10000)
            raise AssertionError("duplicate create_topics did not raise TopicAlreadyExistsError")
        except TopicAlreadyExistsError:
            pass
        check(topic in admin.list_topics(), "topic %s missing from list_topics" % topic)
        admin.close()

        # -- produce ----------------------------------------------------
        prod = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=5, retries=0,
                             max_in_flight_requests_per_connection=1)
        futs = [prod.send(topic, key=b"k%d" % i, value=value(i), partition=i % 2,
                          timestamp_ms=T0 + i * 10, headers=[("h", b"%d" % i), ("empty", b"")])
                for i in range(N)]
        prod.flush(timeout=30)
        metas = [f.get(timeout=30) for f in futs]
        eq([(m.partition, m.offset) for m in metas], [(i % 2, i // 2) for i in range(N)],
           "(partition, offset) per send")
        prod.close(timeout=10)

        # -- consume without a group ------------------------------------
        cons = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=100, check_crcs=True)
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        eq(cons.beginning_offsets(tps), {tps[0]: 0, tps[1]: 0}, "beginning_offsets")
        eq(cons.end_offsets(tps), {tps[0]: N // 2, tps[1]: N // 2}, "end_offsets")
        cons.assign(tps)
        cons.seek_to_beginning()
        got = {0: [], 1: []}
        deadline = time.monotonic() + 30
        while len(got[0]) + len(got[1]) < N:
            check(time.monotonic() < deadline, "consumed %d+%d of %d within 30s" % (len(got[0]), len(got[1]), N))
            for tp, recs in cons.poll(timeout_ms=200).items():
                got[tp.partition].extend(recs)
        for p in (0, 1):
            eq([r.offset for r in got[p]], list(range(N // 2)), "offsets consumed from partition %d" % p)
            for r in got[p]:
                i = r.offset * 2 + p
                eq(r.key, b"k%d" % i, "key p%d o%d" % (p, r.offset))
                eq(r.value, value(i), "value p%d o%d" % (p, r.offset))
                eq(r.timestamp, T0 + i * 10, "timestamp p%d o%d" % (p, r.offset))
                eq(r.timestamp_type, 0, "timestamp type (CreateTime) p%d o%d" % (p, r.offset))
                eq(r.headers, [("h", b"%d" % i), ("empty", b"")], "headers p%d o%d" % (p, r.offset))

        # seek_to_beginning again on one partition re-reads from 0.
        cons.seek_to_beginning(tps[1])
        eq(cons.position(tps[1]), 0, "position after seek_to_beginning")
        cons.seek(tps[1], 42)
        eq(cons.position(tps[1]), 42, "position after seek(42)")

        # -- offsets_for_times -------------------------------------------
        # partition 0 holds messages i = 0, 2, 4, ... at offsets i/2 with ts T0 + 10*i.
        r = cons.offsets_for_times({tps[0]: T0 + 10 * 50, tps[1]: T0 + 10 * 50})
        eq((r[tps[0]].offset, r[tps[0]].timestamp), (25, T0 + 500), "offsets_for_times p0 (exact ts)")
        eq((r[tps[1]].offset, r[tps[1]].timestamp), (25, T0 + 510), "offsets_for_times p1 (next ts)")
        r = cons.offsets_for_times({tps[0]: 0})
        eq((r[tps[0]].offset, r[tps[0]].timestamp), (0, T0), "offsets_for_times ts=0")
        r = cons.offsets_for_times({tps[0]: T0 + 10 * N})
        eq(r[tps[0]], None, "offsets_for_times after the last message")
        cons.close()


main(test)
