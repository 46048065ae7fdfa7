#!/bin/bash
# make run-cluster: one ZooKeeper (Debian's, mk/zookeeper.sh) and three
# brokers (config/cluster/broker{1,2,3}.properties) on 127.0.0.1:9092-9094,
# everything under ./data-cluster/.  Prints the bootstrap list; Ctrl-C stops
# the brokers (cleanly, SIGTERM) and then ZooKeeper.
#
#   bash mk/run-cluster.sh [path/to/gregor]
#
# ZooKeeper listens on $ZK_PORT, else 2181 when free, else a free port.
set -u
cd "$(dirname "$0")/.." || exit 2
BROKER=${1:-build/bin/gregor}
DATA=./data-cluster
set -m # each child in its own process group: Ctrl-C reaches this script only

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
zk_ok() { # ZooKeeper's "ruok" four-letter word
	local r=""
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf ruok >&3
	read -r -t 2 r <&3
	exec 3<&- 3>&-
	[ "$r" = imok ]
}

if [ -z "${ZK_PORT:-}" ]; then
	ZK_PORT=2181
	port_busy $ZK_PORT && ZK_PORT=$(free_port)
fi
for p in 9092 9093 9094; do
	port_busy $p && { echo "run-cluster: 127.0.0.1:$p is in use (make run?)" >&2; exit 1; }
done
mkdir -p "$DATA"

broker_pids=()
zk_pid=""
stop_all() {
	trap '' INT TERM
	echo
	echo "run-cluster: stopping the brokers, then zookeeper"
	for p in "${broker_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${broker_pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "$zk_pid" ] && kill -TERM "$zk_pid" 2>/dev/null && wait "$zk_pid" 2>/dev/null
	exit 0
}
trap stop_all INT TERM

sh mk/zookeeper.sh "$DATA/zookeeper" "$ZK_PORT" 2>>"$DATA/zookeeper.log" &
zk_pid=$!
echo "run-cluster: zookeeper on 127.0.0.1:$ZK_PORT (pid $zk_pid, log $DATA/zookeeper.log)"
for _ in $(seq 1 300); do
	zk_ok "$ZK_PORT" 2>/dev/null && break
	kill -0 "$zk_pid" 2>/dev/null || { echo "run-cluster: zookeeper failed, see $DATA/zookeeper.log" >&2; exit 1; }
	sleep 0.1
done
zk_ok "$ZK_PORT" 2>/dev/null || { echo "run-cluster: zookeeper did not come up" >&2; stop_all; }

for i in 1 2 3; do
	"$BROKER" "config/cluster/broker$i.properties" --override "zookeeper.connect=127.0.0.1:$ZK_PORT" \
		> >(sed -u "s/^/[broker $i] /") 2>&1 &
	broker_pids+=($!)
done
echo "run-cluster: bootstrap servers 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094 (Ctrl-C stops everything)"
wait "${broker_pids[@]}"
echo "run-cluster: the brokers exited" >&2
stop_all
