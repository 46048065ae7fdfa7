"""AlterUserScramCredentials when the credential file cannot be made
durable (LD_PRELOAD shim): the next fsync of scram-credentials(.tmp)
fails with EIO, the alteration answers KAFKA_STORAGE_ERROR for each user
and changes nothing (the old credential still describes and still logs
in, the new user does not exist); after a restart the file holds the
credentials from before the failed change."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, check, eq, free_port, log, main  # noqa: E402
import scramwire as sw  # noqa: E402
from syncshim import SyncShim  # noqa: E402

from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

KAFKA_STORAGE_ERROR = 56
BEFORE = [("ann", 0, None, [(sw.SHA256, 4096)])]


def can_login(port, user, password):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": password,
            "error_cb": lambda e: None}
    try:
        AdminClient(conf).list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def test():
    shim = SyncShim()
    sasl = free_port()
    with Broker(start=False, env=shim.env()) as b:
        b.overrides.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d" % (b.port, sasl),
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "connection.failed.authentication.delay.ms": "0"})
        b.start()
        eq(sw.alter(b.port, upsertions=[sw.upsertion("ann", sw.SHA256, "ann-pw")]), [("ann", 0, None)], "ann")
        shim.fail_next("scram-credentials")
        res = sw.alter(b.port, deletions=[("ann", sw.SHA256)], upsertions=[sw.upsertion("bo", sw.SHA256, "bo-pw")])
        eq(sorted((u, e) for u, e, _ in res), [("ann", KAFKA_STORAGE_ERROR), ("bo", KAFKA_STORAGE_ERROR)],
           "errors when the file cannot be synced")
        check(not shim.fail_pending(), "the armed fsync failure happened")
        eq(sw.describe(b.port)[1], BEFORE, "credentials after the failed change")
        check(can_login(sasl, "ann", "ann-pw") and not can_login(sasl, "bo", "bo-pw"), "logins after it")
        b.restart()
        eq(sw.describe(b.port)[1], BEFORE, "credentials after a restart")
        check(can_login(sasl, "ann", "ann-pw"), "ann logs in after the restart")
    log("a credential change that cannot be made durable is refused and undone")


if __name__ == "__main__":
    main(test)
