# Shell helpers for Gregor integration tests (bash). Source it:
#
#   . "$(dirname "$0")/../lib/broker.sh"
#   broker_start --override num.partitions=1   # sets BROKER_ADDR, BROKER_PID, BROKER_PORT,
#                                              #      BROKER_DIR (temp), BROKER_DATA, BROKER_LOG
#   kcat -b "$BROKER_ADDR" -L
#   broker_restart | broker_kill9 ; broker_start_again
#   broker_stop                                # SIGTERM + bounded wait; fails if it hangs
#   it_pass                                    # exits 0 (cleanup runs from the EXIT trap)
#
# One broker per test script. Only $BROKER_PID is ever signalled. On a failing
# exit (any non-zero status, `fail "why"`, or the runner's timeout) the EXIT
# trap prints the broker log and keeps the temp dir; on success it is removed.
#
# Environment: GREGOR_BIN (default $BUILD/bin/gregor under the repo root),
# BUILD (default build), GREGOR_KEEP=1 keeps temp dirs.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${BUILD:=build}"
if [ -z "${GREGOR_BIN:-}" ]; then GREGOR_BIN="$BUILD/bin/gregor"; fi
case "$GREGOR_BIN" in /*) ;; *) GREGOR_BIN="$REPO_ROOT/$GREGOR_BIN" ;; esac
PYTHON=/usr/bin/python3
BROKER_START_TIMEOUT=${BROKER_START_TIMEOUT:-10}
BROKER_STOP_TIMEOUT=${BROKER_STOP_TIMEOUT:-10}
BROKER_PID=""
BROKER_DIR=""
BROKER_ARGS=()

log() { echo "[$(date +%H:%M:%S)] $*"; }

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect_eq GOT WANT WHAT
expect_eq() {
	if [ "$1" != "$2" ]; then
		fail "$3: got '$1', want '$2'"
	fi
}

free_port() {
	"$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

port_accepts() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

broker_dump_log() {
	if [ -n "$BROKER_LOG" ] && [ -f "$BROKER_LOG" ]; then
		echo "--- broker log $BROKER_LOG (last 200 lines) ---" >&2
		tail -n 200 "$BROKER_LOG" >&2
		echo "--- end of broker log ---" >&2
	fi
}

_broker_on_exit() {
	local rc=$?
	if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
		kill -TERM "$BROKER_PID" 2>/dev/null
		local i=0
		while kill -0 "$BROKER_PID" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
	fi
	if [ $rc -ne 0 ]; then
		broker_dump_log
		[ -n "$BROKER_DIR" ] && echo "gregor-itest: kept $BROKER_DIR" >&2
	elif [ -n "$BROKER_DIR" ]; then
		if [ "${GREGOR_KEEP:-}" = 1 ]; then echo "gregor-itest: kept $BROKER_DIR" >&2; else rm -rf "$BROKER_DIR"; fi
	fi
	exit $rc
}
trap _broker_on_exit EXIT
trap 'echo "gregor-itest: got SIGTERM (timeout?)" >&2; exit 124' TERM
trap 'exit 130' INT

# broker_start [--override k=v ...] [--prop k=v ...]
# First call makes the temp dir, port and properties file; later calls (after
# broker_stop / broker_kill9) reuse them, so data and port survive a restart.
broker_start() {
	if [ -z "$BROKER_DIR" ]; then
		BROKER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gregor-itest-$(basename "$0" .sh)-XXXXXX") || fail "mktemp"
		BROKER_PORT=$(free_port)
		BROKER_ADDR="127.0.0.1:$BROKER_PORT"
		BROKER_DATA="$BROKER_DIR/data"
		BROKER_LOG="$BROKER_DIR/broker.log"
		BROKER_PROPS="$BROKER_DIR/server.properties"
		mkdir -p "$BROKER_DATA"
		{
			echo "# written by tests/lib/broker.sh"
			echo "listeners=PLAINTEXT://$BROKER_ADDR"
			echo "log.dirs=$BROKER_DATA"
		} >"$BROKER_PROPS"
		BROKER_ARGS=()
		while [ $# -gt 0 ]; do
			case "$1" in
			--prop) echo "$2" >>"$BROKER_PROPS"; shift 2 ;;
			--override) BROKER_ARGS+=(--override "$2"); shift 2 ;;
			*) fail "broker_start: unknown argument $1" ;;
			esac
		done
	fi
	[ -x "$GREGOR_BIN" ] || fail "broker binary $GREGOR_BIN missing (run make build/bin/gregor or set GREGOR_BIN)"
	echo "=== gregor-itest: start: $GREGOR_BIN $BROKER_PROPS ${BROKER_ARGS[*]}" >>"$BROKER_LOG"
	(cd "$BROKER_DIR" && exec "$GREGOR_BIN" "$BROKER_PROPS" "${BROKER_ARGS[@]}" </dev/null >>"$BROKER_LOG" 2>&1) &
	BROKER_PID=$!
	local deadline=$(($(date +%s%N) / 1000000 + BROKER_START_TIMEOUT * 1000))
	while :; do
		if ! kill -0 "$BROKER_PID" 2>/dev/null; then
			wait "$BROKER_PID"
			local rc=$?
			BROKER_PID=""
			fail "broker exited with status $rc during start-up"
		fi
		port_accepts "$BROKER_PORT" && break
		[ $(($(date +%s%N) / 1000000)) -ge $deadline ] && fail "broker not accepting on $BROKER_ADDR after ${BROKER_START_TIMEOUT}s"
		sleep 0.05
	done
	log "broker pid $BROKER_PID on $BROKER_ADDR"
}

# broker_stop: SIGTERM, wait up to BROKER_STOP_TIMEOUT s; fails unless exit status 0.
broker_stop() {
	[ -n "$BROKER_PID" ] || return 0
	kill -TERM "$BROKER_PID" 2>/dev/null
	local i=0
	while kill -0 "$BROKER_PID" 2>/dev/null && [ $i -lt $((BROKER_STOP_TIMEOUT * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$BROKER_PID" 2>/dev/null; then
		kill -KILL "$BROKER_PID" 2>/dev/null
		wait "$BROKER_PID" 2>/dev/null
		BROKER_PID=""
		fail "broker did not exit within ${BROKER_STOP_TIMEOUT}s of SIGTERM"
	fi
	wait "$BROKER_PID"
	local rc=$?
	BROKER_PID=""
	echo "=== gregor-itest: stopped, exit status $rc" >>"$BROKER_LOG"
	[ $rc -eq 0 ] || fail "broker exit status $rc after SIGTERM (want 0)"
}

# broker_kill9: SIGKILL (simulated crash) and reap.
broker_kill9() {
	[ -n "$BROKER_PID" ] || return 0
	kill -KILL "$BROKER_PID" 2>/dev/null
	wait "$BROKER_PID" 2>/dev/null
	BROKER_PID=""
	echo "=== gregor-itest: killed with SIGKILL" >>"$BROKER_LOG"
}

broker_restart() {
	broker_stop
	broker_start
}

broker_alive() {
	[ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null
}

it_pass() {
	log "ok"
	exit 0
}

# ---- Go client programs (tests/go/NAME/main.go) ----

# go_client NAME: builds $BUILD/bin/go/NAME with make (fails the test with
# the build output if that fails) and sets $GO_CLIENT to its absolute path.
go_client() {
	local blog="${TMPDIR:-/tmp}/$1-build-$$.log"
	case "$BUILD" in /*) GO_CLIENT="$BUILD/bin/go/$1" ;; *) GO_CLIENT="$REPO_ROOT/$BUILD/bin/go/$1" ;; esac
	make --no-print-directory -C "$REPO_ROOT" BUILD="$BUILD" "$BUILD/bin/go/$1" >"$blog" 2>&1 ||
		{ cat "$blog"; rm -f "$blog"; fail "building $GO_CLIENT"; }
	rm -f "$blog"
}

# ---- command-line tools under test ----

# tool_init BINARY: $TOOL is $REPO_ROOT/$BUILD/bin/BINARY (must exist), $OUT a
# temporary directory removed at exit.
tool_init() {
	TOOL="$REPO_ROOT/$BUILD/bin/$1"
	[ -x "$TOOL" ] || fail "$TOOL missing (make $BUILD/bin/$1)"
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/gregor-tool-XXXXXX")
	trap 'rm -rf "$OUT"; _broker_on_exit' EXIT
}

# tool_run ARGS... : runs $TOOL (bounded); stdout in $OUT/o, stderr in $OUT/e, status in $RC
tool_run() {
	timeout 120 "$TOOL" "$@" >"$OUT/o" 2>"$OUT/e"
	RC=$?
}

# usage_error WHAT ARGS... : expects exit 2 and the tool's usage text on stderr
usage_error() {
	local what=$1
	shift
	tool_run "$@"
	expect_eq "$RC" 2 "exit status for $what"
	grep -q "^Usage: $(basename "$TOOL")" "$OUT/e" || fail "$what: no usage on stderr: $(cat "$OUT/e")"
}

# usage_says TEXT ARGS... : "$T ARGS" (the tool of a script that keeps it in $T, its output in the
# file $out) exits 2 with TEXT and the tool's usage on stderr
usage_says() {
	local want=$1
	shift
	"$T" "$@" >"$out" 2>&1
	expect_eq "$?" 2 "exit status of: $*"
	grep -qF -- "$want" "$out" || fail "'$*': want '$want', got: $(head -n 1 "$out")"
	grep -q "^Usage: $(basename "$T")" "$out" || fail "'$*': no usage"
}
