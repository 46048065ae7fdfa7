#!/usr/bin/python3
"""1052: compaction of a topic written by idempotent and transactional producers.

A compacted topic (segment.bytes=2048, segment.ms=1000,
min.cleanable.dirty.ratio=0.01, delete.retention.ms=8000) gets, in order:
  1. an idempotent producer (confluent_kafka, enable.idempotence=true):
     keys idem-00..19, 5 versions, one flush per version;
  2. a transactional producer: a committed transaction overwriting every
     idem-* key and writing t-00..19 v0; an aborted one over t-* and keys
     a-00..04 that exist nowhere else; a committed one with t-00..09 v1; an
     aborted one over t-10..19;
  3. a sentinel once segment.ms has passed (everything above is sealed).
After a pass covering everything below the sentinel:
  - read_committed and read_uncommitted consumers (check.crcs=true) both
    see exactly one record per key below the active segment, its latest
    committed value, and no record of an aborted transaction (the a-* keys
    are gone entirely);
  - the idempotent producer's last batch is still in the log, at its
    offset with its producer id, epoch and sequences, emptied (all its keys
    were overwritten later) and with a valid CRC;
  - resending that batch on the raw protocol (same producer id, epoch and
    sequence) is answered as a duplicate: no error, its original offset,
    the log end unchanged;
  - the same after kill -9 with the producer snapshots removed, which makes
    the broker rebuild the producer state from the cleaned log alone;
  - once delete.retention.ms (8000) has passed and another sentinel made
    the log dirty, the next pass drops the marker of the first aborted
    transaction (no records left) and keeps the commit markers of the
    transactions whose records stay; reads and the resend as before, also
    after another kill -9 without snapshots (a marker the pass dropped must
    not leave a transaction open in the rebuilt producer state: the last
    stable offset stays the log end).
Both isolation levels read the same records every time (nothing aborted is
left, no transaction is open). First, on a broker of its own, the internal
topics (compacted too) with 2 KB segments: 150 offset commits of a group
and 30 transactions of one id cleaned; after kill -9 and a clean restart
the committed offset is the last and InitProducerId bumps the last epoch.
And on another, an open transaction holds the cleaner at its first offset
(every record from there on stays) until it commits. The checks past
delete.retention.ms, the internal topics' and the open transaction's all
run, whichever fails. Runtime ~20 s.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import compaction as cp  # noqa: E402
import idemwire as iw  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "txc"
RETENTION_MS = 8000
PROPS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


def write_idempotent(b):
    p = cp.producer(b, **{"enable.idempotence": True, "linger.ms": 20})
    for v in range(5):
        for k in range(20):
            p.produce(TOPIC, key=b"idem-%02d" % k, value=b"idem-%02d:v%d" % (k, v), partition=0)
        eq(p.flush(15), 0, "idempotent records unsent")
    mine = [h for h in cp.headers(b, TOPIC) if h.producer_id >= 0 and not h.attributes & 0x10]
    check(mine, "no batch of the idempotent producer on disk")
    check(len({h.producer_id for h in mine}) == 1, "one idempotent producer id: %r" % [h.ident() for h in mine])
    return mine[-1]


def txn(p, records, commit):
    p.begin_transaction()
    for k, v in records:
        p.produce(TOPIC, key=k, value=v, partition=0)
    if commit:
        p.commit_transaction(30)
    else:
        p.flush(15)
        p.abort_transaction(30)


def write_transactions(b, want):
    """The four transactions; returns their offset ranges [from, to) (each
    ends with its marker at to - 1) and the time the last one ended."""
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "compact-txn", "linger.ms": 5})
    p.init_transactions(30)
    c = iw.Client(b.port)
    ranges = []

    def run(records, commit):
        start = c.list_offset(TOPIC, 0)
        txn(p, records, commit)
        ranges.append((start, c.list_offset(TOPIC, 0)))

    first = [(b"idem-%02d" % k, b"idem-%02d:txn" % k) for k in range(20)]
    first += [(b"t-%02d" % k, b"t-%02d:v0" % k) for k in range(20)]
    run(first, True)
    want.update(first)
    run([(b"t-%02d" % k, b"aborted") for k in range(20)] + [(b"a-%02d" % k, b"aborted") for k in range(5)], False)
    second = [(b"t-%02d" % k, b"t-%02d:v1" % k) for k in range(10)]
    run(second, True)
    want.update(second)
    run([(b"t-%02d" % k, b"aborted-2") for k in range(10, 20)], False)
    c.close()
    return ranges, time.time()


def markers(b):
    """Base offsets of the control batches on disk."""
    return [h.base_offset for h in cp.headers(b, TOPIC) if h.attributes & 0x20]


def check_reads(b, want, sentinel, what):
    """Both isolation levels: offsets increasing, keys unique below the
    sentinel, nothing aborted, the latest committed value of every key; and
    read_committed reads up to the log end like read_uncommitted (no
    transaction is open, none of the aborted records is left)."""
    got = {}
    for iso in ("read_committed", "read_uncommitted"):
        recs = cp.read_all(b, TOPIC, isolation=iso)
        w = "%s, %s" % (what, iso)
        cp.check_increasing(recs, w)
        cp.check_unique_below(recs, sentinel, w)
        aborted = [(o, k, v) for o, k, v in recs if v.startswith(b"aborted")]
        eq(aborted, [], "%s: records of aborted transactions" % w)
        seen = {k: v for _, k, v in recs if not k.startswith(b"sentinel-")}
        eq(sorted((k, seen.get(k)) for k in set(seen) | set(want) if seen.get(k) != want.get(k)), [],
           "%s: keys whose last value read (key, value) is not the latest committed one" % w)
        got[iso] = [r[0] for r in recs]
    eq(got["read_committed"], got["read_uncommitted"], "%s: offsets read by read_committed (want all, as "
       "read_uncommitted: the last stable offset must be the log end)" % what)


def restart_from_log(b):
    """kill -9, then start without the producer snapshots: the broker
    rebuilds the producer state from the (cleaned) log alone."""
    b.kill9()
    d = b.partition_dir(TOPIC, 0)
    snaps = [n for n in os.listdir(d) if n.endswith(".snapshot")]
    for n in snaps:
        os.remove(os.path.join(d, n))
    b.start()
    log("restarted after kill -9 without the %d producer snapshot(s)" % len(snaps))


def check_resend(b, last, leo, what):
    c = iw.Client(b.port)
    try:
        eq(c.produce(TOPIC, 0, last.as_sent()), (0, last.base_offset),
           "%s: resent last batch of the idempotent producer (error, offset)" % what)
        eq(c.list_offset(TOPIC, 0), leo, "%s: log end offset after the resend" % what)
    finally:
        c.close()


def internal_topics():
    """__consumer_offsets and __transaction_state are compacted too: with
    2 KB segments and log.cleaner.min.cleanable.ratio=0.01, 150 commits of
    one group's offset and 30 transactions of one transactional id get them
    cleaned; after kill -9 and after a clean restart the group's committed
    offset is the last one and InitProducerId of the id bumps the epoch it
    had (no older state comes back)."""
    props = {"transaction.state.log.num.partitions": "1", "offsets.topic.num.partitions": "1",
             "offsets.topic.segment.bytes": "2048", "transaction.state.log.segment.bytes": "2048",
             "log.cleaner.min.cleanable.ratio": "0.01", "group.initial.rebalance.delay.ms": "0"}
    with Broker(props=props, overrides=cp.BROKER_OVERRIDES, name="1052-internal") as b:
        cp.create(b, "src", {})
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False})
        for i in range(1, 151):
            c.commit(offsets=[TopicPartition("src", 0, i)], asynchronous=False)
        c.close()
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx", "linger.ms": 0})
        p.init_transactions(30)
        for i in range(30):
            p.begin_transaction()
            p.produce("src", key=b"k", value=b"%d" % i, partition=0)
            p.commit_transaction(30)
        cp.wait_pass(b, "__consumer_offsets")
        cp.wait_pass(b, "__transaction_state")
        w = iw.Client(b.port)
        pid, epoch = w.init_pid(txn_id="tx")
        w.close()
        for how in ("kill -9", "clean restart"):
            if how == "kill -9":
                b.kill9()
                b.start()
            else:
                b.restart()
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g"})
            eq(c.committed([TopicPartition("src", 0)], timeout=10)[0].offset, 150,
               "committed offset of group g after cleaning and a %s" % how)
            c.close()
            w = iw.Client(b.port)
            epoch += 1
            eq(w.init_pid(txn_id="tx"), (pid, epoch), "InitProducerId of 'tx' after cleaning and a %s" % how)
            w.close()
        log("internal topics cleaned: committed offset and transactional epoch intact across restarts")


def open_transaction():
    """An open transaction holds the cleaner back: no pass goes past the
    first offset of the open transaction (the last stable offset), and
    every record from there on stays, though later records supersede
    earlier ones; once it commits, a pass covers the rest."""
    t = "open"
    with Broker(props=PROPS, overrides=cp.BROKER_OVERRIDES, name="1052-open") as b:
        cp.create(b, t, cp.topic_config(**{"segment.bytes": "2048"}))
        w = cp.write_versions(b, t, 20, 3, 0)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "open-tx", "linger.ms": 0})
        p.init_transactions(30)
        p.begin_transaction()
        offs = []
        for k in range(5):
            p.produce(t, key=cp.key_of(k), value=b"in-txn", partition=0,
                      on_delivery=lambda err, m: offs.append(m.offset()))
        eq(p.flush(15), 0, "transactional records unsent")
        lso = min(offs)
        cp.write_versions(b, t, 20, 3, 0, first=3, w=w)
        sentinel = cp.seal(b, [t])[t]
        time.sleep(1.5)  # time for passes that must not go past the open transaction
        mark = b.log_size()
        ended = [p_[1] for p_ in cp.passes(b, t)]
        check(ended and max(ended) <= lso, "passes over '%s' end at %r while a transaction is open from %d"
              % (t, ended, lso))
        after = [o for o, _, _ in cp.read_all(b, t) if o >= lso]
        eq(after, [o for o in range(lso, sentinel + 1)], "offsets from the open transaction on, read uncommitted")
        p.commit_transaction(30)
        cp.wait_pass(b, t, since=mark, end_min=sentinel)
        cp.check_latest(cp.read_all(b, t, isolation="read_committed"), w, sentinel, "kept",
                        "'%s' after the transaction committed" % t)
        log("open transaction from %d: passes ended at %r before its commit, one covered the rest after" % (lso, ended))


def test():
    checks = cp.Checks()
    checks.run("internal topics", internal_topics)
    checks.run("open transaction", open_transaction)
    with Broker(props=PROPS, overrides=cp.BROKER_OVERRIDES) as b:
        cp.create(b, TOPIC, cp.topic_config(**{"segment.bytes": "2048", "delete.retention.ms": str(RETENTION_MS)}))
        last = write_idempotent(b)
        log("idempotent producer %d: last batch at %d, sequence %d, %d records"
            % (last.producer_id, last.base_offset, last.base_sequence, last.record_count))
        want = {}
        ranges, txn_end = write_transactions(b, want)
        log("transactions at %r" % ranges)
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        first, end, _ = cp.wait_pass(b, TOPIC, end_min=sentinel)
        log("pass [%d, %d), sentinel at %d" % (first, end, sentinel))
        check_reads(b, want, sentinel, "after cleaning")

        kept = [h for h in cp.headers(b, TOPIC) if h.base_offset == last.base_offset]
        eq([h.ident() for h in kept], [last.ident()], "the idempotent producer's last batch after cleaning")
        eq(kept[0].record_count, 0, "records left in that batch (all its keys were overwritten)")
        check(kept[0].crc_ok, "CRC of the emptied batch")
        leo = sentinel + 1
        check_resend(b, last, leo, "after cleaning")

        restart_from_log(b)
        check_resend(b, last, leo, "after kill -9, state from the cleaned log")
        check_reads(b, want, sentinel, "after kill -9")

        # Past delete.retention.ms the marker of the first aborted transaction,
        # none of whose records is left, goes with the next pass; the
        # commit markers of transactions whose records stay are kept.
        time.sleep(max(0.0, txn_end + RETENTION_MS / 1000.0 + 0.2 - time.time()))
        mark = b.log_size()
        sentinel = cp.seal(b, [TOPIC])[TOPIC]
        cp.wait_pass(b, TOPIC, since=mark, end_min=sentinel)
        checks.run("markers past delete.retention.ms", check_markers, b, ranges)
        checks.run("reads past delete.retention.ms", check_reads, b, want, sentinel, "past delete.retention.ms")
        checks.run("resend past delete.retention.ms", check_resend, b, last, sentinel + 1, "past delete.retention.ms")
        restart_from_log(b)
        checks.run("reads after kill -9", check_reads, b, want, sentinel, "past delete.retention.ms, after kill -9")
        checks.run("resend after kill -9", check_resend, b, last, sentinel + 1,
                   "past delete.retention.ms, after kill -9")
        checks.raise_any()


def check_markers(b, ranges):
    left = markers(b)
    log("markers at %r past delete.retention.ms" % left)
    eq([o for o in left if ranges[1][0] <= o < ranges[1][1]], [],
       "marker of the aborted transaction %r past delete.retention.ms" % (ranges[1],))
    for r in (ranges[0], ranges[2]):
        check(r[1] - 1 in left, "commit marker at %d of the transaction %r (records kept): markers %r"
              % (r[1] - 1, r, left))

main(test)
