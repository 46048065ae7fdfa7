"""Raw Kafka wire client for the transaction-operator APIs (tests 4020-4029):
DescribeProducers v0, DescribeTransactions v0, ListTransactions v0-1,
WriteTxnMarkers v0-1, and what it takes to open transactions by hand:
AddPartitionsToTxn v0, Produce v3 with a transactional id, AddOffsetsToTxn
v0, TxnOffsetCommit v0, EndTxn v0, OffsetFetch v7 (RequireStable).  Built
on idemwire.Client (framing, InitProducerId).  unanswered() checks that a
call gets no answer for a while (its replicas stopped) and gives it later.

Flexible versions use compact strings and arrays (unsigned varint length+1)
and an empty tagged-field section after every struct; see
/work/shared/PROTOCOL-NOTES.md section 5 and docs/schema-format.md.
"""

import threading
import time

import kwire as kw
from idemwire import Client as _IdemClient, compact_nstring, uvarint
from idemwire import read_compact_string as r_cstring, read_uvarint as r_uvarint


def compact_array(items, enc):
    return uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


TAGS = uvarint(0)


def r_carray(r, fn):
    n = r_uvarint(r) - 1
    return None if n < 0 else [fn(r) for _ in range(n)]


def r_tags(r):
    for _ in range(r_uvarint(r)):
        r_uvarint(r)
        r.take(r_uvarint(r))


