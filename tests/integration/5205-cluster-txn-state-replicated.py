"""Cluster mode: the transaction coordinator answers a state change once the
in-sync replicas of its __transaction_state partition have the record (the
partition's high watermark covers it), as Kafka's, not after the local
fsync alone.

ZooKeeper and three brokers in the chroot /gregor/c205 (6 s ZooKeeper
sessions, replica.lag.time.max.ms 20 s so the stopped followers stay in
the ISR); __transaction_state of 3 partitions, replication factor 3.

  1. InitProducerId of an id at its coordinator succeeds (the partition is
     loaded)
  2. both other brokers (the partition's followers) are stopped (SIGSTOP):
     a second InitProducerId is not answered within 2 s
  3. they are continued (SIGCONT): the answer arrives, no error, the same
     producer id with the epoch bumped
"""

import os
import signal
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from gregor import check, eq, log, main, wait_until  # noqa: E402
from zookeeper import running_cluster, wait_listed  # noqa: E402

CHROOT = "/gregor/c205"
TID = "tx-5205"
SETTINGS = {"zookeeper_session_timeout_ms": 6000, "zookeeper_connection_timeout_ms": 1000,
            "transaction_state_log_num_partitions": 3, "replica_lag_time_max_ms": 20000}


def init_body():
    return kwire.string(TID) + kwire.i32(60000)


def parse_init(r):
    r.i32()
    return r.i16(), r.i64(), r.i16()


def test():
    with running_cluster((1, 2, 3), CHROOT, **SETTINGS) as (zk, zc, brokers):
        wait_listed(brokers)
        kwire.find_coordinator(brokers[0].port, TID, 1)
        wait_until(lambda: kwire.find_coordinator(brokers[0].port, TID, 1)[0] == 0, 30, "a coordinator for " + TID)
        coord = brokers[kwire.find_coordinator(brokers[0].port, TID, 1)[1] - 1]
        wait_until(lambda: parse_init(kwire.call(coord.port, 22, 1, init_body()))[0] == 0, 30,
                   "InitProducerId at the coordinator")
        err, pid, epoch = parse_init(kwire.call(coord.port, 22, 1, init_body()))
        eq(err, 0, "InitProducerId")
        followers = [b for b in brokers if b is not coord]
        sock = kwire.connect(coord.port)
        for b in followers:
            b.proc.send_signal(signal.SIGSTOP)
        try:
            sock.sendall(kwire.request(22, 1, 7, init_body()))
            sock.settimeout(2)
            try:
                kwire.recv_response(sock)
                answered = True
            except socket.timeout:
                answered = False
            check(not answered, "InitProducerId answered while no follower had its record")
            log("no answer while the followers are stopped")
        finally:
            for b in followers:
                b.proc.send_signal(signal.SIGCONT)
        sock.settimeout(20)
        corr, body = kwire.recv_response(sock)
        sock.close()
        eq(corr, 7, "correlation id")
        eq(parse_init(kwire.Reader(body)), (0, pid, epoch + 1), "the answer once the followers have the record")
        log("answered once the followers fetched it")


if __name__ == "__main__":
    main(test)
