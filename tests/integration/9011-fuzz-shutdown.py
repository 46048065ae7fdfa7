#!/usr/bin/python3
"""9011: random requests from 4 connections, then SIGTERM must exit 0.

Four threads each send FUZZ_REQUESTS/4 requests (default 20,000 in all) to
the real broker: a third well-formed requests of the group, transaction,
admin, produce and fetch APIs whose names (group ids, member ids,
transactional ids, topics) are random byte strings that often hold NUL
bytes, a third the same requests mutated (bytes flipped, cut short, junk
appended, version changed), a third random API key, version and body.
A connection the broker closes (malformed frame) is opened again.

Before the fuzzing, names with NUL bytes are checked to be names of their
own, before and after a restart: groups "n\0a" and "n" keep their own
committed offsets, transactional ids "t\0x" and "t" their own producer
ids, and a static member "i\0x" that joins twice is one member (the old
broker stored such names cut at the NUL: persisted under the other name,
and the static member never found again).

Then: another connection still gets ApiVersions and Metadata answers,
SIGTERM stops the broker with exit status 0, and it starts again on the
same data (the groups and transactional ids it persisted load back) and
stops with 0 again.  This used to end with a crash in group_kill() on
SIGTERM: a group id with a NUL byte was hashed over all its bytes on
insert but over its C-string prefix on removal.

FUZZ_SEED=n repeats a run; FUZZ_REQUESTS=n changes its length.
"""
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "fuzz"
THREADS = 4
TOTAL = int(os.environ.get("FUZZ_REQUESTS", "20000"))
SEED = int(os.environ.get("FUZZ_SEED", str(int(time.time()))))
NAME_BYTES = b"ab\x00\x00\xff/.-_ \n%s\xc3\xa9"


