#!/usr/bin/python3
"""1054: kill -9 (and other interruptions) at random moments of compaction passes.

First, on brokers of their own (these three checks and the two after the
cycles all run, whichever fails):
  - SIGTERM during a pass over a 300 KB segment cleaned at 20 KB/s: exit 0
    within the harness's 10 s, and the next start serves every record as
    written;
  - kill -9 after the second of several groups of one pass is swapped in
    (written with the cleaner off, cleaned after a restart at 60 KB/s):
    the key whose old value the first group dropped and whose tombstone
    the second group dropped does not come back after the restart;
  - a flipped byte in a sealed segment fails the pass over it without a
    crash, its files unchanged, while another topic is cleaned.

Then a compacted topic (segment.bytes=16384, min.cleanable.dirty.ratio=0.01,
delete.retention.ms=1000) with 260 keys x 12 rounds of updates (~360 KB in
~23 segments) and a cleaner limited to
log.cleaner.io.max.bytes.per.second=300000, so that a pass takes a second
or more and writes many groups of segments (*.cleaned, then *.swap).
11 cycles of: one more round of updates of keys 0-199 and tombstones for 5
of keys 200-259 (never written again), then kill -9 at a moment chosen by
the cycle's kind: a random time, a random time after the first *.cleaned
file of a pass appears, or right after a *.log.swap file appears (the
waits end with the pass). After each kill the *.cleaned / *.swap files
left are noted; after the restart:
  - none of those files is still there (same name, inode and mtime: files
    of a new pass do not count);
  - when a *.log.swap was left, the broker log says it completed the
    interrupted swap of that partition;
  - a consumer with check.crcs=true reads every record it is served
    exactly as written at that offset (no corrupt or shifted batch),
    offsets increasing, and the last write of every key, a tombstone
    possibly removed but then no older value of its key served either (no
    deleted key comes back).
At least three kills must have found a pass under way (else the test did
not exercise what it claims). A pass over the whole log then completes
(keys unique below the active segment, latest values exact). Last:
  - DeleteRecords on a compact,delete topic while a pass over it is under
    way: nothing below the new log start served, the latest values above
    it exact;
  - three times, DeleteTopics while a pass over the topic is under way and
    the topic created again at once: after its own pass it holds only its
    own records and no file of the deleted topic's pass.
Runtime ~50 s; the kill cycles and the pass after them are bounded at 60 s.
"""
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import compaction as cp  # noqa: E402
import idemwire as iw  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "kill9"
KEYS, ROUNDS0 = 200, 12
DOOMED = 60  # keys KEYS.. written only at first; 5 of them deleted each cycle, never written again
CYCLES = 11
BUDGET_S = 60  # for the kill cycles and the pass after them
OVERRIDES = dict(cp.BROKER_OVERRIDES, **{"log.cleaner.io.max.bytes.per.second": "300000"})


def leftovers(b, topic=TOPIC):
    """{name: (inode, mtime_ns, size)} of the *.cleaned and *.swap files of the partition."""
    d = b.partition_dir(topic, 0)
    out = {}
    for n in (os.listdir(d) if os.path.isdir(d) else []):
        if n.endswith(".cleaned") or n.endswith(".swap"):
            try:
                st = os.stat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            out[n] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return out


