#!/usr/bin/python3
"""1076: the fetch session cache on a real broker: slots, eviction, expiry.

A broker with max.incremental.fetch.session.cache.slots=2 and
min.incremental.fetch.session.eviction.ms=EVICT_MS (raw Fetch v11,
tests/lib/fetchwire.py):
  - two sessions (5 and 10 partitions) take the slots; while they are
    younger than EVICT_MS a third full fetch, even a bigger one, is served
    without a session (SessionId 0) and the two keep working;
  - once they are older (and kept in use, so not stale), a bigger session
    (20) evicts the smallest (5): FETCH_SESSION_ID_NOT_FOUND for it; a
    smaller one (1) gets no slot;
  - a session left unused for longer than EVICT_MS expires: its id is
    not found any more, while a session in use stays;
  - slots=0: every full fetch is answered without a session.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import fetchwire as fw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

EVICT_MS = 3000
N = 20


class Sess:
    def __init__(self, port, n):
        self.fx = fw.Fetcher(port)
        self.parts = {("e", p): 0 for p in range(n)}
        r = self.fx.fetch(self.parts, session_id=0, epoch=0)
        eq((r.error, len(r.parts)), (0, n), "full fetch of %d" % n)
        self.id = r.session_id
        self.epoch = 1

    def use(self):
        """One incremental fetch; returns its error."""
        r = self.fx.fetch({}, session_id=self.id, epoch=self.epoch)
        if r.error == 0:
            eq(r.session_id, self.id, "session id answered")
            self.epoch += 1
        return r.error


def keep_using(sessions, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for s in sessions:
            eq(s.use(), 0, "session %d in use" % s.id)
        time.sleep(0.3)


def test():
    props = {"max.incremental.fetch.session.cache.slots": 2,
             "min.incremental.fetch.session.eviction.ms": EVICT_MS}
    with Broker(props=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("e", N, 1)]).values():
            f.result()
        t0 = time.monotonic()
        small, mid = Sess(b.port, 5), Sess(b.port, 10)
        check(small.id > 0 and mid.id > 0 and small.id != mid.id, "two sessions")
        r = fw.Fetcher(b.port).fetch({("e", p): 0 for p in range(N)}, session_id=0, epoch=0)
        eq((r.error, r.session_id, len(r.parts)), (0, 0, N), "cache full of young sessions: no session")
        check(time.monotonic() - t0 < EVICT_MS / 1000.0, "that was while they were young")
        keep_using([small, mid], EVICT_MS / 1000.0 + 0.5)
        big = Sess(b.port, 20)
        check(big.id > 0, "a bigger session evicts an old one")
        eq(small.use(), fw.FETCH_SESSION_ID_NOT_FOUND, "the smallest was evicted")
        eq(mid.use(), 0, "the other stays")
        r = fw.Fetcher(b.port).fetch({("e", 0): 0}, session_id=0, epoch=0)
        eq(r.session_id, 0, "a smaller session gets no slot")
        # expiry: mid left alone, big kept in use
        keep_using([big], EVICT_MS / 1000.0 + 2.0)
        eq(mid.use(), fw.FETCH_SESSION_ID_NOT_FOUND, "idle session expired")
        eq(big.use(), 0, "session in use kept")
        eq(b.stop(), 0, "exit status")
    with Broker(props={"max.incremental.fetch.session.cache.slots": 0}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("e", 2, 1)]).values():
            f.result()
        r = fw.Fetcher(b.port).fetch({("e", 0): 0, ("e", 1): 0}, session_id=0, epoch=0)
        eq((r.error, r.session_id, len(r.parts)), (0, 0, 2), "slots=0: no session")
        eq(b.stop(), 0, "exit status")
    log("fetch session cache slots, eviction and expiry hold")


if __name__ == "__main__":
    main(test)
