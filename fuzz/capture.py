#!/usr/bin/python3
"""fuzz/capture.py - seeds the fuzz corpora from real client traffic.

Starts a broker (build/bin/gregor, or GREGOR_BIN) whose advertised address
is a tiny recording proxy, runs real clients through the proxy (kcat,
confluent_kafka producer/consumer/admin, kafka-python), and writes:

  fuzz/corpus/fuzz_request/<api>-v<ver>-<n>   whole request frames (size prefix included)
  fuzz/corpus/fuzz_api/<api>-v<ver>-<n>       key index, version index, body (fuzz_api.c's format)
  fuzz/corpus/fuzz_records/<n>                 0x00 + segment .log bytes (batches as stored)
  fuzz/corpus/fuzz_log/<n>                     a partition directory in fuzz_log.c's format

Usage: /usr/bin/python3 fuzz/capture.py   (takes ~10 s; loopback only)
"""
import os, socket, struct, subprocess, sys, threading, time, glob, hashlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from gregor import Broker, free_port  # noqa: E402

OUT = os.path.join(ROOT, "fuzz", "corpus")
frames = []
lock = threading.Lock()


def pump(src, dst, record):
    buf = b""
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            dst.sendall(d)
            if record:
                buf += d
                while len(buf) >= 4:
                    (n,) = struct.unpack(">i", buf[:4])
                    if n < 0 or len(buf) < 4 + n:
                        break
                    with lock:
                        frames.append(buf[:4 + n])
                    buf = buf[4 + n:]
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy(lsock, upstream_port, stop):
    lsock.settimeout(0.2)
    while not stop.is_set():
        try:
            c, _ = lsock.accept()
        except socket.timeout:
            continue
        u = socket.create_connection(("127.0.0.1", upstream_port))
        threading.Thread(target=pump, args=(c, u, True), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, False), daemon=True).start()


def clients(addr):
    from confluent_kafka import Producer, Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource
    a = AdminClient({"bootstrap.servers": addr})
    for f in a.create_topics([NewTopic("cap", 2, 1), NewTopic("cap-lat", 1, 1)]).values():
        f.result(10)
    try:
        for f in a.describe_configs([ConfigResource("topic", "cap")]).values():
            f.result(10)
    except Exception:
        pass
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = Producer({"bootstrap.servers": addr, "compression.codec": codec, "linger.ms": 5,
                      "enable.idempotence": codec == "none"})
        for i in range(30):
            p.produce("cap", key=b"k%d" % i, value=b"v" * (i * 7), partition=i % 2,
                      headers=[("h", b"x")] if i % 3 == 0 else None)
        p.flush(10)
    c = Consumer({"bootstrap.servers": addr, "group.id": "capg", "enable.auto.commit": False})
    c.assign([TopicPartition("cap", 0, 0), TopicPartition("cap", 1, 0)])
    got = 0
    deadline = time.time() + 5
    while got < 100 and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
    try:
        c.offsets_for_times([TopicPartition("cap", 0, 0)], 5)
        c.get_watermark_offsets(TopicPartition("cap", 0), 5)
    except Exception:
        pass
    c.close()
    subprocess.run(["kcat", "-b", addr, "-L"], capture_output=True, timeout=20)
    subprocess.run(["kcat", "-b", addr, "-P", "-t", "cap-lat"], input=b"a\nb\nc\n",
                   capture_output=True, timeout=20)
    subprocess.run(["kcat", "-b", addr, "-C", "-t", "cap-lat", "-e", "-o", "beginning"],
                   capture_output=True, timeout=20)
    try:
        from kafka import KafkaProducer, KafkaAdminClient
        kp = KafkaProducer(bootstrap_servers=addr)
        kp.send("cap-lat", b"kafka-python").get(10)
        kp.close()
        KafkaAdminClient(bootstrap_servers=addr).list_topics()
    except Exception as e:
        print("kafka-python: %s" % e)
    try:
        a.delete_topics(["cap-lat"])["cap-lat"].result(10)
    except Exception:
        pass


def save(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    pport = free_port()
    with Broker(overrides={"advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % pport,
                           "num.partitions": "2"}, name="fuzz-capture") as b:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", pport))
        ls.listen(64)
        stop = threading.Event()
        t = threading.Thread(target=proxy, args=(ls, b.port, stop), daemon=True)
        t.start()
        clients("127.0.0.1:%d" % pport)
        stop.set()
        t.join()
        b.stop()
        seen = set()
        import kwire  # noqa: F401  (just to fail early if tests/lib moved)
        sys.path.insert(0, os.path.join(ROOT, "build", "gen"))
        keys = apis_in_table()
        for fr in frames:
            h = hashlib.sha1(fr).hexdigest()[:12]
            if h in seen:
                continue
            seen.add(h)
            key, ver = struct.unpack(">hh", fr[4:8])
            save("fuzz_request", "%d-v%d-%s" % (key, ver, h), fr)
            if key in keys:
                # body after header: v1 header = 8 + 2 + client_id; flexible adds tagged fields
                (cl,) = struct.unpack(">h", fr[12:14])
                body = fr[14 + max(cl, 0):]
                if keys[key][2] <= ver:
                    body = body[1:]  # empty tagged-field section (what clients send)
                lo = keys[key][0]
                save("fuzz_api", "%d-v%d-%s" % (key, ver, h),
                     bytes([keys[key][3], ver - lo]) + body)
        n = 0
        for log in sorted(glob.glob(os.path.join(b.data_dir, "*", "*.log"))):
            data = open(log, "rb").read()
            if data:
                save("fuzz_records", "seg-%d" % n, b"\x00" + data[:262144])
                pdir = os.path.dirname(log)
                blob = bytes([4])
                for kind, suffix in ((0, ".log"), (1, ".index"), (2, ".timeindex")):
                    p = log[:-4] + suffix
                    if os.path.exists(p):
                        d = open(p, "rb").read()[:65536]
                        blob += bytes([kind]) + len(d).to_bytes(3, "big") + d
                ep = os.path.join(pdir, "leader-epoch-checkpoint")
                if os.path.exists(ep):
                    d = open(ep, "rb").read()
                    blob += bytes([6]) + len(d).to_bytes(3, "big") + d
                for snap in glob.glob(os.path.join(pdir, "*.snapshot"))[:1]:
                    d = open(snap, "rb").read()
                    blob += bytes([8]) + len(d).to_bytes(3, "big") + d
                save("fuzz_log", "part-%d" % n, blob)
                n += 1
        print("captured %d frames (%d distinct), %d segments" % (len(frames), len(seen), n))


def apis_in_table():
    """ApiKey -> (min, max, flex_min, index in fuzz_api's key list) from the generated code."""
    import re
    h = open(os.path.join(ROOT, "build", "gen", "proto_msgs.h")).read()
    c = open(os.path.join(ROOT, "build", "gen", "proto_msgs.c")).read()
    ids = {m.group(1): int(m.group(2)) for m in re.finditer(r"\tAPI_(\w+) = (\d+),", h)}
    out = {}
    for m in re.finditer(r"\[API_(\w+)\] = \{\s*\.name = \"\w+\",\s*\.min = (\d+),\s*"
                         r"\.max = (\d+),\s*\.flex_min = (\d+|INT16_MAX)", c):
        flex = 32767 if m.group(4) == "INT16_MAX" else int(m.group(4))
        out[ids[m.group(1)]] = (int(m.group(2)), int(m.group(3)), flex)
    for i, k in enumerate(sorted(out)):
        out[k] = out[k] + (i,)
    return out


if __name__ == "__main__":
    main()
