"""Group APIs on the raw wire: exact Kafka error codes for bad input, then
the coordinator still serves other groups and other connections.

JoinGroup: empty group id (INVALID_GROUP_ID 24), session timeout below
group.min.session.timeout.ms (INVALID_SESSION_TIMEOUT 26), v4+ without a
member id (MEMBER_ID_REQUIRED 79, then joins with the id it was given),
unknown member (UNKNOWN_MEMBER_ID 25), no protocols (INCONSISTENT_GROUP_PROTOCOL
23); SyncGroup / Heartbeat with a wrong generation (ILLEGAL_GENERATION 22)
or unknown member (25); OffsetCommit with oversize metadata
(OFFSET_METADATA_TOO_LARGE 12), a stale generation (22), an unknown topic
(UNKNOWN_TOPIC_OR_PARTITION 3); OffsetFetch of uncommitted partitions (-1);
DeleteGroups of a non-empty group (NON_EMPTY_GROUP 68) and an unknown one
(GROUP_ID_NOT_FOUND 69); FindCoordinator with an unknown key type
(INVALID_REQUEST 42); LeaveGroup v3 per-member errors."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, eq, log, main  # noqa: E402
from kwire import Reader, array, connect, i8, i16, i32, i64, nbytes, recv_response, request, string  # noqa: E402

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "itest-errs"
FIND, JOIN, HEARTBEAT, LEAVE, SYNC, COMMIT, FETCH, DELETE = 10, 11, 12, 13, 14, 8, 9, 42


class Wire:
    def __init__(self, port):
        self.s = connect(port)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        self.s.sendall(request(key, version, self.corr, body))
        corr, resp = recv_response(self.s)
        eq(corr, self.corr, "correlation id")
        return Reader(resp)


def join(w, group, member="", session=10000, version=5, protocols=(("range", b"\x00\x00"),)):
    body = (string(group) + i32(session) + i32(session) + string(member) +
            (string(None) if version >= 5 else b"") + string("consumer") +
            array(list(protocols), lambda p: string(p[0]) + nbytes(p[1])))
    r = w.call(JOIN, version, body)
    r.i32()
    err, gen, proto, leader, member_id = r.i16(), r.i32(), r.string(), r.string(), r.string()
    members = r.array(lambda r: (r.string(), r.string() if version >= 5 else None, r.take(r.i32())))
    return err, gen, proto, leader, member_id, members


def sync(w, group, gen, member, assignments=()):
    body = (string(group) + i32(gen) + string(member) + string(None) +
            array(list(assignments), lambda a: string(a[0]) + nbytes(a[1])))
    r = w.call(SYNC, 3, body)
    r.i32()
    err = r.i16()
    return err, r.take(r.i32())


def heartbeat(w, group, gen, member):
    r = w.call(HEARTBEAT, 3, string(group) + i32(gen) + string(member) + string(None))
    r.i32()
    return r.i16()


def commit(w, group, gen, member, parts):
    body = (string(group) + i32(gen) + string(member) + string(None) +
            array([TOPIC, "no-such-topic"], lambda t: string(t) + array(
                parts, lambda p: i32(p[0]) + i64(p[1]) + i32(-1) + string(p[2]))))
    r = w.call(COMMIT, 7, body)
    r.i32()
    return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))


def fetch(w, group, parts):
    r = w.call(FETCH, 5, string(group) + array([TOPIC], lambda t: string(t) + array(parts, i32)))
    r.i32()
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.i32(), r.string(), r.i16()))))
    return topics, r.i16()


def test():
    with Broker(overrides={"group.initial.rebalance.delay.ms": "0"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(15)
        w = Wire(b.port)
        r = w.call(FIND, 2, string("g") + i8(5))
        r.i32()
        eq(r.i16(), 42, "FindCoordinator unknown key type: INVALID_REQUEST")
        for _ in range(100):  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is made (retriable)
            r = w.call(FIND, 0, string("g"))
            found = (r.i16(), r.i32(), r.string(), r.i32())
            if found[0] != 15:
                break
            time.sleep(0.05)
        eq(found, (0, 0, "127.0.0.1", b.port), "FindCoordinator v0")

        eq(join(w, "")[0], 24, "JoinGroup empty group id: INVALID_GROUP_ID")
        eq(join(w, "g", session=1000)[0], 26, "JoinGroup session 1000 ms: INVALID_SESSION_TIMEOUT")
        eq(join(w, "g", member="nobody")[0], 25, "JoinGroup unknown member of an unknown group")
        eq(join(w, "g", protocols=())[0], 23, "JoinGroup without protocols: INCONSISTENT_GROUP_PROTOCOL")
        err, gen, _, _, mid, members = join(w, "g", version=4)
        eq((err, gen, members), (79, -1, []), "JoinGroup v4 without member id: MEMBER_ID_REQUIRED")
        err, gen, proto, leader, mid2, members = join(w, "g", member=mid, version=4)
        eq((err, gen, proto, leader, mid2, [m[0] for m in members]), (0, 1, "range", mid, mid, [mid]),
           "JoinGroup with the given member id")
        eq(sync(w, "g", 2, mid), (22, b""), "SyncGroup wrong generation: ILLEGAL_GENERATION")
        eq(sync(w, "g", 1, "nobody"), (25, b""), "SyncGroup unknown member")
        eq(sync(w, "g", 1, mid, [(mid, b"assignment-bytes")]), (0, b"assignment-bytes"), "SyncGroup leader")
        eq(heartbeat(w, "g", 0, mid), 22, "Heartbeat stale generation")
        eq(heartbeat(w, "g", 1, "nobody"), 25, "Heartbeat unknown member")
        eq(heartbeat(w, "g", 1, mid), 0, "Heartbeat")

        eq(commit(w, "g", 1, mid, [(0, 5, "x" * 5000), (1, 7, "ok")]),
           [(TOPIC, [(0, 12), (1, 0)]), ("no-such-topic", [(0, 3), (1, 3)])], "OffsetCommit per-partition errors")
        eq(commit(w, "g", 0, mid, [(0, 9, "")]), [(TOPIC, [(0, 22)]), ("no-such-topic", [(0, 22)])],
           "OffsetCommit stale generation")
        eq(fetch(w, "g", [0, 1]), ([(TOPIC, [(0, -1, -1, "", 0), (1, 7, -1, "ok", 0)])], 0), "OffsetFetch")

        r = w.call(DELETE, 1, array(["g", "unknown-group"], string))
        r.i32()
        eq(r.array(lambda r: (r.string(), r.i16())), [("g", 68), ("unknown-group", 69)], "DeleteGroups errors")
        r = w.call(LEAVE, 3, string("g") + array([("nobody", None), (mid, None)],
                                                  lambda m: string(m[0]) + string(m[1])))
        r.i32()
        eq((r.i16(), r.array(lambda r: (r.string(), r.string(), r.i16()))),
           (0, [("nobody", None, 25), (mid, None, 0)]), "LeaveGroup v3 per-member errors")
        r = w.call(DELETE, 1, array(["g"], string))
        r.i32()
        eq(r.array(lambda r: (r.string(), r.i16())), [("g", 0)], "DeleteGroups of the now empty group")
        eq(fetch(w, "g", [1]), ([(TOPIC, [(1, -1, -1, "", 0)])], 0), "offsets gone with the group")
        log("error codes verified")

        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "other"})
        c.commit(offsets=[TopicPartition(TOPIC, 1, 3)], asynchronous=False)
        eq([tp.offset for tp in c.committed([TopicPartition(TOPIC, 1)], timeout=10)], [3], "other group commit")
        c.close()


main(test)
