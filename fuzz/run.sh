#!/bin/sh
# fuzz/run.sh - builds the libFuzzer targets with clang (ASan + UBSan) into
# $FUZZ_BUILD (default build-fuzz) and runs each for N seconds, $FUZZ_JOBS
# (default: the cores) at once.
#
#   sh fuzz/run.sh                 # every target, 10 s each
#   sh fuzz/run.sh 300             # every target, 300 s each
#   sh fuzz/run.sh 60 fuzz_log     # one target
#   FUZZ_BUILD_ONLY=1 sh fuzz/run.sh
#
# Corpora: fuzz/corpus/<target>/ (seeds, checked in, read-only here) and
# $FUZZ_BUILD/corpus/<target>/ (what the fuzzer learns; not checked in).
# A crash leaves $FUZZ_BUILD/crash/<target>/crash-* and fails the run;
# copy it into fuzz/corpus/<target>/ with the fix (STYLE.md).
# Needs: clang and libclang-rt-14-dev (libFuzzer) from Debian.
set -e
cd "$(dirname "$0")/.."
SECS=${1:-10}
[ $# -gt 0 ] && shift
TARGETS=${*:-"fuzz_request fuzz_api fuzz_records fuzz_msgset fuzz_log fuzz_conf fuzz_sasl fuzz_tls fuzz_principal_map"}
B=${FUZZ_BUILD:-build-fuzz}
CLANG=${CLANG:-clang}
PY=${PYTHON:-/usr/bin/python3}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-command-line-argument -Wno-unused-function -D_GNU_SOURCE -Isrc -I. -I$B/gen $SAN"

command -v $CLANG >/dev/null || { echo "fuzz: $CLANG not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }

# -- build: generated code, the broker's objects as a library, one binary per target
mkdir -p $B/gen $B/obj $B/bin
if [ ! -f $B/gen/proto_msgs.c ] || [ -n "$(find src/proto/schema src/proto/gen.py -newer $B/gen/proto_msgs.c 2>/dev/null | head -1)" ]; then
	$PY src/proto/gen.py src/proto/schema $B/gen
fi
# only the layers the targets call: the rest may be mid-edit by others
SRCS=$(ls src/util/*.c src/proto/*.c src/log/*.c src/sec/*.c src/broker/config.c src/broker/topic_config.c)
OBJS=""
for s in $SRCS $B/gen/proto_msgs.c; do
	o=$B/obj/$(echo "$s" | sed "s|^$B/||; s|/|_|g; s|\.c$|.o|")
	OBJS="$OBJS $o"
	# rebuild when the source or any header is newer (coarse but safe)
	if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find src $B/gen -name '*.h' -newer "$o" | head -1)" ]; then
		echo "$CLANG -c $s"
		$CLANG $CFLAGS -fsanitize=fuzzer-no-link -c "$s" -o "$o" &
		# bounded parallelism
		while [ "$(jobs -p | wc -l)" -ge "$JOBS" ]; do sleep 0.1; done
	fi
done
wait
rm -f $B/libgregor.a
ar rcs $B/libgregor.a $OBJS
for t in $TARGETS; do
	if [ ! -f $B/bin/$t ] || [ fuzz/$t.c -nt $B/bin/$t ] || [ fuzz/fuzz.h -nt $B/bin/$t ] || [ $B/libgregor.a -nt $B/bin/$t ]; then
		$CLANG $CFLAGS -fsanitize=fuzzer fuzz/$t.c $B/libgregor.a -o $B/bin/$t -lisal -lsnappy -llz4 -lzstd -lssl -lcrypto -lpthread
	fi
done
[ -n "$FUZZ_BUILD_ONLY" ] && exit 0

# -- run
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# each target alone on a core, $JOBS at once; results printed in order
run_target() {
	t=$1
	dict=""; [ -f fuzz/$t.dict ] && dict="-dict=fuzz/$t.dict"
	if $B/bin/$t -max_total_time=$SECS -timeout=10 -rss_limit_mb=2048 -max_len=1048576 \
		-print_final_stats=1 $dict -artifact_prefix=$B/crash/$t/ \
		$B/corpus/$t fuzz/corpus/$t > $B/$t.log 2>&1; then
		{ grep -E "stat::number_of_executed_units|stat::peak_rss_mb" $B/$t.log | tr '\n' ' '
		  echo "corpus $(ls $B/corpus/$t | wc -l) files"; } > $B/$t.result
	else
		{ echo "FAIL $t (log: $B/$t.log)"
		  grep -E "ERROR:|runtime error|SUMMARY|Test unit written" $B/$t.log | head -5; } > $B/$t.result
	fi
}
for t in $TARGETS; do
	mkdir -p $B/corpus/$t $B/crash/$t fuzz/corpus/$t
	rm -f $B/$t.result
	run_target $t &
	while [ "$(jobs -p | wc -l)" -ge "$JOBS" ]; do sleep 0.2; done
done
wait
fail=""
for t in $TARGETS; do
	echo "== $t: ${SECS}s"
	cat $B/$t.result
	grep -q "^FAIL" $B/$t.result && fail="$fail $t"
done
[ -z "$fail" ] || { echo "fuzz: failed:$fail"; exit 1; }
echo "fuzz: all targets passed"
