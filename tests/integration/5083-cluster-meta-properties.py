"""meta.properties ties a log dir to one broker and one cluster, as in Kafka.

  1. a broker joining a cluster keeps /cluster/id as cluster.id in its
     meta.properties (and node.id), read back with kazoo
  2. the same log dir started against another ZooKeeper (another cluster,
     another /cluster/id): exit status 2 and a message that it is trying to
     join the wrong cluster; its meta.properties is unchanged
  3. the same log dir started with another broker.id: the broker refuses to
     start, naming both ids
  4. back with its own ZooKeeper and broker.id it starts and registers
  5. a single node still makes up a cluster id and keeps it across restarts
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, BrokerError, check, eq, main, wait_until  # noqa: E402
from zookeeper import ZooKeeper, cluster_broker  # noqa: E402


def props(path):
    out = {}
    with open(path) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.strip().split("=", 1)
                out[k] = v
    return out


def start_fails(b):
    """Starts b, which must exit by itself; returns its exit status."""
    try:
        b.start()
    except BrokerError:
        pass  # exited before its port accepted
    if b.proc:
        b.proc.wait(timeout=20)
        b.last_returncode = b.proc.returncode
        b.proc = None
    return b.last_returncode


def wrong_cluster(data_dir, meta_before):
    with ZooKeeper(name="5083-other") as other:
        b = cluster_broker(other.connect, 1, start=False)
        b.data_dir = data_dir
        b._write_props()
        try:
            eq(start_fails(b), 2, "exit status joining another cluster")
            check("trying to join the wrong cluster" in b.log_text(), "no clear message:\n" + b.log_tail())
            with open(os.path.join(data_dir, "meta.properties")) as f:
                eq(f.read(), meta_before, "meta.properties after the refused start")
        finally:
            b.cleanup(keep=False)


def wrong_broker_id(zk, data_dir):
    b = cluster_broker(zk.connect, 7, start=False)
    b.data_dir = data_dir
    b._write_props()
    try:
        rc = start_fails(b)
        check(rc not in (0, None), "a broker.id 7 on broker 1's log dir started (status %s)" % rc)
        check("configured broker.id 7 does not match stored broker.id 1" in b.log_text(),
              "no clear message:\n" + b.log_tail())
    finally:
        b.cleanup(keep=False)


def single_node():
    b = Broker()
    try:
        b.start()
        first = props(os.path.join(b.data_dir, "meta.properties")).get("cluster.id")
        check(first and len(first) == 22, "single node cluster.id %r" % first)
        eq(b.stop(), 0, "exit status")
        b.start()
        eq(props(os.path.join(b.data_dir, "meta.properties")).get("cluster.id"), first, "cluster.id after restart")
        eq(b.stop(), 0, "exit status")
    finally:
        b.cleanup(keep=False)


def test():
    with ZooKeeper() as zk:
        zc = zk.client()
        b = cluster_broker(zk.connect, 1, zookeeper_session_timeout_ms=6000)
        try:
            wait_until(lambda: zc.exists("/brokers/ids/1"), 20, "broker 1 registered")
            cid = json.loads(zc.get("/cluster/id")[0])["id"]
            meta_path = os.path.join(b.data_dir, "meta.properties")
            wait_until(lambda: props(meta_path).get("cluster.id") == cid, 10, "cluster.id in meta.properties")
            eq(props(meta_path).get("node.id"), "1", "node.id in meta.properties")
            eq(b.stop(), 0, "exit status")
            with open(meta_path) as f:
                meta = f.read()
            wrong_cluster(b.data_dir, meta)
            wrong_broker_id(zk, b.data_dir)
            # its clean stop closed its session; on a loaded machine ZooKeeper may drop the
            # registration a moment later (at worst at the session timeout)
            wait_until(lambda: not zc.exists("/brokers/ids/1"), 30, "broker 1's registration gone")
            b.start()
            wait_until(lambda: zc.exists("/brokers/ids/1"), 20, "broker 1 registered again")
            eq(b.stop(), 0, "exit status")
        except BaseException:
            b.dump_log()
            raise
        finally:
            b.cleanup(keep=False)
    single_node()


if __name__ == "__main__":
    main(test)
