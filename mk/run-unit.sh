#!/bin/sh
# Runs each cmocka unit-test binary; fails if any fails.
rc=0
for t in "$@"; do
	"$t" || rc=1
done
exit $rc