def wait_file(b, suffix, timeout_s, topic=TOPIC, count=1, since=None):
    """Waits (bounded) until count files of the partition end in suffix;
    True if they appeared. With since (a broker log position), gives up
    (False) once a pass over the partition is logged after it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len([n for n in leftovers(b, topic) if n.endswith(suffix)]) >= count:
            return True
        if since is not None and cp.passes(b, topic, since=since):
            return False
        time.sleep(0.002)
    return False


def kill_at(b, kind, rnd, since):
    """Waits for a moment of the given kind (since: the broker log position
    of the start); returns what it waited for. The caller kills."""
    if kind == 0:
        time.sleep(rnd.uniform(0.05, 2.0))
        return "random"
    if kind == 1:
        seen = wait_file(b, ".cleaned", 6, since=since)
        time.sleep(rnd.uniform(0, 0.4))
        return "after a .cleaned" if seen else "after a pass (no .cleaned seen)"
    seen = wait_file(b, ".log.swap", 8, since=since)
    time.sleep(rnd.uniform(0, 0.05))
    return "after a .log.swap" if seen else "after a pass (no .log.swap seen)"


def check_served(b, w, what):
    """Every record served is the one written at its offset (so each key's
    versions increase with the offsets); the last record served of every key
    is its last write, or nothing when that was a tombstone (removed past
    delete.retention.ms): a key deleted is never served an older value."""
    recs = cp.read_all(b, TOPIC)
    cp.check_increasing(recs, what)
    last = {}
    for off, key, value in recs:
        if key.startswith(b"sentinel-"):
            continue
        eq((key, value), w.at.get(off), "%s: record at offset %d" % (what, off))
        last[key] = (off, value)
    want = dict(w.latest)
    want.update((k, (off, None)) for k, off in w.tomb.items())
    wrong = sorted((k, last.get(k), v) for k, v in want.items()
                   if last.get(k) != v and not (v[1] is None and k not in last))
    eq(wrong, [], "%s: keys whose last record served is not their last write (key, served, written)" % what)
    return len(recs)


def test():
    seed = int(os.environ.get("GREGOR_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    log("seed %d (GREGOR_SEED=%d reproduces the kill schedule)" % (seed, seed))
    checks = cp.Checks()
    checks.run("SIGTERM during a throttled pass", sigterm_mid_pass)
    checks.run("kill -9 between two swaps of one pass", crash_between_swaps)
    checks.run("corrupt segment", corrupt_segment)
    with Broker(overrides=OVERRIDES) as b:
        t_start = time.monotonic()
        cp.create(b, TOPIC, cp.topic_config(**{"delete.retention.ms": "1000"}))
        w = cp.write_versions(b, TOPIC, KEYS + DOOMED, ROUNDS0, 0)
        d = b.partition_dir(TOPIC, 0)
        swaps_found = passes_hit = 0
        for cycle in range(CYCLES):
            check(time.monotonic() - t_start < BUDGET_S - 15, "cycle %d not started within the time budget" % cycle)
            cp.write_versions(b, TOPIC, KEYS, 1, range(KEYS + 5 * cycle, KEYS + 5 * cycle + 5),
                              first=ROUNDS0 + cycle, w=w)
            kind = cycle % 3
            how = kill_at(b, kind, rnd, b.log_size())
            b.kill9()
            left = leftovers(b)
            log_swaps = sorted(n for n in left if n.endswith(".log.swap"))
            swaps_found += bool(log_swaps)
            passes_hit += bool(left)
            since = b.log_size()
            b.start()
            after = leftovers(b)
            stale = sorted(n for n in left if after.get(n) == left[n])
            eq(stale, [], "cycle %d: cleaner files left by the kill still there after start-up" % cycle)
            text = b.log_text()[since:]
            for n in log_swaps:
                check(re.search(r"'%s'.*interrupted swap|interrupted swap.*'%s'" % (re.escape(d), re.escape(d)),
                                text),
                      "cycle %d: %s was left, but the broker log says nothing of completing an interrupted swap"
                      % (cycle, n))
            n = check_served(b, w, "cycle %d" % cycle)
            log("cycle %d: killed %s; left %d .cleaned and %d .swap file(s) (%d .log.swap); %d records served, "
                "all exact" % (cycle, how, len([x for x in left if x.endswith(".cleaned")]),
                               len([x for x in left if x.endswith(".swap")]), len(log_swaps), n))
        log("%d of %d kills interrupted a pass, %d left a .log.swap" % (passes_hit, CYCLES, swaps_found))
        check(passes_hit >= 3, "only %d kills interrupted a pass, want at least 3" % passes_hit)

        mark = b.log_size()
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        cp.wait_pass(b, TOPIC, end_min=sentinel, since=mark,
                     timeout_s=max(5, BUDGET_S - 5 - (time.monotonic() - t_start)))
        cp.check_latest(cp.read_all(b, TOPIC), w, sentinel, "either", "after the last pass")
        eq(leftovers(b), {}, "cleaner files after the last pass")
        checks.run("DeleteRecords during a pass", delete_records_mid_pass, b)
        checks.run("DeleteTopics during a pass", delete_topics_mid_pass, b)
        checks.raise_any()


def crash_between_swaps():
    """A pass writes several groups of segments; a kill after the second
    group's swap file is complete but before the pass ends: start-up
    completes both swaps. The first group (two small segments: 3 records
    kept, then key K's value and 10 values updated later) keeps 3 records,
    the second dropped K's tombstone (delete.retention.ms=0). K's value in
    the first group's second segment must not come back: after the restart
    no record of K is served but its tombstone (or none)."""
    t = "swaps"
    overrides = dict(cp.BROKER_OVERRIDES, **{"log.cleaner.enable": "false"})
    with Broker(overrides=overrides, name="1054-swaps") as b:
        cp.create(b, t, cp.topic_config(**{"delete.retention.ms": "0"}))
        p = cp.producer(b)
        k = b"K"
        # 3 KB, then 2 KB: with the first 12+ KB of the next records over segment.bytes
        recs = [(b"keep-%d" % i, b"k" * 1000) for i in range(3)]
        recs_x = [(k, b"K-value")] + [(b"Y-%d" % i, b"o" * 180) for i in range(10)]
        recs_d1 = [(k, None)] + [(b"Y-%d" % i, b"new") for i in range(10)] + \
            [(b"W-%03d" % i, cp.PAD) for i in range(150)]
        recs_more = [(b"Z-%03d" % i, cp.PAD) for i in range(520)]
        for batch in (recs, recs_x, recs_d1 + recs_more):  # segment.ms rolls the segment between them
            for key, value in batch:
                p.produce(t, key=key, value=value, partition=0)
            eq(p.flush(15), 0, "records unsent")
            time.sleep(cp.SEGMENT_MS / 1000.0 + 0.1)
        sentinel = cp.produce_one(p, t, b"sentinel-0", b"sentinel")
        bases = cp.segment_bases(b, t)
        check(bases[:3] == [0, 3, 14] and sentinel in bases and len(bases) >= 6,
              "segments of '%s' start at %r: want 0, 3, 14, several more, %d" % (t, bases, sentinel))
        b.stop()
        b.overrides.update({"log.cleaner.enable": "true", "log.cleaner.io.max.bytes.per.second": "60000"})
        mark = b.log_size()
        b.start()
        # Two groups swapped but the pass not over: the moment that matters
        # when groups wait as *.swap files for the end of the pass. If they
        # never do (each group installed at once), any moment after the
        # pass is as good.
        both = wait_file(b, ".log.swap", 20, t, count=2, since=mark)
        check(both or cp.passes(b, t, since=mark), "no pass over '%s' within 20 s" % t)
        b.kill9()
        left = sorted(n for n in leftovers(b, t) if n.endswith(".log.swap"))
        b.overrides["log.cleaner.enable"] = "false"
        b.start()
        served = [(o, key, v) for o, key, v in cp.read_all(b, t) if key == k]
        log("killed with %r left; records of K served after the restart: %r" % (left, served))
        check(served in ([], [(14, k, None)]),
              "a deleted key came back after a crash between two swaps of one pass: K read as %r (its "
              "tombstone at 14 was dropped by the second group, its value at 3 kept by the first); "
              "*.log.swap files at the kill: %r" % (served, left))


def corrupt_segment():
    """A sealed segment of one compacted topic has a flipped byte (its
    batch CRC no longer matches): the pass over it fails without crashing
    the broker or changing its files, and another topic is still cleaned."""
    overrides = dict(cp.BROKER_OVERRIDES, **{"log.cleaner.enable": "false"})
    with Broker(overrides=overrides, name="1054-corrupt") as b:
        w = {}
        for t in ("bad", "good"):
            cp.create(b, t, cp.topic_config(**{"segment.bytes": "2048"}))
            w[t] = cp.write_versions(b, t, 20, 5, 0)
        sentinel = cp.seal(b, ["bad", "good"])
        b.stop()
        d = b.partition_dir("bad", 0)
        path = os.path.join(d, "%020d.log" % 0)
        with open(path, "r+b") as f:
            f.seek(70)  # inside the first record of the first batch
            x = f.read(1)
            f.seek(70)
            f.write(bytes([x[0] ^ 0xFF]))
        before = {n: os.path.getsize(os.path.join(d, n)) for n in cp.files(b, "bad")}
        b.overrides["log.cleaner.enable"] = "true"
        mark = b.log_size()
        b.start()
        cp.wait_pass(b, "good", since=mark, end_min=sentinel["good"])
        cp.check_latest(cp.read_all(b, "good"), w["good"], sentinel["good"], "kept", "'good' next to a corrupt log")
        b.wait_log("cleaner: '%s': pass failed" % d, since=mark)
        check(b.alive(), "broker alive after a pass over a corrupt segment")
        eq({n: os.path.getsize(os.path.join(d, n)) for n in cp.files(b, "bad")}, before,
           "segments of 'bad' after the failed pass")
        eq(leftovers(b, "bad"), {}, "cleaner files of 'bad' after the failed pass")
        eq(cp.passes(b, "bad", since=mark), [], "passes logged over the corrupt 'bad'")
        log("a corrupt segment fails its pass; the broker and the other topic go on")


def sigterm_mid_pass():
    """SIGTERM while a pass reads a 300 KB segment at 20 KB/s: the broker
    still exits 0 within the harness's 10 s (a throttled pass is cancelled,
    not waited for), and the next start serves every record as written."""
    overrides = dict(cp.BROKER_OVERRIDES, **{"log.cleaner.io.max.bytes.per.second": "20000"})
    with Broker(overrides=overrides, name="1054-sigterm") as b:
        t = "slow"
        cp.create(b, t, cp.topic_config(**{"segment.bytes": "1048576"}))
        w = cp.write_versions(b, t, 100, 25, 0)
        mark = b.log_size()
        sentinel = cp.seal(b, [t])[t]
        time.sleep(0.5)  # the cleaner looks every 100 ms: the pass is reading by now
        eq(cp.passes(b, t, since=mark), [], "passes over '%s' finished before SIGTERM" % t)
        t0 = time.monotonic()
        eq(b.stop(), 0, "exit status after SIGTERM during a throttled pass")
        log("SIGTERM during a throttled pass: exit 0 after %.1f s" % (time.monotonic() - t0))
        b.start()
        recs = cp.read_all(b, t)
        eq([r for r in recs if r[0] < sentinel], [(o,) + w.at[o] for o in sorted(w.at)],
           "records of '%s' after the restart" % t)


def delete_records_mid_pass(b):
    """DeleteRecords while a pass over a compact,delete partition is under
    way: the pass is dropped or installed, never serving records below the
    new log start; the latest values above it are exact."""
    t = "both"
    cp.create(b, t, cp.topic_config(**{"cleanup.policy": "compact,delete"}))
    w = cp.write_versions(b, t, KEYS, 8, 0)
    check(wait_file(b, ".cleaned", 15, t), "no pass over '%s' started within 15 s" % t)
    c = iw.Client(b.port)
    cut = KEYS * 4
    eq(c.delete_records(t, 0, cut), (0, cut), "DeleteRecords during a pass (error, low watermark)")
    c.close()
    sentinel = cp.seal(b, [t])[t]
    cp.wait_pass(b, t, end_min=sentinel)
    w.at = {o: r for o, r in w.at.items() if o >= cut}
    w.latest = {k: r for k, r in w.latest.items() if r[0] >= cut}
    recs = cp.read_all(b, t)
    check(recs and recs[0][0] >= cut, "'%s': first record served at %r, log start %d" % (t, recs[:1], cut))
    cp.check_latest(recs, w, sentinel, "kept", "'%s' after DeleteRecords during a pass" % t)
    log("DeleteRecords to %d during a pass: nothing below it served, latest values exact" % cut)


def delete_topics_mid_pass(b):
    """Three times: DeleteTopics while a pass over the topic is under way,
    the topic created again at once: after its own pass it holds only its
    own records and no file of the deleted topic's pass."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for i in range(3):
        t = "gone-%d" % i
        cp.create(b, t, cp.topic_config())
        cp.write_versions(b, t, KEYS, 4, 0)
        check(wait_file(b, ".cleaned", 15, t), "no pass over '%s' started within 15 s" % t)
        admin.delete_topics([t], operation_timeout=10)[t].result(15)
        mark = b.log_size()
        cp.create(b, t, cp.topic_config())
        fresh = cp.write_versions(b, t, 3, 1, 0)
        sentinel = cp.seal(b, [t])[t]
        cp.wait_pass(b, t, since=mark, end_min=sentinel)
        eq(leftovers(b, t), {}, "cleaner files in '%s' created again after its deletion during a pass, "
           "after its own pass" % t)
        cp.check_latest(cp.read_all(b, t), fresh, sentinel, "kept", "'%s' deleted during a pass and created again" % t)
        eq(sorted(fresh.at), list(range(3)), "offsets of the new '%s' records" % t)
    log("DeleteTopics during a pass: the topic created again holds only its own records")


main(test)
