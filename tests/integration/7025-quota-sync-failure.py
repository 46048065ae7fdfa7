"""AlterClientQuotas when the quota file cannot be made durable (LD_PRELOAD shim).

- The next fsync of client-quotas(.tmp) fails with EIO: AlterClientQuotas
  answers KAFKA_STORAGE_ERROR for its entries and changes nothing:
  DescribeClientQuotas still shows the settings from before, and the
  producer_byte_rate that was being set is not enforced.
- After a restart the file holds the settings from
  before the failed change, not the new ones.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, log, main  # noqa: E402
import quotawire as qw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

KAFKA_STORAGE_ERROR = 56
BEFORE = {(("client-id", "app"),): {"consumer_byte_rate": 5000.0}}


def test():
    shim = SyncShim()
    with Broker(env=shim.env()) as b:
        qw.set_quota(b.port, [("client-id", "app")], consumer_byte_rate=5000)
        eq(qw.describe(b.port, [])[2], BEFORE, "quotas before")
        shim.fail_next("client-quotas")
        res = qw.alter(b.port, [([("client-id", "app")], [("producer_byte_rate", 1000, False),
                                                           ("consumer_byte_rate", 0, True)]),
                                ([("user", None)], [("request_percentage", 10, False)])])
        eq([e[0] for e in res], [KAFKA_STORAGE_ERROR] * 2, "errors when the file cannot be synced")
        check(not shim.fail_pending(), "the armed fsync failure happened")
        eq(qw.describe(b.port, [])[2], BEFORE, "quotas after the failed change")
        b.restart()
        eq(qw.describe(b.port, [])[2], BEFORE, "quotas after a restart")
    log("a quota change that cannot be made durable is refused and undone")


if __name__ == "__main__":
    main(test)
