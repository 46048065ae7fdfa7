"""Every gregor tool reaches a broker that only has SASL listeners through
a Kafka client properties file (--command-config, --producer.config,
--consumer.config), written with the Java client's names: SASL_PLAINTEXT
with SCRAM-SHA-256 and sasl.jaas.config, and SASL_SSL with PLAIN and
ssl.truststore.location (PEM). That includes the calls the tools make
over their own connections (DescribeLogDirs, ListTransactions,
AlterUserScramCredentials, DescribeClientQuotas), which authenticate with
the same settings. Without the file, or with a wrong password, a tool
fails with exit status 1 and says why (a wrong password at once, not at
the 10 s timeout)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import Broker, build_bin, check, eq, free_port, main, run  # noqa: E402
import tlscerts  # noqa: E402

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw";'


def props(path, lines):
    with open(path, "w") as f:
        f.write("# a Kafka client properties file\n" + "\n".join(lines) + "\n")
    return path


def tool(name, *args, stdin=None, ok=True):
    r = run([build_bin(name)] + list(args), timeout_s=60, input_bytes=stdin, check_rc=False)
    if ok:
        eq(r.returncode, 0, "%s %s: stderr %s" % (name, " ".join(args), r.stderr.decode(errors="replace")))
    return r


def every_tool(boot, cfg, topic):
    common = ["--bootstrap-server", boot, "--command-config", cfg]
    tool("gregor-topics", *common, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    check(topic.encode() in tool("gregor-topics", *common, "--list").stdout, "topic listed")
    tool("gregor-console-producer", "--bootstrap-server", boot, "--topic", topic, "--producer.config", cfg,
         stdin=b"".join(b"line-%d\n" % i for i in range(10)))
    r = tool("gregor-console-consumer", *common, "--topic", topic, "--from-beginning", "--max-messages", "10",
             "--timeout-ms", "20000")
    eq(sorted(r.stdout.split()), sorted(b"line-%d" % i for i in range(10)), "console consumer over SASL")
    tool("gregor-producer-perf-test", "--topic", topic, "--num-records", "200", "--record-size", "50",
         "--throughput", "-1", "--producer.config", cfg, "--producer-props", "bootstrap.servers=" + boot)
    r = tool("gregor-consumer-perf-test", "--bootstrap-server", boot, "--consumer.config", cfg, "--topic", topic,
             "--messages", "210", "--timeout", "20000")
    check(b"210" in r.stdout or b"data.consumed" in r.stdout, "consumer perf test output: %r" % r.stdout)
    tool("gregor-consumer-groups", *common, "--list")
    r = tool("gregor-log-dirs", *common, "--describe")
    check(topic.encode() in r.stdout, "log dirs over SASL: %r" % r.stdout[-300:])
    r = tool("gregor-transactions", *common, "describe-producers", "--topic", topic, "--partition", "0")
    check(b"ProducerId" in r.stdout, "producers described: %r" % r.stdout)
    user = "u-" + topic
    tool("gregor-configs", *common, "--entity-type", "users", "--entity-name", user, "--alter", "--add-config",
         "SCRAM-SHA-512=[password=%s-pw],consumer_byte_rate=1048576" % user)
    r = tool("gregor-configs", *common, "--entity-type", "users", "--entity-name", user, "--describe")
    check(("SCRAM credential configs for user-principal '%s' are SCRAM-SHA-512=iterations=4096" % user).encode()
          in r.stdout and b"consumer_byte_rate=1048576" in r.stdout, "users described: %r" % r.stdout)


def test():
    sslp = free_port()
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        b.overrides.update({
            "listeners": "SASL_PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d" % (b.port, sslp),
            "ssl.keystore.location": certs["server"],
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.scram.users": "admin:admin-pw",
            "sasl.jaas.config": JAAS,
            "num.partitions": "1",
            "connection.failed.authentication.delay.ms": "0",
        })
        b.start()
        scram = props(os.path.join(b.tmp, "scram.properties"), [
            "security.protocol=SASL_PLAINTEXT",
            "sasl.mechanism=SCRAM-SHA-256",
            "ssl.endpoint.identification.algorithm=",
            'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="admin" password="admin-pw";'])
        tls = props(os.path.join(b.tmp, "ssl.properties"), [
            "security.protocol = SASL_SSL",
            "sasl.mechanism: PLAIN",
            'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="admin" password="admin-pw";',
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=" + certs["ca"]])
        every_tool(b.bootstrap, scram, "cc-scram")
        every_tool("127.0.0.1:%d" % sslp, tls, "cc-ssl")
        r = tool("gregor-topics", "--bootstrap-server", b.bootstrap, "--list", ok=False)
        eq(r.returncode, 1, "no properties file: exit status")
        bad = props(os.path.join(b.tmp, "bad.properties"), [
            "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
            'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="admin" password="nope";'])
        r = tool("gregor-topics", "--bootstrap-server", b.bootstrap, "--command-config", bad, "--list", ok=False)
        eq(r.returncode, 1, "wrong password: exit status")
        check(b"authentication to %s failed" % b.bootstrap.encode() in r.stderr,
              "a refused password ends the wait at once: %r" % r.stderr)
        check(b"Authentication failed" in r.stderr or b"AUTHENTICATION" in r.stderr.upper(),
              "wrong password reported: %r" % r.stderr)
        jks = props(os.path.join(b.tmp, "jks.properties"), ["ssl.truststore.type=JKS"])
        r = tool("gregor-topics", "--bootstrap-server", b.bootstrap, "--command-config", jks, "--list", ok=False)
        check(r.returncode == 2 and b"only PEM" in r.stderr, "JKS refused: %r" % r.stderr)


if __name__ == "__main__":
    main(test)
