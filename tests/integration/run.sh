#!/bin/sh
# Runs Gregor's integration tests: every tests/integration/NNNN-*.{py,sh,js,c}
# in name order, each under a timeout, each starting its own broker on a free
# port with a temp data dir (tests/lib/). See tests/README.md.
#
#   sh tests/integration/run.sh                 # all tests
#   sh tests/integration/run.sh 0004 9001       # tests whose name starts with (or equals) an argument
#
# Output: one line per test, `PASS name (Ns)`, `FAIL name (Ns)` followed by the
# test's output, or `SKIP name (reason)`; then `N skipped` if any were skipped,
# then for each failed test the lines that say why, `failed: names`, and as
# the last line exactly `N passed, N failed`. Exit status 1 if any failed.
#
# Environment:
#   BUILD          build dir (default build): broker at $BUILD/bin/gregor, C tests at $BUILD/bin/itest/
#   GREGOR_BIN     broker binary (default $BUILD/bin/gregor)
#   ITEST_TIMEOUT  seconds per test (default 300)
#   ITEST_VERBOSE  =1 to print every test's output, not only failures'
#   ITEST_JOBS     tests run at once (default 1; `make test` uses 2). Each test
#                  has its own broker, port and temp dir, so they do not meet;
#                  a test whose file says "itest: alone" runs by itself.
#
# Kinds of test file:
#   NNNN-x.py   /usr/bin/python3 (PYTHONPATH has tests/lib: `import gregor`)
#   NNNN-x.sh   bash (source tests/lib/broker.sh)
#   NNNN-x.js   node (NODE_PATH=tests/js/node_modules: `require('kafkajs')`; tests/lib/gregor.js)
#   NNNN-x.c    built by the Makefile into $BUILD/bin/itest/NNNN-x. If a driver
#               NNNN-x.sh or NNNN-x.py exists, only the driver is run (it starts
#               the broker and runs the binary, e.g. several times with arguments);
#               otherwise tests/lib/run-c-test.sh starts a broker and runs the
#               binary once with the bootstrap address as argv[1].
# Exit status 77 from a test means SKIP (automake convention).

