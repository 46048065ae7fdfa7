"""Partition reassignment over the raw protocol: AlterPartitionReassignments (api 45) and
ListPartitionReassignments (api 46), both v0 (flexible), and the znodes it keeps."""

import glob
import json
import os
import time

from kwire import i32
from replicas import TAGS, assignment, carray, cstring, flex_call, state


def alter_reassignments(port, parts, timeout_ms=30000):
    """AlterPartitionReassignments v0 of parts {(topic, p): [replicas] or None (cancel)}
    -> (top error, {(topic, p): error})."""
    topics = {}
    for (t, p), r in sorted(parts.items()):
        topics.setdefault(t, []).append((p, r))

    def part(pr):
        p, r = pr
        return i32(p) + (b"\x00" if r is None else carray(r, i32)) + TAGS
    body = i32(timeout_ms) + carray(sorted(topics.items()), lambda t: cstring(t[0]) + carray(t[1], part) + TAGS) + TAGS
    r = flex_call(port, 45, 0, body)
    r.i32()
    top = r.i16()
    r.cstring()
    out = {}

    def rtopic(r):
        name = r.cstring()

        def rpart(r):
            p, err = r.i32(), r.i16()
            r.cstring()
            r.tags()
            out[(name, p)] = err
        r.carray(rpart)
        r.tags()
    r.carray(rtopic)
    return top, out


def list_reassignments(port, topics=None):
    """ListPartitionReassignments v0 (topics {topic: [p]} or None for all)
    -> (top error, {(topic, p): (replicas, adding, removing)})."""
    tp = b"\x00" if topics is None else carray(sorted(topics.items()),
                                               lambda t: cstring(t[0]) + carray(t[1], i32) + TAGS)
    r = flex_call(port, 46, 0, i32(30000) + tp + TAGS)
    r.i32()
    top = r.i16()
    r.cstring()
    out = {}

    def rtopic(r):
        name = r.cstring()

        def rpart(r):
            p = r.i32()
            ids = [r.carray(lambda r: r.i32()) for _ in range(3)]
            r.tags()
            out[(name, p)] = tuple(ids)
        r.carray(rpart)
        r.tags()
    r.carray(rtopic)
    return top, out


def topic_doc(zc, chroot, topic):
    data, _ = zc.get("%s/brokers/topics/%s" % (chroot, topic))
    return json.loads(data)


def controller(zc, chroot):
    """The controller's id, or None while there is none (/controller may go between two reads)."""
    from kazoo.exceptions import NoNodeError
    try:
        return json.loads(zc.get(chroot + "/controller")[0])["brokerid"]
    except NoNodeError:
        return None


def log_bytes(b, topic, p):
    """Total size of the .log segments of topic-p on broker b (0 if it has none)."""
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(b.partition_dir(topic, p), "*.log")))


def wait_reassigned(zc, chroot, brokers, topic, p, target, timeout_s=60):
    """Waits until topic-p's assignment is target with no reassignment under way and its
    leader and ISR are in target (the leader added the new replicas to the ISR by itself)."""
    deadline = time.monotonic() + timeout_s
    while True:
        doc = topic_doc(zc, chroot, topic)
        st, _ = state(zc, chroot, topic, p)
        if (doc["partitions"][str(p)] == target and str(p) not in doc.get("adding_replicas", {}) and
                st and st["leader"] in target and set(st["isr"]) <= set(target)):
            return st
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s-%d to move to %s: %s, state %s" %
                                 (topic, p, target, doc, st))
        time.sleep(0.2)


__all__ = ["alter_reassignments", "list_reassignments", "topic_doc", "controller", "log_bytes", "wait_reassigned",
           "assignment"]
