"""OffsetForLeaderEpoch (api key 23) on a single broker, raw protocol.

  1. ApiVersions advertises OffsetForLeaderEpoch 0-4
  2. every version 0-4 decodes to the last byte; a topic of 2 partitions
     holding 5 and 0 records: epoch 0 (the only one, the current) ends at
     the log end offset (5, 0); v0 carries no epoch, v1+ epoch 0
  3. an epoch newer than any known (1) and the undefined epoch -1 answer
     UNDEFINED (-1/-1); after 3 more records epoch 0 ends at 8
  4. CurrentLeaderEpoch (v2+): -1 and 0 (what Metadata gives) are served,
     1 is UNKNOWN_LEADER_EPOCH, -2 FENCED_LEADER_EPOCH; v0/v1 carry none
  5. ReplicaId (v3+): a follower id (1) and a consumer (-1) get the same answer
  6. an unknown topic and a partition out of range: UNKNOWN_TOPIC_OR_PARTITION;
     several topics and partitions in one request are answered in order
  7. after a restart (clean stop) the answers are the same (the epoch cache
     is on disk), and a connection is still served at the end
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kwire  # noqa: E402
from epochwire import UNDEFINED, end_offset, query  # noqa: E402
from fetchwire import produce  # noqa: E402
from gregor import Broker, eq, log, main  # noqa: E402

TOPIC = "epochs"
UNKNOWN_TOPIC_OR_PARTITION, FENCED, UNKNOWN_EPOCH = 3, 74, 75


def check_answers(port, leo0, leo1):
    for v in range(5):
        want_epoch = None if v == 0 else 0
        got = query(port, v, [(TOPIC, 0, -1, 0), (TOPIC, 1, -1, 0)])
        eq(got, {(TOPIC, 0): (0, want_epoch, leo0), (TOPIC, 1): (0, want_epoch, leo1)}, "v%d epoch 0" % v)
        for asked in (1, 7, -1):
            err, epoch, end = end_offset(port, TOPIC, 0, asked, version=v)
            eq((err, end), (0, -1), "v%d epoch %d" % (v, asked))
            if v >= 1:
                eq(epoch, -1, "v%d epoch %d: undefined" % (v, asked))


def test():
    with Broker() as b:
        r = kwire.call(b.port, 18, 0, b"")
        eq(r.i16(), 0, "ApiVersions error")
        keys = dict(r.array(lambda r: (r.i16(), (r.i16(), r.i16()))))
        eq(keys.get(23), (0, 4), "OffsetForLeaderEpoch versions advertised")
        eq(kwire.create_topic(b.port, TOPIC, 2)[0], 0, "create " + TOPIC)
        produce(b.port, TOPIC, 0, [b"a", b"b", b"c", b"d", b"e"])
        check_answers(b.port, 5, 0)
        log("epoch 0 ends at the LEO in v0-v4; newer and undefined epochs answer UNDEFINED")
        produce(b.port, TOPIC, 0, [b"f", b"g", b"h"])
        eq(end_offset(b.port, TOPIC, 0, 0), (0, 0, 8), "epoch 0 after 3 more records")
        for v in (2, 3, 4):
            eq(end_offset(b.port, TOPIC, 0, 0, current=0, version=v), (0, 0, 8), "v%d current 0" % v)
            eq(end_offset(b.port, TOPIC, 0, 0, current=1, version=v), (UNKNOWN_EPOCH, -1, -1), "v%d current 1" % v)
            eq(end_offset(b.port, TOPIC, 0, 0, current=-2, version=v), (FENCED, -1, -1), "v%d current -2" % v)
        log("CurrentLeaderEpoch fences older and newer askers")
        for v in (3, 4):
            eq(end_offset(b.port, TOPIC, 0, 0, version=v, replica_id=1), (0, 0, 8), "v%d follower" % v)
            eq(end_offset(b.port, TOPIC, 0, 0, version=v, replica_id=-1), (0, 0, 8), "v%d consumer" % v)
        got = query(b.port, 4, [("nope", 0, -1, 0), (TOPIC, 2, -1, 0), (TOPIC, 1, -1, 0), (TOPIC, 0, -1, 5)])
        eq(got, {("nope", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1), (TOPIC, 2): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                 (TOPIC, 1): (0, 0, 0), (TOPIC, 0): (0, -1, -1)}, "mixed request")
        eq(UNDEFINED, (-1, -1), "undefined")
        log("unknown topics and partitions; several in one request")
        eq(b.stop(), 0, "clean stop")
        b.start()
        check_answers(b.port, 8, 0)
        log("the same answers after a restart")


if __name__ == "__main__":
    main(test)