class Client(_IdemClient):
    def describe_producers(self, topics):
        """topics: {name: [partitions]} -> {(topic, part): (err, msg, [producer dicts])}"""
        body = compact_array(list(topics.items()), lambda t: compact_nstring(t[0]) + compact_array(
            t[1], kw.i32) + TAGS) + TAGS
        r = self.call(61, 0, body, flexible=True)
        r.i32()

        def producer(r):
            p = dict(producer_id=r.i64(), epoch=r.i32(), last_sequence=r.i32(), last_timestamp=r.i64(),
                     coordinator_epoch=r.i32(), txn_start_offset=r.i64())
            r_tags(r)
            return p

        def part(r):
            idx, err, msg = r.i32(), r.i16(), r_cstring(r)
            prods = r_carray(r, producer)
            r_tags(r)
            return idx, err, msg, prods

        def topic(r):
            name = r_cstring(r)
            parts = r_carray(r, part)
            r_tags(r)
            return name, parts

        out = {}
        for name, parts in r_carray(r, topic):
            for idx, err, msg, prods in parts:
                out[(name, idx)] = (err, msg, prods)
        r_tags(r)
        return out

    def describe_transactions(self, ids):
        """-> {id: dict(error, state, timeout_ms, start_ms, producer_id, epoch, topics={t: [p]})}"""
        body = compact_array(ids, compact_nstring) + TAGS
        r = self.call(65, 0, body, flexible=True)
        r.i32()

        def topic(r):
            name = r_cstring(r)
            parts = r_carray(r, kw.Reader.i32)
            r_tags(r)
            return name, parts

        def state(r):
            d = dict(error=r.i16(), id=r_cstring(r), state=r_cstring(r), timeout_ms=r.i32(), start_ms=r.i64(),
                     producer_id=r.i64(), epoch=r.i16())
            d["topics"] = dict(r_carray(r, topic))
            r_tags(r)
            return d

        out = {d["id"]: d for d in r_carray(r, state)}
        r_tags(r)
        return out

    def list_transactions(self, states=(), pids=(), duration=None, version=0):
        """-> (error, unknown_state_filters, [(id, producer_id, state)])"""
        body = compact_array(list(states), compact_nstring) + compact_array(list(pids), kw.i64)
        if version >= 1:
            body += kw.i64(-1 if duration is None else duration)
        r = self.call(66, version, body + TAGS, flexible=True)
        r.i32()
        err = r.i16()
        unknown = r_carray(r, r_cstring)

        def st(r):
            t = (r_cstring(r), r.i64(), r_cstring(r))
            r_tags(r)
            return t

        txns = r_carray(r, st)
        r_tags(r)
        return err, unknown, txns

    def write_txn_markers(self, markers, version=1):
        """markers: [(pid, epoch, commit, {topic: [parts]}, coordinator_epoch)]
        -> {(pid, topic, part): error}"""
        flex = version >= 1
        s = compact_nstring if flex else kw.string
        arr = (lambda items, enc: compact_array(items, enc)) if flex else kw.array
        tags = TAGS if flex else b""

        def marker(m):
            pid, epoch, commit, topics, cepoch = m
            return (kw.i64(pid) + kw.i16(epoch) + kw.i8(1 if commit else 0) +
                    arr(list(topics.items()), lambda t: s(t[0]) + arr(t[1], kw.i32) + tags) + kw.i32(cepoch) + tags)

        r = self.call(27, version, arr(markers, marker) + tags, flexible=flex)
        rs = r_cstring if flex else kw.Reader.string

        def rarr(r, fn):
            return r_carray(r, fn) if flex else r.array(fn)

        def ptn(r):
            t = (r.i32(), r.i16())
            if flex:
                r_tags(r)
            return t

        def topic(r):
            t = (rs(r), rarr(r, ptn))
            if flex:
                r_tags(r)
            return t

        def res(r):
            t = (r.i64(), rarr(r, topic))
            if flex:
                r_tags(r)
            return t

        out = {}
        for pid, topics in rarr(r, res):
            for name, parts in topics:
                for idx, err in parts:
                    out[(pid, name, idx)] = err
        if flex:
            r_tags(r)
        return out

    def produce_txn(self, txn_id, topic, partition, records, acks=-1):
        """Produce v3 carrying TransactionalId, as transactional producers send it
        (the body of kwire.produce_v3_body after its null id) -> (error_code, base_offset)."""
        body = kw.string(txn_id) + kw.produce_v3_body(topic, partition, records, acks=acks)[len(kw.string(None)):]
        r = self.call(0, 3, body)
        return kw.parse_produce_v3(r.d)[(topic, partition)]

    def add_partitions(self, txn_id, pid, epoch, topic, partitions):
        """AddPartitionsToTxn v0 -> {partition: error}"""
        body = kw.string(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.array(
            [topic], lambda t: kw.string(t) + kw.array(partitions, kw.i32))
        r = self.call(24, 0, body)
        r.i32()
        out = {}
        for _name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))):
            out.update(dict(parts))
        return out

    def verify_partitions(self, txn_id, pid, epoch, topic, partitions):
        """AddPartitionsToTxn v4 VerifyOnly (a partition leader asking the coordinator, KIP-890) of
        one transaction -> (top-level error, [(partition, error)]); no results after a top-level error."""
        u = uvarint
        body = (u(2) + compact_nstring(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.i8(1) +
                u(2) + compact_nstring(topic) + u(len(partitions) + 1) +
                b"".join(kw.i32(p) for p in partitions) + u(0) + u(0) + u(0))
        r = self.call(24, 4, body, flexible=True)
        r.i32()
        top = r.i16()
        out = []
        for _ in range(r_uvarint(r) - 1):
            r_cstring(r)  # transactional id
            for _ in range(r_uvarint(r) - 1):
                r_cstring(r)  # topic
                for _ in range(r_uvarint(r) - 1):
                    out.append((r.i32(), r.i16()))
                    r_tags(r)
                r_tags(r)
            r_tags(r)
        return top, out

    def add_offsets(self, txn_id, pid, epoch, group):
        """AddOffsetsToTxn v0 -> error"""
        r = self.call(25, 0, kw.string(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.string(group))
        r.i32()
        return r.i16()

    def txn_offset_commit(self, txn_id, group, pid, epoch, topic, partition, offset):
        """TxnOffsetCommit v0 of one partition -> error"""
        body = (kw.string(txn_id) + kw.string(group) + kw.i64(pid) + kw.i16(epoch) + kw.array(
            [topic], lambda t: kw.string(t) + kw.array([partition], lambda p: kw.i32(p) + kw.i64(offset) +
                                                       kw.string(None))))
        r = self.call(28, 0, body)
        r.i32()
        return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))[0][1][0][1]

    def end_txn(self, txn_id, pid, epoch, commit):
        """EndTxn v0 -> error"""
        r = self.call(26, 0, kw.string(txn_id) + kw.i64(pid) + kw.i16(epoch) + kw.i8(1 if commit else 0))
        r.i32()
        return r.i16()

    def offset_fetch_stable(self, group, topic, partition):
        """OffsetFetch v7 with RequireStable, one partition -> (error, committed offset)"""
        body = (compact_nstring(group) + compact_array([topic], lambda t: compact_nstring(t) + compact_array(
            [partition], kw.i32) + TAGS) + kw.i8(1) + TAGS)
        r = self.call(9, 7, body, flexible=True)
        r.i32()

        def ptn(r):
            t = (r.i32(), r.i64(), r.i32(), r_cstring(r), r.i16())
            r_tags(r)
            return t

        def topic_(r):
            t = (r_cstring(r), r_carray(r, ptn))
            r_tags(r)
            return t

        _, parts = r_carray(r, topic_)[0]
        _, offset, _, _, err = parts[0]
        return err, offset


def coordinator(port, key, key_type, timeout_s=30):
    """FindCoordinator v1 (key_type 0 group, 1 transactional id) until it answers -> the node id."""
    deadline = time.monotonic() + timeout_s
    while True:
        err, node, _port = kw.find_coordinator(port, key, key_type)
        if err == 0:
            return node
        if time.monotonic() > deadline:
            raise AssertionError("no coordinator for '%s' within %.0f s (error %d)" % (key, timeout_s, err))
        time.sleep(0.1)


def unanswered(call, wait_s):
    """Runs call() (one Client call, on a connection used for nothing else) in a thread and checks that it is
    still unanswered after wait_s; returns a function that waits (at most its argument, in s) for its
    result and returns it."""
    out = []
    t = threading.Thread(target=lambda: out.append(call()), daemon=True)
    t.start()
    t.join(wait_s)
    if not t.is_alive():
        raise AssertionError("answered within %.0f s (%r) while the in-sync replicas lacked its write"
                             % (wait_s, out[0] if out else "an error"))

    def result(timeout_s):
        t.join(timeout_s)
        if not out:
            raise AssertionError("no answer within %.0f s after the replicas were resumed" % timeout_s)
        return out[0]
    return result
