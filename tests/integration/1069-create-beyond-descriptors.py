#!/usr/bin/python3
"""1069: a partition count the descriptor limit cannot hold is refused whole.

Each partition holds one descriptor, so a CreateTopics or CreatePartitions
asking for more partitions than the broker's RLIMIT_NOFILE leaves room for
(less log.segment.fd.cache.size and a reserve) answers INVALID_PARTITIONS
at once, with validate_only too, and makes no file.  The broker used to
begin such a build: it made partitions until EMFILE, then its undo walked
every partition number up to the count asked for (two billion from one
mutated request), holding the creation thread for good, so no topic was
created or auto-created again until a restart.

Then, with the broker's limit lowered (prlimit) to what it holds plus 400:
  - a topic of 1,000 partitions is refused, one of 10 is made;
  - a build that fails part way (a file in the way of partition 3) answers
    an error, leaves none of its directories behind, and the next topic,
    auto-created by Metadata, is made at once.
"""
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import kwire as kw  # noqa: E402
from gregor import Broker, check, eq, log, main, wait_until  # noqa: E402

NONE, LEADER_NOT_AVAILABLE, INVALID_PARTITIONS = 0, 5, 37
HUGE = 2_000_000_000


def create(b, name, parts, validate_only=False):
    r = kw.call(b.port, 19, 1, kw.create_topics_v1_body([(name, parts)], timeout_ms=10000,
                                                        validate_only=validate_only))
    return kw.parse_create_topics_v1(r.d)[name]


def grow(b, name, count):
    body = kw.array([name], lambda t: kw.string(t) + kw.i32(count) + kw.i32(-1)) + kw.i32(10000) + kw.i8(0)
    r = kw.call(b.port, 37, 0, body)
    r.i32()
    return dict(r.array(lambda r: (r.string(), (r.i16(), r.string()))))[name]


def dirs(b, topic):
    return sorted(d for d in os.listdir(b.data_dir) if d.rsplit("-", 1)[0] == topic or d.startswith(topic + "-0."))


def metadata_error(b, topic):
    return kw.parse_metadata_v1(kw.call(b.port, 3, 1, kw.metadata_v1_body([topic])).d)["topics"][topic][0]


def refused(b, name, parts, validate_only=False):
    err, msg = create(b, name, parts, validate_only)
    eq(err, INVALID_PARTITIONS, "CreateTopics of %d partitions (validate_only %s)" % (parts, validate_only))
    check(msg and "descriptor limit" in msg, "the message says why: %r" % msg)
    eq(dirs(b, name), [], "no directory made for %s" % name)


def test():
    with Broker(props={"auto.create.topics.enable": "true", "num.partitions": 1}) as b:
        refused(b, "huge", HUGE)
        refused(b, "huge", HUGE, validate_only=True)
        eq(create(b, "small", 2)[0], NONE, "a topic of 2 partitions")
        err, msg = grow(b, "small", HUGE)
        eq(err, INVALID_PARTITIONS, "CreatePartitions to %d" % HUGE)
        check(msg and "descriptor limit" in msg, "the message says why: %r" % msg)
        eq(dirs(b, "small"), ["small-0", "small-1"], "small keeps its 2 partitions")

        nfd = len(os.listdir("/proc/%d/fd" % b.pid))
        resource.prlimit(b.pid, resource.RLIMIT_NOFILE, (nfd + 400, resource.prlimit(b.pid, resource.RLIMIT_NOFILE)[1]))
        log("broker holds %d descriptors; soft limit set to %d" % (nfd, nfd + 400))
        refused(b, "thousand", 1000)
        eq(create(b, "ten", 10)[0], NONE, "a topic of 10 partitions under the lowered limit")

        with open(os.path.join(b.data_dir, "blocked-3"), "w") as f:
            f.write("in the way\n")
        err, msg = create(b, "blocked", 8)
        check(err != NONE, "a build failing at partition 3 answers an error (%d %r)" % (err, msg))
        wait_until(lambda: dirs(b, "blocked") in ([], ["blocked-3"]), 10, "the failed build's directories removed")
        check(not os.path.isdir(os.path.join(b.data_dir, "blocked-4")), "partitions after the failure never made")
        wait_until(lambda: metadata_error(b, "auto") == NONE, 10, "a topic auto-created after the failed build")
        eq(b.stop(), 0, "exit status on SIGTERM")


if __name__ == "__main__":
    main(test)
