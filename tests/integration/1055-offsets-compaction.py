#!/usr/bin/python3
"""1055: the cleaner keeps __consumer_offsets small and start-up replay short.

One group commits 500,000 offsets (librdkafka, 1055-offsets-compaction.c:
one asynchronous commit per call, partitions 0..3 of topic t in turn) to a
broker with offsets.topic.segment.bytes=1 MiB, so the group's
__consumer_offsets partition rolls about fifty segments while the cleaner
(log.cleaner.backoff.ms=100) runs.  Then:
  - the cleaner logs a pass over that partition covering every sealed
    segment (`cleaner: '.../__consumer_offsets-N': cleaned [a, b)` with b
    at least the active segment's base offset after the last commit);
  - after a restart the group's committed offsets are the last ones sent;
  - the partition's size on disk (allocated blocks, index files included)
    is below a tenth of the bytes written to it.  Bytes written = the
    records' end offset times the bytes per record, measured on the first
    1,000 commits while they are still in the (never cleaned) active
    segment.
Prints the start-up replay time: from starting the process to the first
successful OffsetFetch (no assertion on it).  Runtime ~10 s.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, log, main, wait_until  # noqa: E402

from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

GROUP, TOPIC, PARTS = "g1055", "t", 4
COMMITS = 500000
CALIBRATE = 1000
SEGMENT = 1 << 20
OVERRIDES = {"offsets.topic.segment.bytes": str(SEGMENT), "log.cleaner.backoff.ms": "100"}


def commit(b, first, n):
    p = subprocess.run([build_bin("itest", "1055-offsets-compaction"), b.bootstrap, GROUP, TOPIC, str(PARTS),
                        str(n), str(first)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    sys.stdout.write(p.stdout.decode(errors="replace"))
    eq(p.returncode, 0, "committer exit status")


def stat_or_none(path):
    """os.stat, or None for a file the cleaner or the deleter renamed meanwhile."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def group_dir(b):
    """The __consumer_offsets partition holding the group's records (the only non-empty one)."""
    full = []
    for d in os.listdir(b.data_dir):
        if d.startswith("__consumer_offsets-"):
            path = os.path.join(b.data_dir, d)
            sts = [stat_or_none(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".log")]
            if any(st and st.st_size for st in sts):
                full.append(d)
    eq(len(full), 1, "non-empty __consumer_offsets partitions %s" % full)
    return os.path.join(b.data_dir, full[0])


def sizes(path):
    """(bytes of .log files, allocated bytes of every file, base offset of the last segment)."""
    logs = alloc = 0
    bases = [-1]
    for f in os.listdir(path):
        st = stat_or_none(os.path.join(path, f))
        if st is None:
            continue
        alloc += st.st_blocks * 512
        if f.endswith(".log"):
            logs += st.st_size
            bases.append(int(f[:-4]))
    return logs, alloc, max(bases)


def end_offset(b, part):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader-1055"})
    try:
        return c.get_watermark_offsets(TopicPartition("__consumer_offsets", part), timeout=10)[1]
    finally:
        c.close()


def cleaned_upto(b, name):
    """Largest end offset of the cleaner's passes over partition dir name, -1 if none."""
    rx = re.compile(r"cleaner: '[^']*/%s': cleaned \[(\d+), (\d+)\)" % re.escape(name))
    return max([int(m.group(2)) for m in rx.finditer(b.log_text())] + [-1])


def fetch_committed(b, timeout_s=30):
    """The group's committed offsets per partition, by the first OffsetFetch that succeeds."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                got = c.committed([TopicPartition(TOPIC, p) for p in range(PARTS)], timeout=5)
                return {tp.partition: tp.offset for tp in got}
            except KafkaException as e:
                check(time.monotonic() < deadline, "OffsetFetch failing for %.0fs: %s" % (timeout_s, e))
                time.sleep(0.01)
    finally:
        c.close()


def test():
    want = {p: max(i + 1 for i in range(COMMITS - PARTS, COMMITS) if i % PARTS == p) for p in range(PARTS)}
    with Broker(overrides=OVERRIDES) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)])[TOPIC].result(timeout=15)
        commit(b, 0, CALIBRATE)
        path = group_dir(b)
        name, part = os.path.basename(path), int(path.rsplit("-", 1)[1])
        logs, _, base = sizes(path)
        eq(base, 0, "segments after %d commits (all in the first)" % CALIBRATE)
        per_record = logs / end_offset(b, part)
        t0 = time.monotonic()
        commit(b, CALIBRATE, COMMITS - CALIBRATE)
        log("%d commits in %.1f s; %s, %.1f bytes per record" % (COMMITS, time.monotonic() - t0, name, per_record))
        written = per_record * end_offset(b, part)
        logs, alloc, active = sizes(path)
        check(active > 0, "the partition rolled segments (active segment base %d)" % active)
        wait_until(lambda: cleaned_upto(b, name) >= active, 45,
                   "a cleaner pass over %s up to the active segment's base %d" % (name, active))
        log("cleaned up to %d (active segment base %d)" % (cleaned_upto(b, name), active))
        b.stop()
        t0 = time.monotonic()
        b.start()
        got = fetch_committed(b)
        replay_ms = (time.monotonic() - t0) * 1000
        eq(got, want, "committed offsets after the restart")
        logs, alloc, _ = sizes(path)
        loaded = re.findall(r"group coordinator: loaded .*", b.log_text())
        log("start-up replay: %.0f ms from start to the first successful OffsetFetch (broker: %s)"
            % (replay_ms, loaded[-1] if loaded else "no load line"))
        log("%s: %.0f bytes written, %d bytes of .log and %d allocated on disk after cleaning (%.2f%%)"
            % (name, written, logs, alloc, 100.0 * alloc / written))
        check(alloc < written / 10, "%s takes %d bytes on disk, not below a tenth of the %.0f written"
              % (name, alloc, written))


main(test)
