"""Every client in every secured mode: librdkafka (its C API,
6103-security-client-matrix.c), kcat, confluent-kafka, kafka-python and
kafkajs each produce 200 records (acks=all) and read them all back, in
order, over SSL, over SASL_SSL with SCRAM-SHA-512 and over SASL_PLAINTEXT
with PLAIN: three listeners of one broker, fifteen client x mode pairs,
each on its own topic. The broker logs each SASL client's authentication
as User:carol."""

import json
import itertools
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from gregor import REPO_ROOT, Broker, build_bin, check, eq, free_port, log, main, run  # noqa: E402
import tlscerts  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

N = 200
USER, PASSWORD = "carol", "carol-pw"
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-pw";'
MODES = ("ssl", "sasl_ssl_scram512", "sasl_plaintext_plain")
CLIENTS = ("librdkafka", "kcat", "confluent", "kafka_python", "kafkajs")


def values(tag):
    return [("%s-%06d" % (tag, i)).encode() for i in range(N)]


def rdkafka_conf(mode, certs):
    """librdkafka's (and so kcat's and confluent-kafka's) security settings for mode."""
    if mode == "ssl":
        c = {"security.protocol": "SSL"}
    elif mode == "sasl_ssl_scram512":
        c = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    else:
        c = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    if "ssl" in mode.split("_"):
        c["ssl.ca.location"] = certs["ca"]
    if mode.startswith("sasl"):
        c.update({"sasl.username": USER, "sasl.password": PASSWORD})
    return c


def run_librdkafka(boot, topic, conf):
    args = [build_bin("itest", "6103-security-client-matrix"), boot, topic, str(N)]
    args += ["%s=%s" % kv for kv in conf.items()]
    run(args, timeout_s=90)
    return values("c")


def run_kcat(boot, topic, conf):
    x = sum((["-X", "%s=%s" % kv] for kv in conf.items()), [])
    vals = values("kcat")
    run(["kcat", "-b", boot] + x + ["-P", "-t", topic, "-p", "0", "-X", "acks=all"],
        input_bytes=b"\n".join(vals) + b"\n", timeout_s=60)
    out = run(["kcat", "-b", boot] + x + ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", str(N), "-e",
                                          "-q"], timeout_s=60)
    eq(out.stdout.split(b"\n")[:N], vals, "kcat read back over %s" % topic)
    return vals


