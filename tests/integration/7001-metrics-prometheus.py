#!/usr/bin/python3
"""7001: a real Prometheus scrapes the broker's /metrics (metrics.listener).

  1. The broker starts with metrics.listener on a free loopback port:
     /health/live and /health/ready answer 200, the exposition is accepted
     by `promtool check metrics` (curl's output piped into it).
  2. Prometheus (Debian's, own config and data dir, free port, 1 s
     scrape interval) scrapes it; a confluent_kafka producer writes 200
     records to a topic and a consumer reads them back.
  3. Prometheus's query API then returns, for that topic, bytes in equal to
     the broker's log size, 200 messages in, bytes out > 0, a Produce
     request count, and a request-latency histogram with samples for
     Produce; the partition's kafka_log_log_size is non-zero and the
     flush histogram has rounds (acks=all syncs).
  4. 50 more records are produced after the consumer committed and left:
     the group's kafka_consumergroup_lag for the partition reaches 50.
On code without the listener the broker refuses the unknown setting and
step 1 fails.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from confluent_kafka import Consumer, Producer  # noqa: E402
from gregor import Broker, check, eq, free_port, log, main, wait_until  # noqa: E402
from promhttp import Prometheus, http_get  # noqa: E402

TOPIC = "metrics-7001"
N = 200
EXTRA = 50


def promtool_accepts(port):
    curl = subprocess.Popen(["curl", "-sf", "http://127.0.0.1:%d/metrics" % port], stdout=subprocess.PIPE)
    p = subprocess.run(["promtool", "check", "metrics"], stdin=curl.stdout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    curl.stdout.close()
    eq(curl.wait(timeout=30), 0, "curl exit status")
    check(p.returncode == 0, "promtool check metrics: exit %d: %s" % (p.returncode, p.stdout.decode()[-2000:]))


def produce_and_consume(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(N):
        p.produce(TOPIC, value=b"value-%04d" % i, key=b"k%d" % i)
    eq(p.flush(30), 0, "records left unflushed")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g7001", "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    got = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
        if got == N:
            break
    c.close()
    eq(got, N, "records consumed")


def one(prom, expr):
    r = prom.query(expr)
    return r[0][1] if r else 0.0


def test():
    mport = free_port()
    with Broker(props={"metrics.listener": "http://127.0.0.1:%d" % mport,
                       "group.initial.rebalance.delay.ms": "0"}) as b:
        b.wait_log("metrics listener on http://127.0.0.1:%d" % mport)
        eq(http_get(mport, "/health/live")[0], 200, "/health/live")
        eq(http_get(mport, "/health/ready")[0], 200, "/health/ready")
        promtool_accepts(mport)
        with Prometheus("127.0.0.1:%d" % mport) as prom:
            wait_until(prom.targets_up, 15, "prometheus scraping the broker")
            produce_and_consume(b.bootstrap)
            sel = '{topic="%s"}' % TOPIC
            wait_until(lambda: one(prom, "kafka_server_brokertopicmetrics_messagesin_total" + sel) == N
                       and one(prom, "kafka_server_brokertopicmetrics_bytesout_total" + sel) > 0, 15,
                       "the producer's and consumer's traffic in prometheus")
            bytes_in = one(prom, "kafka_server_brokertopicmetrics_bytesin_total" + sel)
            size = one(prom, 'kafka_log_log_size{topic="%s",partition="0"}' % TOPIC)
            log("bytes in %d, log size %d" % (bytes_in, size))
            check(bytes_in > 0, "bytes in > 0")
            eq(bytes_in, size, "bytes in = the partition's log size")
            check(one(prom, 'sum(kafka_network_requestmetrics_requests_total{request="Produce"})') > 0,
                  "Produce requests counted")
            check(one(prom, 'kafka_network_requestmetrics_totaltimems_count{request="Produce"}') > 0,
                  "Produce latency histogram has samples")
            q = one(prom, 'histogram_quantile(0.99, kafka_network_requestmetrics_totaltimems_bucket{request="Produce"})')
            check(q > 0, "Produce p99 from the histogram > 0 (got %r)" % q)
            check(one(prom, "kafka_log_logflushstats_logflushrateandtimems_count") > 0, "sync rounds counted")
            check(one(prom, "kafka_server_replicamanager_partitioncount") >= 1, "partition count")
            check(one(prom, "kafka_server_replicamanager_leadercount") >= 1, "leader count")
            more = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
            for i in range(EXTRA):
                more.produce(TOPIC, value=b"later-%d" % i)
            eq(more.flush(30), 0, "later records left unflushed")
            lag = 'kafka_consumergroup_lag{consumergroup="g7001",topic="%s",partition="0"}' % TOPIC
            wait_until(lambda: one(prom, lag) == EXTRA, 15, "the group's lag at %d in prometheus" % EXTRA)
            check(one(prom, "process_open_fds") > 0 and one(prom, "process_resident_memory_bytes") > 0,
                  "process metrics")
        promtool_accepts(mport)


if __name__ == "__main__":
    main(test)
