#!/usr/bin/python3
"""9030: the power-cut harness (tests/powercut/powercut.py, also `make
test-powercut`): acks=all, acks=1 consumed records, offset commits, an
aborted transaction, answered topic creations and a compaction pass survive
a cut that keeps only what reached the device.
Skips (77) without root, loop devices or mount.  Runtime ~15 s.
"""
import os
import subprocess
import sys

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "powercut", "powercut.py")

sys.exit(subprocess.call([sys.executable, HARNESS] + sys.argv[1:]))
