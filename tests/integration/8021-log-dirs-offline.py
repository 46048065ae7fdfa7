"""DescribeLogDirs of a failed log directory.

A sync that fails (EIO from the LD_PRELOAD shim, tests/lib/syncshim.c) takes
the log directory offline (registry_fail_dir). Kafka then describes the
directory with KAFKA_STORAGE_ERROR and no partitions; so must Gregor, in
every version 0-4 (v4's TotalBytes and UsableBytes left at -1), and
gregor-log-dirs prints the directory with "error":"KAFKA_STORAGE_ERROR" and
no partitions, exiting 0 as Kafka's tool does. Before the failure the same
directory is described with its partition and no error.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, log, main, run  # noqa: E402
import idemwire as iw  # noqa: E402
from logdirswire import describe  # noqa: E402
from syncshim import SyncShim  # noqa: E402

TOPIC = "ld-offline"
STORAGE = 56


def test():
    shim = SyncShim()
    with Broker(overrides={"num.partitions": "1"}, env=shim.env()) as b:
        c = iw.Client(b.port)
        eq(c.produce(TOPIC, 0, iw.batch(2, value=b"kept"))[0], 0, "produce before the failure")
        path = os.path.realpath(b.data_dir)
        d = describe(b.port, 4)["dirs"][0]
        eq((d["error"], d["path"], sorted(d["parts"])), (0, path, [(TOPIC, 0)]), "online directory")

        shim.fail_next(".log")
        eq(c.produce(TOPIC, 0, iw.batch(1, value=b"lost"))[0], STORAGE, "acks=all produce whose sync fails")
        c.close()
        b.wait_log("is offline after a failed sync")

        for v in range(5):
            resp = describe(b.port, v)
            eq(resp["error"], 0 if v >= 3 else None, "top-level ErrorCode (v%d)" % v)
            eq(len(resp["dirs"]), 1, "log dirs (v%d)" % v)
            d = resp["dirs"][0]
            eq((d["error"], d["path"], d["parts"]), (STORAGE, path, {}), "offline directory (v%d)" % v)
            eq((d["total"], d["usable"]), (-1, -1) if v >= 4 else (None, None), "volume sizes (v%d)" % v)
            filtered = describe(b.port, v, [(TOPIC, [0])])["dirs"][0]
            eq((filtered["error"], filtered["parts"]), (STORAGE, {}), "offline directory, filtered (v%d)" % v)
        log("every version answers KAFKA_STORAGE_ERROR for the directory")

        r = run([build_bin("gregor-log-dirs"), "--bootstrap-server", b.bootstrap, "--describe"], timeout_s=60)
        out = json.loads(r.stdout.decode().splitlines()[2])
        eq(out["brokers"][0]["logDirs"], [{"partitions": [], "error": "KAFKA_STORAGE_ERROR", "logDir": path}],
           "gregor-log-dirs of the offline directory")
        check(b.alive(), "broker alive")
        eq(b.stop(), 0, "exit status after SIGTERM")


main(test)