class Fuzzer:
    def __init__(self, port, seed):
        self.port, self.rnd, self.s, self.corr = port, random.Random(seed), None, 0
        self.sent = self.closed = self.answered = 0

    def name(self):
        r = self.rnd
        n = r.choice((0, 1, 2, 3, 5, 8, 20, 300))
        if r.random() < 0.2:
            return r.choice(["g", "txn", TOPIC, "a\x00b", "a"])
        return bytes(r.choice(NAME_BYTES) for _ in range(n)).decode("latin-1")

    def s_(self, v=None):
        """A nullable string field holding a random name (latin-1 keeps NUL and high bytes)."""
        v = self.name() if v is None else v
        return kw.i16(len(v.encode("latin-1"))) + v.encode("latin-1")

    def templates(self):
        r, s = self.rnd, self.s_
        n = s()
        pid, epoch, gen = r.choice((-1, 0, 1, 1000)), r.choice((-1, 0, 1)), r.choice((-1, 0, 1, 2))
        batch = kw.record_batch([(b"k", bytes(r.randrange(256) for _ in range(r.randrange(40))))])
        tparts = kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], kw.i32))
        return [
            (18, 0, b""),
            (3, 1, kw.array([self.name() if r.random() < 0.3 else TOPIC], lambda t: s(t))),
            (11, 5, n + kw.i32(10000) + kw.i32(10000) + s() + kw.i16(-1) + kw.string("consumer") +
             kw.array(["range"], lambda p: kw.string(p) + kw.nbytes(b"\x00\x01"))),
            (14, 3, n + kw.i32(gen) + s() + kw.i16(-1) + kw.array([])),
            (12, 3, n + kw.i32(gen) + s() + kw.i16(-1)),
            (13, 3, n + kw.array([s()], lambda m: m + kw.i16(-1))),
            (8, 2, n + kw.i32(gen) + s() + kw.i64(-1) +
             kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) + kw.i64(r.randrange(99)) +
                                                                  s()))),
            (9, 1, n + tparts),
            (10, 1, n + kw.i8(r.choice((0, 1, 2)))),
            (15, 0, kw.array([n])),
            (16, 0, b""),
            (42, 0, kw.array([n])),
            (22, 1, (n if r.random() < 0.7 else kw.i16(-1)) + kw.i32(60000) + kw.i64(pid) + kw.i16(epoch)),
            (24, 1, n + kw.i64(pid) + kw.i16(epoch) + tparts),
            (25, 1, n + kw.i64(pid) + kw.i16(epoch) + s()),
            (28, 1, n + s() + kw.i64(pid) + kw.i16(epoch) +
             kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) + kw.i64(5) + s()))),
            (26, 1, n + kw.i64(pid) + kw.i16(epoch) + kw.i8(r.randrange(2))),
            (0, 3, kw.i16(-1) + kw.i16(r.choice((0, 1, -1))) + kw.i32(1000) +
             kw.array([TOPIC if r.random() < 0.8 else self.name()],
                      lambda t: s(t) + kw.array([0], lambda p: kw.i32(p) + kw.nbytes(batch)))),
            (1, 4, kw.i32(-1) + kw.i32(r.choice((0, 10))) + kw.i32(1) + kw.i32(r.choice((0, 1 << 20, 0x7fffffff))) +
             kw.i8(r.randrange(2)) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array(
                 [0], lambda p: kw.i32(p) + kw.i64(r.randrange(5)) + kw.i32(r.choice((0, 1 << 20, 0x7fffffff)))))),
            (2, 1, kw.i32(-1) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) +
                                                                                    kw.i64(-1)))),
            (19, 2, kw.array([n], lambda t: t + kw.i32(1) + kw.i16(1) + kw.array([]) + kw.array([])) + kw.i32(1000) +
             kw.i8(1)),
            (20, 1, kw.array([n]) + kw.i32(1000)),
            (37, 0, kw.array([n], lambda t: t + kw.i32(r.randrange(4)) + kw.i32(-1)) + kw.i32(1000) + kw.i8(1)),
        ]

    def request(self):
        r = self.rnd
        roll = r.random()
        key, ver, body = r.choice(self.templates())
        if roll < 0.34:
            pass
        elif roll < 0.67:
            body = bytearray(body)
            for _ in range(r.randrange(1, 4)):
                what = r.randrange(4)
                if what == 0 and body:
                    body[r.randrange(len(body))] = r.randrange(256)
                elif what == 1:
                    del body[r.randrange(len(body) + 1):]
                elif what == 2:
                    body += bytes(r.randrange(256) for _ in range(r.randrange(1, 30)))
                else:
                    ver = r.randrange(0, 14)
            body = bytes(body)
        else:
            key, ver = r.randrange(0, 72), r.randrange(-1, 16)
            body = bytes(r.randrange(256) for _ in range(r.randrange(0, 120)))
        self.corr += 1
        return kw.request(key, ver, self.corr, body, client_id=self.name() if r.random() < 0.1 else "fuzz")

    def connect(self):
        if self.s is None:
            self.s = kw.connect(self.port)
            self.s.settimeout(0.3)

    def one(self):
        self.connect()
        try:
            self.s.sendall(self.request())
            self.sent += 1
            kw.recv_response(self.s)
            self.answered += 1
        except (socket.timeout, ConnectionError, OSError, AssertionError):
            # closed (malformed frame), no answer (acks=0, parked): start afresh
            self.closed += 1
            self.s.close()
            self.s = None

    def run(self, n):
        for _ in range(n):
            self.one()
        if self.s:
            self.s.close()


def nstr(v):
    return kw.i16(len(v)) + v


def commit(port, group, offset):
    r = kw.call(port, 8, 2, nstr(group) + kw.i32(-1) + kw.string("") + kw.i64(-1) + kw.array(
        [TOPIC], lambda t: kw.string(t) + kw.array([0], lambda p: kw.i32(p) + kw.i64(offset) + kw.string(""))))
    eq(r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))), [(TOPIC, [(0, 0)])], "commit")


def committed(port, group):
    r = kw.call(port, 9, 1, nstr(group) + kw.array([TOPIC], lambda t: kw.string(t) + kw.array([0], kw.i32)))
    return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))[0][1][0][1]


