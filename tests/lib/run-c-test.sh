#!/bin/bash
# Generic driver for a C integration test without its own driver script:
# starts a broker (tests/lib/broker.sh), runs the test binary with the
# bootstrap address as argv[1], passes its exit status through.
#   bash tests/lib/run-c-test.sh build/bin/itest/NNNN-name [extra args...]
. "$(dirname "${BASH_SOURCE[0]}")/broker.sh"
bin=$1
shift
[ -x "$bin" ] || fail "test binary $bin missing (make $bin)"
broker_start
"$bin" "$BROKER_ADDR" "$@" || fail "$(basename "$bin") exited with status $?"
broker_stop
it_pass
