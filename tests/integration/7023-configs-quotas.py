"""gregor-configs --entity-type clients|users: kafka-configs.sh's client quota commands.

- --alter --add-config on a named client-id, the <default> client-id
  (--entity-default) and a user print Kafka's "Completed updating ..."
  lines; --describe prints "Quota configs for client-id 'app' are
  producer_byte_rate=1048576.0, ..." (named, default, every client, users)
  and what the raw DescribeClientQuotas answers agrees.
- --delete-config removes one key and leaves the rest.
- A negative value and an unknown key fail with exit status 1 and the
  broker's INVALID_REQUEST; a value that is not a number fails before
  anything is sent.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, log, main, run  # noqa: E402
import quotawire as qw  # noqa: E402


def test():
    tool = build_bin("gregor-configs")
    with Broker() as b:
        def cfg(*args, rc=0):
            r = run([tool, "--bootstrap-server", b.bootstrap] + list(args), check_rc=False)
            eq(r.returncode, rc, "exit status of %s (stderr %r)" % (" ".join(args), r.stderr))
            return r.stdout.decode(), r.stderr.decode()

        out, _ = cfg("--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config",
                     "producer_byte_rate=1048576,consumer_byte_rate=2000")
        eq(out, "Completed updating config for client app.\n", "alter output")
        out, _ = cfg("--entity-type", "clients", "--entity-default", "--alter", "--add-config", "request_percentage=50")
        eq(out, "Completed updating default config for clients in the cluster.\n", "alter default output")
        out, _ = cfg("--entity-type", "users", "--entity-name", "ANONYMOUS", "--alter", "--add-config",
                     "producer_byte_rate=10")
        eq(out, "Completed updating config for user ANONYMOUS.\n", "alter user output")
        out, _ = cfg("--entity-type", "clients", "--entity-name", "app", "--describe")
        eq(out, "Quota configs for client-id 'app' are producer_byte_rate=1048576.0, consumer_byte_rate=2000.0\n",
           "describe one client")
        out, _ = cfg("--entity-type", "clients", "--entity-default", "--describe")
        eq(out, "Quota configs for the default client-id are request_percentage=50.0\n", "describe default")
        out, _ = cfg("--entity-type", "users", "--describe")
        eq(out, "Quota configs for user-principal 'ANONYMOUS' are producer_byte_rate=10.0\n", "describe users")
        _, _, got = qw.describe(b.port, [])
        eq(got, {(("client-id", "app"),): {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2000.0},
                 (("client-id", None),): {"request_percentage": 50.0},
                 (("user", "ANONYMOUS"),): {"producer_byte_rate": 10.0}}, "raw DescribeClientQuotas")
        cfg("--entity-type", "clients", "--entity-name", "app", "--alter", "--delete-config", "consumer_byte_rate")
        out, _ = cfg("--entity-type", "clients", "--describe")
        eq(out, "Quota configs for client-id 'app' are producer_byte_rate=1048576.0\n", "after --delete-config")
        _, err = cfg("--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config",
                     "producer_byte_rate=-1", rc=1)
        check("INVALID_REQUEST" in err, "negative value refused: %r" % err)
        _, err = cfg("--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config", "bogus=1", rc=1)
        check("INVALID_REQUEST" in err and "unknown quota key" in err, "unknown key refused: %r" % err)
        _, err = cfg("--entity-type", "clients", "--entity-name", "app", "--alter", "--add-config",
                     "producer_byte_rate=lots", rc=1)
        check("not a number" in err, "non-numeric value refused: %r" % err)
        out, _ = cfg("--entity-type", "clients", "--entity-name", "app", "--describe")
        eq(out, "Quota configs for client-id 'app' are producer_byte_rate=1048576.0\n", "unchanged by refusals")
        log("gregor-configs sets, describes and removes client quotas")


if __name__ == "__main__":
    main(test)
