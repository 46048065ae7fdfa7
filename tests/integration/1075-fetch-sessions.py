#!/usr/bin/python3
"""1075: incremental fetch sessions (KIP-227) on the raw wire, rule by rule.

No client installed here sends fetch sessions (librdkafka 2.0.2 and kafkajs
send SessionId 0 / epoch -1, kafka-python Fetch v4, sarama v4, kafka-go
v2; see 1076), so Fetch v11 is written by hand (tests/lib/fetchwire.py):
  - epoch -1 with id 0 is sessionless: SessionId 0, every partition;
  - epoch 0 with id 0 makes a session (new id), answered in full;
  - an incremental request (epoch 1, 2, ...) is answered with only the
    partitions whose records, high watermark, log start offset or error
    changed; partitions it names are added or get a new fetch offset;
    ForgottenTopicsData drops partitions; a new partition is always sent;
  - the partitions that returned records go to the end of the session's
    order (a small MaxBytes serves the others next time);
  - a wrong epoch gets INVALID_FETCH_SESSION_EPOCH and leaves the session
    usable; an unknown id (or id 0 with epoch > 0) FETCH_SESSION_ID_NOT_FOUND;
  - epoch -1 with the id closes it; epoch 0 with the id replaces it;
  - a session outlives its connection;
  - an error partition is sent every time, until forgotten;
  - DeleteRecords (log start offset moves) sends the partition;
  - a parked incremental fetch answers with just the partition that got
    data, and one that times out answers with no partition; one whose
    session took a later epoch meanwhile answers INVALID_FETCH_SESSION_EPOCH.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import fetchwire as fw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 20


def offsets(topic, n, off=0):
    return {(topic, p): off for p in range(n)}


def sessionless_and_full(b, fx):
    fw.produce(b.port, "s", 3, [b"three"])
    r = fx.fetch(offsets("s", N))
    eq((r.error, r.session_id, len(r.parts)), (0, 0, N), "sessionless fetch (id 0, epoch -1)")
    eq(r.parts[("s", 3)].values, [b"three"], "sessionless records")
    r = fx.fetch(offsets("s", N), session_id=0, epoch=0)
    eq((r.error, len(r.parts)), (0, N), "full fetch that makes a session")
    check(r.session_id > 0, "new session id %d" % r.session_id)
    eq(r.parts[("s", 3)].values, [b"three"], "full fetch records")
    return r.session_id


def incremental_rules(b, fx, sid):
    # the fetcher moves partition 3's offset on: nothing else changed, nothing is sent
    r = fx.fetch({("s", 3): 1}, session_id=sid, epoch=1)
    eq((r.error, r.session_id, r.order), (0, sid, []), "incremental: nothing new")
    fw.produce(b.port, "s", 7, [b"seven"])
    r = fx.fetch({}, session_id=sid, epoch=2)
    eq(r.order, [("s", 7)], "incremental: only the partition with a new record")
    eq((r.parts[("s", 7)].values, r.parts[("s", 7)].hw), ([b"seven"], 1), "its record and high watermark")
    # wrong epochs: error, no partitions, session kept
    for bad in (2, 4, 100):
        r = fx.fetch({}, session_id=sid, epoch=bad)
        eq((r.error, r.session_id, r.order), (fw.INVALID_FETCH_SESSION_EPOCH, 0, []), "epoch %d" % bad)
    r = fx.fetch({("s", 7): 1}, session_id=sid, epoch=3)
    eq((r.error, r.order), (0, []), "right epoch after wrong ones")
    for bad_id, ep in ((sid + 1, 4), (0, 4), (123456, 1)):
        r = fx.fetch({}, session_id=bad_id, epoch=ep)
        eq((r.error, r.session_id, r.order), (fw.FETCH_SESSION_ID_NOT_FOUND, 0, []),
           "unknown session %d epoch %d" % (bad_id, ep))
    # a session is not its connection
    fx.reconnect()
    fw.produce(b.port, "s", 11, [b"eleven"])
    r = fx.fetch({}, session_id=sid, epoch=4)
    eq((r.error, r.order), (0, [("s", 11)]), "same session on a new connection")
    r = fx.fetch({("s", 11): 1}, session_id=sid, epoch=5)
    eq(r.order, [], "nothing new")
    return 6


def add_forget_errors(b, fx, sid, ep):
    # add a partition of another topic: sent at once, it is new to the fetcher
    r = fx.fetch({("t", 0): 0}, session_id=sid, epoch=ep)
    eq(r.order, [("t", 0)], "added partition answered")
    eq(r.parts[("t", 0)].values, [b"t0"], "added partition's record")
    r = fx.fetch({("t", 0): 1}, session_id=sid, epoch=ep + 1)
    eq(r.order, [], "added partition with its offset moved on")
    # forget s-7 (and s-8 both named and forgotten: forgetting wins), then both get data
    r = fx.fetch({("s", 8): 0}, session_id=sid, epoch=ep + 2, forgotten=[("s", 7), ("s", 8)])
    eq(r.order, [], "forget answers nothing")
    fw.produce(b.port, "s", 7, [b"seven again"])
    fw.produce(b.port, "s", 8, [b"eight"])
    fw.produce(b.port, "s", 9, [b"nine"])
    r = fx.fetch({}, session_id=sid, epoch=ep + 3)
    eq(r.order, [("s", 9)], "forgotten partitions not served")
    # an error partition is answered every time until forgotten
    r = fx.fetch({("s", 9): 1, ("nosuch", 0): 0}, session_id=sid, epoch=ep + 4)
    eq(r.order, [("nosuch", 0)], "unknown topic partition answered")
    eq(r.parts[("nosuch", 0)].error, 3, "UNKNOWN_TOPIC_OR_PARTITION")
    r = fx.fetch({}, session_id=sid, epoch=ep + 5)
    eq(r.order, [("nosuch", 0)], "error partition answered again")
    r = fx.fetch({}, session_id=sid, epoch=ep + 6, forgotten=[("nosuch", 0)])
    eq(r.order, [], "error partition forgotten")
    # names that differ only after a NUL byte stay apart
    r = fx.fetch({("x\0a", 0): 0, ("x\0b", 1): 0}, session_id=sid, epoch=ep + 7)
    eq(r.order, [("x\0a", 0), ("x\0b", 1)], "two unknown topics, NUL in their names")
    r = fx.fetch({}, session_id=sid, epoch=ep + 8, forgotten=[("x\0a", 0), ("x\0b", 1)])
    eq(r.order, [], "both forgotten")
    ep += 2
    # the log start offset moves: the partition is sent without records
    fw.produce(b.port, "s", 1, [b"a", b"b"])
    r = fx.fetch({("s", 1): 2}, session_id=sid, epoch=ep + 7)
    eq(r.order, [("s", 1)], "high watermark moved (records before the fetch offset)")
    eq((r.parts[("s", 1)].hw, r.parts[("s", 1)].records or b""), (2, b""), "no records, new high watermark")
    eq(fw.delete_records(b.port, "s", 1, 1), (0, 1), "DeleteRecords")
    r = fx.fetch({}, session_id=sid, epoch=ep + 8)
    eq(r.order, [("s", 1)], "log start offset moved")
    eq(r.parts[("s", 1)].log_start, 1, "new log start offset")
    r = fx.fetch({}, session_id=sid, epoch=ep + 9)
    eq(r.order, [], "nothing new after the log start was told")
    return ep + 10


def rotation(b, fx, sid, ep):
    """MaxBytes 1 serves one batch; the partition that had records goes to the end."""
    r = fx.fetch({}, session_id=sid, epoch=ep)
    eq(r.order, [], "quiet before rotation")
    fw.produce(b.port, "s", 12, [b"twelve"])
    fw.produce(b.port, "s", 13, [b"thirteen"])
    r = fx.fetch({}, session_id=sid, epoch=ep + 1, max_bytes=1)
    eq(r.order, [("s", 12), ("s", 13)], "both answered (13: high watermark only)")
    eq((r.parts[("s", 12)].values, r.parts[("s", 13)].values), ([b"twelve"], []), "first batch only")
    r = fx.fetch({("s", 12): 1}, session_id=sid, epoch=ep + 2, max_bytes=1)
    eq(r.order, [("s", 13)], "13 now served first")
    eq(r.parts[("s", 13)].values, [b"thirteen"], "13's record")
    r = fx.fetch({("s", 13): 1}, session_id=sid, epoch=ep + 3)
    eq(r.order, [], "quiet after rotation")
    return ep + 4


def parked(b, fx, sid, ep):
    t0 = time.monotonic()
    r = fx.fetch({}, session_id=sid, epoch=ep, max_wait_ms=400, min_bytes=1)
    waited = time.monotonic() - t0
    eq((r.error, r.session_id, r.order), (0, sid, []), "parked incremental fetch timing out")
    check(waited >= 0.3, "it waited (%.2fs)" % waited)
    fx.send({}, session_id=sid, epoch=ep + 1, max_wait_ms=20000, min_bytes=1)
    readable, _, _ = select.select([fx.sock], [], [], 0.5)
    eq(readable, [], "incremental fetch parked")
    fw.produce(b.port, "s", 15, [b"fifteen"])
    readable, _, _ = select.select([fx.sock], [], [], 10)
    eq(readable, [fx.sock], "parked fetch answered on append")
    r = fx.recv()
    eq((r.error, r.session_id, r.order), (0, sid, [("s", 15)]), "only the partition that got data")
    eq(r.parts[("s", 15)].values, [b"fifteen"], "its record")
    r = fx.fetch({("s", 15): 1}, session_id=sid, epoch=ep + 2)
    eq(r.order, [], "quiet")
    # a parked fetch whose session moved on meanwhile (the next epoch taken on another connection)
    fx.send({}, session_id=sid, epoch=ep + 3, max_wait_ms=20000, min_bytes=1)
    time.sleep(0.3)
    other = fw.Fetcher(b.port)
    r = other.fetch({}, session_id=sid, epoch=ep + 4)
    eq((r.error, r.order), (0, []), "next epoch on another connection")
    other.close()
    fw.produce(b.port, "s", 16, [b"sixteen"])
    readable, _, _ = select.select([fx.sock], [], [], 10)
    eq(readable, [fx.sock], "parked fetch answered on append")
    r = fx.recv()
    eq((r.error, r.order), (fw.INVALID_FETCH_SESSION_EPOCH, []), "parked fetch of an older epoch")
    r = fx.fetch({}, session_id=sid, epoch=ep + 5)
    eq(r.order, [("s", 16)], "the session goes on")
    r = fx.fetch({("s", 16): 1}, session_id=sid, epoch=ep + 6)
    eq(r.order, [], "quiet")
    return ep + 7


def close_and_replace(b, fx, sid, ep):
    r = fx.fetch({("s", 0): 0}, session_id=sid, epoch=0)
    check(r.session_id > 0 and r.session_id != sid, "epoch 0 with an id: new session %d" % r.session_id)
    eq(r.order, [("s", 0)], "the new session is the request's partitions, in full")
    r2 = fx.fetch({}, session_id=sid, epoch=ep)
    eq(r2.error, fw.FETCH_SESSION_ID_NOT_FOUND, "replaced session gone")
    sid = r.session_id
    r = fx.fetch({("s", 0): 0, ("s", 1): 1}, session_id=sid, epoch=-1)
    eq((r.error, r.session_id, len(r.order)), (0, 0, 2), "epoch -1 closes: sessionless answer")
    r = fx.fetch({}, session_id=sid, epoch=1)
    eq(r.error, fw.FETCH_SESSION_ID_NOT_FOUND, "closed session gone")
    # forgetting every partition closes the session too
    r = fx.fetch({("s", 0): 0}, session_id=0, epoch=0)
    sid = r.session_id
    r = fx.fetch({}, session_id=sid, epoch=1, forgotten=[("s", 0)])
    eq((r.error, r.session_id, r.order), (0, 0, []), "empty session closed")
    r = fx.fetch({}, session_id=sid, epoch=2)
    eq(r.error, fw.FETCH_SESSION_ID_NOT_FOUND, "emptied session gone")


def test():
    with Broker(props={"num.partitions": 1, "auto.create.topics.enable": "false"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("s", N, 1), NewTopic("t", 2, 1)]).values():
            f.result()
        fw.produce(b.port, "t", 0, [b"t0"])
        fx = fw.Fetcher(b.port)
        sid = sessionless_and_full(b, fx)
        ep = incremental_rules(b, fx, sid)
        ep = add_forget_errors(b, fx, sid, ep)
        ep = rotation(b, fx, sid, ep)
        ep = parked(b, fx, sid, ep)
        close_and_replace(b, fx, sid, ep)
        fx.close()
        # the broker serves others after all that
        r = fw.Fetcher(b.port).fetch(offsets("s", 2))
        eq(r.error, 0, "a fresh sessionless fetch")
        eq(b.stop(), 0, "exit status")
        log("fetch session rules hold")


if __name__ == "__main__":
    main(test)