LC_ALL=C
export LC_ALL
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
: "${BUILD:=build}"
: "${GREGOR_BIN:=$BUILD/bin/gregor}"
case "$GREGOR_BIN" in /*) ;; *) GREGOR_BIN="$ROOT/$GREGOR_BIN" ;; esac
: "${ITEST_TIMEOUT:=300}"
: "${ITEST_JOBS:=1}"
ARGS=$*
export BUILD GREGOR_BIN
PYTHONPATH="$ROOT/tests/lib${PYTHONPATH:+:$PYTHONPATH}"
NODE_PATH="$ROOT/tests/js/node_modules${NODE_PATH:+:$NODE_PATH}"
export PYTHONPATH NODE_PATH

OUT=$(mktemp -d "${TMPDIR:-/tmp}/gregor-itest-run-XXXXXX") || exit 2
trap 'rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM

[ -x "$GREGOR_BIN" ] || echo "warning: broker binary $GREGOR_BIN is missing; tests will fail" >&2

passed=0
failed=0
skipped=0
failed_names=""

selected() {
	[ $# -eq 1 ] && return 0
	n=$1
	shift
	for pat in "$@"; do
		case "$n" in "$pat" | "$pat"*) return 0 ;; esac
	done
	return 1
}

now() { date +%s; }

# The lines of a failed test's output that say why it failed (a traceback's
# last line, an assertion, a timeout), repeated after the summary so a long
# output cut short still shows them.
why() { # name outfile
	echo "$1:"
	grep -E '^[A-Za-z_.]*(Error|Exception)\b|^FAILED after|^not ok|^FAIL|[Ee]rror:|timed out|result: FAIL|not done as asked|commands failed' "$2" |
		grep -v -e '^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]' -e '^EndOfStreamException' -e '^java\.' -e '^ *raise ' | tail -n 8 | cut -c1-400 | sed 's/^/    /'
}

report() { # name status seconds outfile
	case "$2" in
	pass)
		passed=$((passed + 1))
		echo "PASS $1 ($3s)"
		[ "${ITEST_VERBOSE:-}" = 1 ] && sed 's/^/    /' "$4"
		;;
	skip)
		skipped=$((skipped + 1))
		echo "SKIP $1 ($3)"
		;;
	*)
		failed=$((failed + 1))
		failed_names="$failed_names $1"
		echo "FAIL $1 ($3s)"
		echo "---- output of $1 ($2) ----"
		tail -n 400 "$4"
		echo "---- end of $1 ----"
		why "$1" "$4" >>"$OUT/why"
		;;
	esac
}

# Runs one test in the background; its exit status and seconds land in
# $OUT/$stem.done when it ends.
start_test() { # file stem out cmd...
	_file=$1 _stem=$2 _out=$3
	shift 3
	(
		t0=$(now)
		timeout -k 10 "$ITEST_TIMEOUT" "$@" >>"$_out" 2>&1 </dev/null
		rc=$?
		echo "$rc $(($(now) - t0))" >"$OUT/$_stem.done.tmp"
		mv "$OUT/$_stem.done.tmp" "$OUT/$_stem.done"
	) &
	running="$running $_file"
	nrun=$((nrun + 1))
}

# Reports the tests that ended, until fewer than $1 are running.
reap_until_below() {
	while :; do
		still=""
		for rf in $running; do
			rstem=${rf%.*}
			if [ -f "$OUT/$rstem.done" ]; then
				read -r rc dt <"$OUT/$rstem.done"
				nrun=$((nrun - 1))
				case $rc in
				0) report "$rf" pass "$dt" "$OUT/$rstem.out" ;;
				77) report "$rf" skip "test skipped itself: $(tail -n 1 "$OUT/$rstem.out")" "$OUT/$rstem.out" ;;
				124 | 137) report "$rf" "timeout after ${ITEST_TIMEOUT}s, exit $rc" "$dt" "$OUT/$rstem.out" ;;
				*) report "$rf" "exit $rc" "$dt" "$OUT/$rstem.out" ;;
				esac
			else
				still="$still $rf"
			fi
		done
		running=$still
		[ "$nrun" -lt "$1" ] && return
		sleep 0.2
	done
}

running=""
nrun=0
for f in tests/integration/[0-9][0-9][0-9][0-9]-*; do
	[ -f "$f" ] || continue
	file=$(basename "$f")
	stem=${file%.*}
	ext=${file##*.}
	case "$ext" in
	py) set -- /usr/bin/python3 "$f" ;;
	sh) set -- bash "$f" ;;
	js) set -- node "$f" ;;
	c)
		# A C test with a driver is run through the driver.
		if [ -f "tests/integration/$stem.sh" ] || [ -f "tests/integration/$stem.py" ]; then
			continue
		fi
		set -- bash tests/lib/run-c-test.sh "$BUILD/bin/itest/$stem"
		;;
	*) continue ;;
	esac
	selected "$file" $ARGS || continue

	out="$OUT/$stem.out"
	: >"$out"

	# C binaries: make sure this test's binary is built and fresh.
	if [ -f "tests/integration/$stem.c" ]; then
		if ! make --no-print-directory BUILD="$BUILD" ${SANITIZE:+SANITIZE=$SANITIZE} "$BUILD/bin/itest/$stem" >"$out" 2>&1; then
			report "$file" "build failed" 0 "$out"
			continue
		fi
	fi

	# A test marked "itest: alone" (it bounds memory or latency under its
	# own load) starts when no other test runs and runs by itself.
	if [ "$ITEST_JOBS" -gt 1 ] && grep -q "itest: alone" "$f"; then
		reap_until_below 1
		start_test "$file" "$stem" "$out" "$@"
		reap_until_below 1
	else
		reap_until_below "$ITEST_JOBS"
		start_test "$file" "$stem" "$out" "$@"
	fi
done
reap_until_below 1

[ $skipped -gt 0 ] && echo "$skipped skipped"
if [ $failed -gt 0 ]; then
	echo "---- why they failed ----"
	cat "$OUT/why"
	echo "failed:$failed_names"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
