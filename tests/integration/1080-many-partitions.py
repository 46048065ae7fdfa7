#!/usr/bin/python3
"""1080: 10,000 partitions on one broker, each holding one descriptor at rest.

itest: alone (it bounds the broker's descriptors and makes 60,000 files;
24-68 s here by itself).

100 topics x 100 partitions created with the AdminClient, one record
produced to every partition (confluent_kafka, acks=all), every record read
back by one consumer assigned all of them; then a clean restart and a
kill -9 restart, each followed by the same full read.  At each step the
broker's open descriptors (/proc/<pid>/fd) stay below partitions + the
sealed-segment cache + a constant (connections, listener, epoll, log):
an idle partition holds only its active .log (index files mapped, the
directory opened only when used).  bench/many-partitions times the same
steps at 10,000 partitions and more.

The test lowers its own soft RLIMIT_NOFILE to 1024 (hard unchanged), which
the broker inherits: 10,000 partitions only open if the broker raises the
soft limit to the hard one, as it logs at start.
"""
import os
import re
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, log, main  # noqa: E402
import manyparts as mp  # noqa: E402

TOPICS = 100
PER_TOPIC = 100
CACHE = 64  # log.segment.fd.cache.size
SLACK = 64  # listener, epoll, signalfd, eventfds, log, client connections, threads' own


def check_fds(b, when):
    fds, parts = mp.broker_fds(b), mp.data_partitions(b)
    log("%s: %d descriptors open for %d partitions" % (when, fds, parts))
    check(parts >= TOPICS * PER_TOPIC, "%s: %d partition directories" % (when, parts))
    check(fds <= parts + CACHE + SLACK,
          "%s: %d descriptors open, more than %d partitions + %d cache + %d" % (when, fds, parts, CACHE, SLACK))


def test():
    need = TOPICS * PER_TOPIC + CACHE + SLACK
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= need:
        try:  # root may raise its hard limit (a container's default is often 1,024 or 4,096)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, 2 * need))
            hard = 2 * need
        except (ValueError, OSError):
            pass
    check(hard == resource.RLIM_INFINITY or hard > need,
          "hard RLIMIT_NOFILE %d too low for this test (needs %d, or root to raise it)" % (hard, need))
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    names = mp.topic_names(TOPICS)
    props = {"log.segment.fd.cache.size": CACHE, "num.partitions": 1}
    with Broker(props=props, start_timeout_s=60) as b:
        line = b.wait_log("descriptors: limit")
        check(re.search(r"soft limit was 1024\b", line), "broker saw soft limit 1024: %s" % line)
        check("limit 1024 " not in line, "broker raised its soft limit: %s" % line)
        mp.create(b, names, PER_TOPIC)
        check_fds(b, "created")
        mp.produce_one_each(b, names, PER_TOPIC)
        eq_read = mp.read_all(b, names, PER_TOPIC)
        log("read %d records" % eq_read)
        check_fds(b, "written and read")
        b.restart()
        check_fds(b, "after a clean restart")
        mp.read_all(b, names, PER_TOPIC)
        check_fds(b, "read after a clean restart")
        b.kill9()
        b.start()
        check_fds(b, "after kill -9")
        mp.read_all(b, names, PER_TOPIC)
        check_fds(b, "read after kill -9")


main(test)