def run_confluent(boot, topic, conf):
    vals = values("ck")
    p = Producer(dict(conf, **{"bootstrap.servers": boot, "acks": "all"}))
    for v in vals:
        p.produce(topic, v, partition=0)
    eq(p.flush(30), 0, "confluent-kafka undelivered on %s" % topic)
    c = Consumer(dict(conf, **{"bootstrap.servers": boot, "group.id": "g-" + topic}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
        if len(got) >= N:
            break
    c.close()
    eq(got, vals, "confluent-kafka read back over %s" % topic)
    return vals


def run_kafka_python(boot, topic, mode, certs):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP
    kw = {"bootstrap_servers": boot}
    if mode == "ssl":
        kw.update(security_protocol="SSL", ssl_cafile=certs["ca"])
    elif mode == "sasl_ssl_scram512":
        kw.update(security_protocol="SASL_SSL", ssl_cafile=certs["ca"], sasl_mechanism="SCRAM-SHA-512",
                  sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    else:
        kw.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username=USER,
                  sasl_plain_password=PASSWORD)
    vals = values("kp")
    kp = KafkaProducer(acks="all", **kw)
    for v in vals:
        kp.send(topic, v, partition=0)
    kp.flush(30)
    kp.close()
    kc = KafkaConsumer(auto_offset_reset="earliest", consumer_timeout_ms=10000, **kw)
    kc.assign([KTP(topic, 0)])
    got = [m.value for m in itertools.islice(kc, len(vals))]  # or fewer after a stall
    kc.close()
    eq(got, vals, "kafka-python read back over %s" % topic)
    return vals


KAFKAJS = r"""
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const a = JSON.parse(process.argv[1])
async function go () {
  const kafka = new Kafka({ clientId: 'itest-6103', brokers: [a.boot], logLevel: logLevel.NOTHING,
    ssl: a.ca ? { ca: [fs.readFileSync(a.ca)] } : false,
    sasl: a.mechanism ? { mechanism: a.mechanism, username: a.user, password: a.password } : undefined,
    connectionTimeout: 5000, requestTimeout: 15000, retry: { retries: 3 } })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: a.topic, acks: -1, messages: a.values.map(value => ({ value, partition: 0 })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'g-' + a.topic, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic: a.topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('kafkajs got ' + got.length)), 30000)
    consumer.run({ eachMessage: async ({ message }) => {
      got.push(message.value.toString())
      if (got.length === a.values.length) { clearTimeout(timer); resolve() }
    } }).catch(reject)
  })
  await consumer.disconnect()
  if (JSON.stringify(got) !== JSON.stringify(a.values)) throw new Error('kafkajs read back other records')
}
go().then(() => process.exit(0), e => { console.error(e); process.exit(1) })
"""


def run_kafkajs(boot, topic, mode, certs):
    vals = values("js")
    a = {"boot": boot.replace("127.0.0.1", "localhost"), "topic": topic, "values": [v.decode() for v in vals],
         "ca": certs["ca"] if "ssl" in mode else None}
    if mode.startswith("sasl"):
        a.update(mechanism="scram-sha-512" if "scram" in mode else "plain", user=USER, password=PASSWORD)
    env = dict(os.environ, NODE_PATH=os.path.join(REPO_ROOT, "tests", "js", "node_modules"))
    p = subprocess.run(["node", "-e", KAFKAJS, json.dumps(a)], env=env, capture_output=True, timeout=120)
    check(p.returncode == 0, "kafkajs over %s: %s" % (mode, p.stderr.decode(errors="replace")[-2000:]))
    return vals


def test():
    with Broker(start=False) as b:
        certs = tlscerts.make(b.tmp)
        ports = {m: free_port() for m in MODES}
        b.overrides.update({
            "listeners": "PLAINTEXT://%s,SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                         % (b.bootstrap, ports["ssl"], ports["sasl_ssl_scram512"], ports["sasl_plaintext_plain"]),
            "ssl.keystore.location": certs["server"],
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "sasl.scram.users": "%s:%s" % (USER, PASSWORD), "num.partitions": "1"})
        b.start()
        topics = ["m-%s-%s" % (c, m) for m in MODES for c in CLIENTS]
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic(t.replace("_", "-"), 1, 1) for t in topics]).values():
            f.result()
        done = []
        for mode in MODES:
            boot = "127.0.0.1:%d" % ports[mode]
            conf = rdkafka_conf(mode, certs)
            for client in CLIENTS:
                topic = ("m-%s-%s" % (client, mode)).replace("_", "-")
                if client == "librdkafka":
                    run_librdkafka(boot, topic, conf)
                elif client == "kcat":
                    run_kcat(boot, topic, conf)
                elif client == "confluent":
                    run_confluent(boot, topic, conf)
                elif client == "kafka_python":
                    run_kafka_python(boot, topic, mode, certs)
                else:
                    run_kafkajs(boot, topic, mode, certs)
                log("%s over %s: %d records produced and read back" % (client, mode, N))
                done.append((client, mode))
        eq(len(done), len(CLIENTS) * len(MODES), "client x mode pairs")
        # each pair's records are on the broker, in its own topic, whatever client read them
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-check"})
        for t in topics:
            lo, hi = c.get_watermark_offsets(TopicPartition(t.replace("_", "-"), 0), timeout=10)
            eq((lo, hi), (0, N), "offsets of %s" % t)
        c.close()
        check("authenticated as User:carol (SASL/SCRAM-SHA-512)" in b.log_text(), "SCRAM-SHA-512 logins logged")
        check("authenticated as User:carol (SASL/PLAIN)" in b.log_text(), "PLAIN logins logged")


if __name__ == "__main__":
    main(test)
