#!/usr/bin/python3
"""7060: error codes inside responses, the Fetch split and the purgatories in /metrics.

  1. A broker with auto.create.topics.enable=false and metrics.listener: two
     Produce v3 requests (kwire) to a topic that does not exist are answered
     UNKNOWN_TOPIC_OR_PARTITION in the response body; the scrape shows
     kafka_network_requestmetrics_errors_total{request="Produce",
     error="UNKNOWN_TOPIC_OR_PARTITION"} 2 (and no error="NONE" series);
     listener PLAINTEXT counts their two connections accepted, none open
     once they closed.
  2. One batch produced with acks=all (kwire): gregor_log_flush_bytes_total
     equals its size, the only bytes written.
  3. A confluent_kafka consumer of an existing, empty topic long-polls
     (fetch.wait.max.ms=3000): the Fetch purgatory shows it parked, the
     Fetch requests count as FetchConsumer, never as FetchFollower.
  4. A transactional producer: gregor_transactions shows its id Ongoing,
     then CompleteCommit.
  5. On a single node the replication gauges are all 0 (nothing is
     replicated, no controller), and `promtool check metrics` accepts the
     exposition.
On code that counted only requests refused by closing the connection,
step 1 finds no errors_total series with an error label.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from confluent_kafka import Consumer, Producer  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main, wait_until  # noqa: E402
from promhttp import promtool_check, sample, scrape  # noqa: E402

TOPIC = "metrics-7060"
MISSING = "metrics-7060-missing"


def produce_missing(port):
    batch = kwire.record_batch([(b"k", b"v")])
    r = kwire.call(port, 0, 3, kwire.produce_v3_body(MISSING, 0, batch))
    return kwire.parse_produce_v3(r.d[r.p:])[(MISSING, 0)][0]


def long_poll(bootstrap, stop):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g7060", "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 3000})
    c.subscribe([TOPIC])
    while not stop.is_set():
        c.poll(0.2)
    c.close()


def test():
    mport = free_port()
    with Broker(overrides={"metrics.listener": "http://127.0.0.1:%d" % mport, "auto.create.topics.enable": "false",
                           "group.initial.rebalance.delay.ms": "0"}) as b:
        for _ in range(2):
            eq(produce_missing(b.port), 3, "Produce to a missing topic: UNKNOWN_TOPIC_OR_PARTITION")
        m = scrape(mport)
        eq(sample(m, "kafka_network_requestmetrics_errors_total", request="Produce",
                  error="UNKNOWN_TOPIC_OR_PARTITION"), 2.0, "Produce errors with UNKNOWN_TOPIC_OR_PARTITION")
        check(not [k for k in m if k[0] == "kafka_network_requestmetrics_errors_total" and ("error", "NONE") in k[1]],
              "no error=\"NONE\" series")
        log("errors_total counts the error codes of answered requests by API and code")
        check(sample(m, "kafka_server_socketservermetrics_connection_creation_total", listener="PLAINTEXT") >= 2,
              "the two connections counted on listener PLAINTEXT")
        wait_until(lambda: sample(scrape(mport), "kafka_server_socketservermetrics_connections",
                                  listener="PLAINTEXT") == 0, 10, "no connection open on PLAINTEXT once closed")

        kwire.create_topic(b.port, TOPIC, 1)
        batch = kwire.record_batch([(b"k%d" % i, b"value-%d" % i) for i in range(50)])
        r = kwire.call(b.port, 0, 3, kwire.produce_v3_body(TOPIC, 0, batch, acks=-1))
        eq(kwire.parse_produce_v3(r.d[r.p:])[(TOPIC, 0)][0], 0, "acks=all produce")
        m = scrape(mport)
        eq(sample(m, "gregor_log_flush_bytes_total"), float(len(batch)), "bytes synced = the batch")
        eq(sample(m, "kafka_server_brokertopicmetrics_bytesin_total"), float(len(batch)), "bytes in")
        log("one acks=all batch of %d bytes: %d bytes synced" % (len(batch), len(batch)))
        stop = threading.Event()
        t = threading.Thread(target=long_poll, args=(b.bootstrap, stop))
        t.start()
        try:
            wait_until(lambda: sample(scrape(mport), "kafka_server_delayedoperationpurgatory_purgatorysize",
                                      delayed_operation="Fetch") == 1.0, 30, "a long-poll fetch in the purgatory")
        finally:
            stop.set()
            t.join(30)
        m = scrape(mport)
        fc = sum(v for (n, l), v in m.items()
                 if n == "kafka_network_requestmetrics_requests_total" and ("request", "FetchConsumer") in l)
        fa = sum(v for (n, l), v in m.items()
                 if n == "kafka_network_requestmetrics_requests_total" and ("request", "Fetch") in l)
        check(fc > 0 and fc == fa, "every Fetch counted as FetchConsumer (%d of %d)" % (fc, fa))
        check(not [k for k in m if ("request", "FetchFollower") in k[1]], "no FetchFollower on a single node")
        log("%d fetches, all FetchConsumer; one parked in the purgatory while it long-polled" % fc)

        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "t7060"})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(TOPIC, value=b"in a transaction")
        p.flush(30)
        wait_until(lambda: sample(scrape(mport), "gregor_transactions", state="Ongoing") == 1.0, 15,
                   "the transaction Ongoing")
        p.commit_transaction(30)
        m = scrape(mport)
        eq(sample(m, "gregor_transactions", state="CompleteCommit"), 1.0, "the transaction CompleteCommit")
        eq(sample(m, "gregor_transactions", state="Ongoing"), 0.0, "transactions Ongoing after the commit")
        log("gregor_transactions follows t7060 from Ongoing to CompleteCommit")

        m = scrape(mport)
        for name in ("kafka_server_replicamanager_underreplicatedpartitions",
                     "kafka_controller_kafkacontroller_offlinepartitionscount",
                     "kafka_controller_kafkacontroller_activecontrollercount",
                     "kafka_server_replicafetchermanager_maxlag", "kafka_server_replicamanager_isrshrinks_total"):
            eq(sample(m, name), 0.0, name + " on a single node")
        promtool_check(mport)


if __name__ == "__main__":
    main(test)
