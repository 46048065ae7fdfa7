#!/bin/sh
# Runs Debian's ZooKeeper server (package zookeeper, 3.8) in the foreground
# with a config of its own, for `make run-cluster` and the cluster tests
# (tests/lib/zookeeper.py): never the system service.
#
#   sh mk/zookeeper.sh DIR PORT
#
# DIR receives zoo.cfg, log4j.properties and data/ (kept across runs, so a
# restart on the same DIR keeps every znode and live session); the server
# listens on 127.0.0.1:PORT only, with no admin server and no JMX.  It logs
# to stderr.  The script execs java, so its pid is the server's: stop it with
# SIGTERM to that pid.
#
# tickTime 500 ms lets sessions be as short as 1 s (tests); maxSessionTimeout
# 60 s lets brokers keep Kafka's default zookeeper.session.timeout.ms.
set -e
[ $# -eq 2 ] || { echo "usage: $0 DIR PORT" >&2; exit 2; }
dir=$(cd "$1" 2>/dev/null && pwd) || { mkdir -p "$1" && dir=$(cd "$1" && pwd); }
port=$2
mkdir -p "$dir/data"
cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
autopurge.purgeInterval=0
CFG
cat >"$dir/log4j.properties" <<CFG
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.err
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} zookeeper %-5p %c{1}: %m%n
CFG
jars=/usr/share/java
for j in zookeeper.jar slf4j-log4j12.jar log4j-1.2.jar; do
	[ -f "$jars/$j" ] || { echo "$0: $jars/$j missing: install Debian's zookeeper package (make deps)" >&2; exit 1; }
done
# zookeeper.jar's manifest brings the rest of its class path (netty, jute, slf4j-api, ...)
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.jmx.log4j.disable=true \
	-Dlog4j.configuration="file:$dir/log4j.properties" \
	-cp "$jars/zookeeper.jar:$jars/slf4j-log4j12.jar:$jars/log4j-1.2.jar" \
	org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg"
