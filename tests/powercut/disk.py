"""disk.py - a throw-away ext4 disk whose power can be cut (tests/powercut).

SIGKILL keeps the page cache, so it cannot show a missing fsync.  A loop
device can: the broker's log dir is an ext4 file system in a loop file
(`losetup --direct-io=on`, so what the file system writes goes straight into
the file), mounted with `commit=600` so the journal commits only when an
fsync forces it.  The "power cut" is a copy of the loop device read with
O_DIRECT while the broker is stopped (SIGSTOP): the copy holds what reached
the device and nothing of what only sat in the page cache.  Mounting the
copy replays the journal, as a reboot would.  No global setting (vm.dirty_*)
is touched; the kernel's own writeback waits dirty_expire_centisecs (30 s by
default), longer than a case runs, which the canary check verifies.

Only devices and mounts this module made are ever detached or unmounted;
Disk.close() (called from `with`, and from the SIGTERM/SIGINT handler the
caller installs) releases them in reverse order.
"""
import os
import shutil
import subprocess

SKIP = 77


class Unavailable(Exception):
    """Loop devices or mounting are not available here: the caller skips."""


def _run(*cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.decode().strip()))
    return r.stdout.decode().strip()


def available():
    """None if the harness can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (losetup, mount)"
    for tool in ("losetup", "mount", "umount", "mkfs.ext4", "dd"):
        if not shutil.which(tool):
            return "%s not found" % tool
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control"
    return None


class Disk:
    """One loop file system at <tmp>/<name>.mnt; cut() makes a crashed copy."""

    def __init__(self, tmp, name="disk", size_mb=96):
        self.tmp, self.name = tmp, name
        self.loops, self.mounts = [], []  # ours only, in order of creation
        self.img = os.path.join(tmp, name + ".img")
        self.mnt = os.path.join(tmp, name + ".mnt")
        with open(self.img, "wb") as f:
            f.truncate(size_mb << 20)
        try:
            _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.img)
            self.loop = self._attach(self.img, direct=True)
            self._mount(self.loop, self.mnt, "commit=600")
        except BaseException:
            self.close()
            raise

    def _attach(self, img, direct):
        args = ["losetup", "--find", "--show"] + (["--direct-io=on"] if direct else []) + [img]
        try:
            dev = _run(*args)
        except RuntimeError as e:
            raise Unavailable(str(e))
        self.loops.append(dev)
        return dev

    def _mount(self, dev, mnt, opts):
        os.makedirs(mnt, exist_ok=True)
        try:
            _run("mount", "-t", "ext4", "-o", opts, dev, mnt)
        except RuntimeError as e:
            raise Unavailable(str(e))
        self.mounts.append(mnt)

    def write_canary(self, size=65536):
        """A file written without fsync: it must not survive the cut (checks the harness)."""
        with open(os.path.join(self.mnt, "canary"), "wb") as f:
            f.write(b"c" * size)

    def cut(self):
        """Copies what reached the device (call with the writers stopped). Returns the copy's path."""
        copy = os.path.join(self.tmp, self.name + "-cut.img")
        _run("dd", "if=" + self.loop, "of=" + copy, "bs=1M", "iflag=direct", "status=none")
        return copy

    def mount_copy(self, copy):
        """Mounts a copy made by cut() (replaying its journal); returns the mount point."""
        mnt = os.path.join(self.tmp, self.name + "-cut.mnt")
        self._mount(self._attach(copy, direct=False), mnt, "commit=5")
        return mnt

    def canary_survived(self, mnt):
        p = os.path.join(mnt, "canary")
        if not os.path.exists(p):
            return False
        with open(p, "rb") as f:
            return f.read() == b"c" * 65536

    def close(self):
        while self.mounts:
            mnt = self.mounts.pop()
            _run("umount", mnt, check=False)
            if os.path.ismount(mnt):
                _run("umount", "-l", mnt, check=False)
        while self.loops:
            _run("losetup", "-d", self.loops.pop(), check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