def init_pid(port, txn_id):
    r = kw.call(port, 22, 1, nstr(txn_id) + kw.i32(60000))
    r.i32()
    eq(r.i16(), 0, "InitProducerId error")
    return r.i64()


def static_join(port, group, instance):
    body = (nstr(group) + kw.i32(10000) + kw.i32(10000) + kw.string("") + nstr(instance) + kw.string("consumer") +
            kw.array(["range"], lambda p: kw.string(p) + kw.nbytes(b"")))
    r = kw.call(port, 11, 5, body)
    r.i32()
    eq(r.i16(), 0, "JoinGroup error")


def members(port, group):
    r = kw.call(port, 15, 0, kw.array([group], nstr))
    groups = r.array(lambda r: (r.i16(), r.string(), r.string(), r.string(), r.string(),
                                r.array(lambda r: (r.string(), r.string(), r.string(), r.take(r.i32()),
                                                   r.take(r.i32())))))
    return len(groups[0][5])


def names(b):
    """Names differing only after a NUL byte are different names, also after a restart."""
    kw.wait_coordinator(b.port)  # the internal topics are made off the event loop
    kw.wait_coordinator(b.port, "t", 1)
    commit(b.port, b"n\x00a", 5)
    commit(b.port, b"n", 6)
    pids = {t: init_pid(b.port, t) for t in (b"t\x00x", b"t")}
    check(pids[b"t\x00x"] != pids[b"t"], "two transactional ids, two producer ids: %r" % pids)
    static_join(b.port, b"s\x00g", b"i\x00x")
    static_join(b.port, b"s\x00g", b"i\x00x")
    eq(members(b.port, b"s\x00g"), 1, "a static member joining twice")
    eq(b.stop(), 0, "exit status")
    b.start()
    eq((committed(b.port, b"n\x00a"), committed(b.port, b"n")), (5, 6), "offsets after a restart")
    eq({t: init_pid(b.port, t) for t in pids}, pids, "producer ids after a restart")


def control(port):
    for _ in range(100):  # auto-created off the event loop: LEADER_NOT_AVAILABLE (5) until it is made
        if kw.parse_metadata_v1(kw.call(port, 3, 1, kw.metadata_v1_body([TOPIC])).d)["topics"][TOPIC][0] != 5:
            break
        time.sleep(0.05)
    s = kw.connect(port)
    try:
        s.sendall(kw.request(18, 0, 1, kw.api_versions_v0_body()))
        eq(kw.recv_response(s)[0], 1, "ApiVersions correlation id")
        s.sendall(kw.request(3, 1, 2, kw.metadata_v1_body([TOPIC])))
        md = kw.parse_metadata_v1(kw.recv_response(s)[1])
        eq(md["topics"][TOPIC][0], 0, "Metadata error for %s" % TOPIC)
    finally:
        s.close()


def test():
    log("seed %d, %d requests from %d connections" % (SEED, TOTAL, THREADS))
    props = {"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": "true"}
    with Broker(props=props) as b:
        control(b.port)
        names(b)
        fz = [Fuzzer(b.port, SEED * 100 + i) for i in range(THREADS)]
        threads = [threading.Thread(target=f.run, args=(TOTAL // THREADS,)) for f in fz]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        log("sent %d, answered %d, reconnected %d times in %.1fs" %
            (sum(f.sent for f in fz), sum(f.answered for f in fz), sum(f.closed for f in fz),
             time.monotonic() - t0))
        check(b.alive(), "broker alive after the fuzzing")
        check(sum(f.answered for f in fz) > TOTAL // 10, "the broker answered a good part of the requests")
        control(b.port)
        eq(b.stop(), 0, "exit status on SIGTERM after the fuzzing")
        b.start()
        control(b.port)
        eq(b.stop(), 0, "exit status on SIGTERM after the restart")


if __name__ == "__main__":
    main(test)
