#!/usr/bin/python3
"""1022: the order of fsync, rename and directory fsync on every file the
broker makes or replaces (a power cut keeps only what was synced, which no
SIGKILL test can show).

The broker runs under tests/lib/syncshim.so, which logs every successful
open(O_CREAT), fsync/fdatasync, syncfs, rename, mkdir, unlink and rmdir with full
paths.  A topic with small segments takes idempotent produce (rolls, so
producer snapshots), a config change, a clean restart and a stop.  Then,
over the whole trace:
  1. every <file>.tmp renamed over <file> (checkpoints, snapshots,
     meta.properties, partition.metadata, topic.properties, the clean
     shutdown marker) was fsynced after it was opened and before the rename,
     and the directory was fsynced after the rename, or (the producer
     snapshots a clean stop writes) a syncfs came after the rename and
     before the clean-shutdown marker;
  2. every new directory's parent was fsynced before anything was created
     inside it, or a syncfs (topics made in rounds) came after it;
  3. every renamed directory (-create staging, -delete) is followed by an
     fsync of the log dir, and a -create staging directory is renamed only
     after a syncfs (or fsyncs of all it holds) following its last file;
  4. the clean-shutdown marker's removal at start is followed by an fsync
     of the log dir;
  5. every new segment file's directory is fsynced (or a syncfs made) after
     the file is created.
Runtime ~5 s.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from gregor import Broker, check, eq, log, main  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402


def parse(path):
    ev = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ")
            ev.append((parts[0], parts[1:]))
    return ev


def first_after(ev, i, pred, stop=None):
    """Index of the first event after i matching pred, not past an event matching stop; else None."""
    for j in range(i + 1, len(ev)):
        if pred(ev[j]):
            return j
        if stop and stop(ev[j]):
            return None
    return None


def is_fsync(path):
    return lambda e: e[0] == "fsync" and e[1][0] == path


def staged_durable(ev, i, stage):
    """True if a syncfs, or fsyncs of each file and of the directory, came after the last file made
    in the staging directory and before its rename at event i."""
    made = [j for j in range(i) if ev[j][0] in ("open", "mkdir") and ev[j][1][0].startswith(stage)]
    last = max(made, default=-1)
    if any(ev[j][0] == "syncfs" for j in range(last + 1, i)):
        return True
    files = {ev[j][1][0] for j in made if ev[j][0] == "open"}
    synced = {ev[j][1][0] for j in range(last + 1, i) if ev[j][0] == "fsync"}
    return files <= synced and stage in synced


def check_rules(ev, data_dir):
    problems, counts = [], {"replace": 0, "mkdir": 0, "dir rename": 0, "unmark": 0, "segment": 0}
    for i, (op, args) in enumerate(ev):
        if op == "rename" and args[0].endswith(".tmp") and args[0][:-4] == args[1]:
            counts["replace"] += 1
            tmp, dst = args
            marker = lambda e: e[0] == "rename" and e[1][1].endswith("/.kafka_cleanshutdown")  # noqa: E731
            if first_after(ev, i, lambda e: e[0] == "syncfs", marker) is not None:
                continue  # written for a syncfs that covers it before the clean-shutdown marker
            opened = max((j for j in range(i) if ev[j] == ("open", [tmp])), default=None)
            if opened is None or not any(ev[j] == ("fsync", [tmp]) for j in range(opened, i)):
                problems.append("%s renamed over %s without an fsync of it first" % (tmp, dst))
            if first_after(ev, i, is_fsync(os.path.dirname(dst)), lambda e: e == ev[i]) is None:
                problems.append("no fsync of %s after renaming %s" % (os.path.dirname(dst), dst))
        elif op == "rename" and os.path.dirname(args[1]) == data_dir:
            counts["dir rename"] += 1
            if first_after(ev, i, is_fsync(data_dir)) is None:
                problems.append("no fsync of the log dir after renaming %s to %s" % tuple(args))
            if args[0].endswith("-create") and not staged_durable(ev, i, args[0]):
                problems.append("%s renamed into place before all it holds was synced" % args[0])
        elif op == "mkdir":
            counts["mkdir"] += 1
            d = args[0]
            inside = lambda e: e[0] in ("open", "mkdir") and e[1][0].startswith(d + "/")  # noqa: E731
            if (first_after(ev, i, is_fsync(os.path.dirname(d)), inside) is None and
                    first_after(ev, i, lambda e: e[0] == "syncfs") is None):
                problems.append("%s made without an fsync of its parent before its first file, nor a syncfs "
                                "after it" % d)
        elif op == "unlink" and args[0].endswith("/.kafka_cleanshutdown"):
            counts["unmark"] += 1
            if first_after(ev, i, is_fsync(data_dir), lambda e: e[0] == "open") is None:
                problems.append("clean-shutdown marker removed without an fsync of the log dir")
        elif op == "open" and args[0].endswith(".log"):
            counts["segment"] += 1
            if (first_after(ev, i, is_fsync(os.path.dirname(args[0]))) is None and
                    first_after(ev, i, lambda e: e[0] == "syncfs") is None):
                problems.append("new segment %s: its directory never fsynced" % args[0])
    return problems, counts


def test():
    with Broker(overrides={"num.partitions": "1"}, start=False) as b:
        trace = os.path.join(b.tmp, "trace.log")
        b.env.update(SyncShim(trace=trace).env())
        b.start()
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        a.create_topics([NewTopic("t", 2, 1, config={"segment.bytes": "2000"})])["t"].result(timeout=15)
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 0})
        for i in range(60):
            p.produce("t", value=b"x" * 300, partition=i % 2)
            if i % 5 == 4:
                eq(p.flush(10), 0, "unsent")
        res = ConfigResource("topic", "t", set_config={"segment.bytes": "2000", "retention.ms": "86400000"})
        a.alter_configs([res])[res].result(timeout=10)
        b.restart()
        b.stop()
        ev = parse(trace)
        data_dir = os.path.realpath(b.data_dir)
        problems, counts = check_rules(ev, data_dir)
        log("checked %d events: %s" % (len(ev), counts))
        for prob in problems:
            log("PROBLEM: " + prob)
        eq(len(problems), 0, "crash-safety problems in the trace")
        for what in ("replace", "mkdir", "dir rename", "unmark", "segment"):
            check(counts[what] > 0, "the trace has no %s event to check" % what)
        snaps = [e for e in ev if e[0] == "rename" and e[1][1].endswith(".snapshot")]
        check(snaps, "no producer snapshot was written")


main(test)
