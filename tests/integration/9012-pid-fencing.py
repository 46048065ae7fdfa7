#!/usr/bin/python3
"""9012: InitProducerId never lets one client bump, and so fence, another
client's producer id.

Raw protocol (idemwire.py), three clients on their own connections:
  victim    an idempotent producer (id P, epoch 0) appending in sequence;
  txn       a transactional producer (transactional.id "t-9012", id T);
  attacker  sends non-transactional InitProducerId v4 naming P with an
            epoch that is not P's current one, and naming T with T's epoch.
Each attacker request must get a NEW producer id (epoch 0), never P or T
with a bumped epoch (the old code answered P/epoch+1 and T/epoch+1: the
attacker then wrote at that epoch and the victim's next batch was refused
with INVALID_PRODUCER_EPOCH).  The victim and the transactional producer go
on undisturbed.  The victim's own KIP-360 bump (its id and current epoch)
still works, after which its old epoch is stale; a restart forgets the
epochs, and a bump after it is answered with a new id (also valid KIP-360).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import idemwire as iw  # noqa: E402
from gregor import Broker, check, eq, log, main  # noqa: E402

TOPIC = "pid-fence"


def test():
    with Broker() as b:
        victim, txn, attacker = iw.Client(b.port), iw.Client(b.port), iw.Client(b.port)
        eq(victim.produce(TOPIC, 0, iw.batch(1)), (0, 0), "auto-create the topic")
        pid, ep = victim.init_pid(version=4)
        eq(ep, 0, "victim epoch")
        eq(victim.produce(TOPIC, 0, iw.batch(2, pid=pid, epoch=0, seq=0))[0], 0, "victim seq 0")
        tpid, tep = txn.init_pid(version=4, txn_id="t-9012")
        log("victim id %d, transactional id %d/%d" % (pid, tpid, tep))

        for epoch in (1, 5, 32000):
            got = attacker.init_pid(version=4, producer_id=pid, epoch=epoch)
            check(got[0] not in (pid, tpid) and got[1] == 0,
                  "naming the victim's id with epoch %d gives a new id, got %r" % (epoch, got))
            eq(attacker.produce(TOPIC, 0, iw.batch(1, pid=got[0], epoch=got[1], seq=0))[0], 0,
               "attacker's own id works")
        got = attacker.init_pid(version=4, producer_id=tpid, epoch=tep)
        check(got[0] not in (pid, tpid) and got[1] == 0,
              "naming the transactional id's producer gives a new id, got %r" % (got,))
        got = attacker.init_pid(version=3, producer_id=pid + 1000, epoch=0)
        check(got[0] != pid + 1000 and got[1] == 0, "a never-issued id gives a new id, got %r" % (got,))

        eq(victim.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=0, seq=2))[0], 0, "victim undisturbed")
        eq(txn.init_pid(version=4, txn_id="t-9012", producer_id=tpid, epoch=tep), (tpid, tep + 1),
           "the transactional producer re-inits with its own id and epoch")

        log("the victim's own KIP-360 bump still works")
        eq(victim.init_pid(version=4, producer_id=pid, epoch=0), (pid, 1), "own bump")
        eq(victim.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=1, seq=0))[0], 0, "epoch 1 seq 0")
        got = attacker.init_pid(version=4, producer_id=pid, epoch=0)
        check(got[0] != pid, "the old epoch no longer bumps, got %r" % (got,))
        eq(victim.produce(TOPIC, 0, iw.batch(1, pid=pid, epoch=1, seq=1))[0], 0, "epoch 1 seq 1")
        for c in (victim, txn, attacker):
            c.close()

        eq(b.stop(), 0, "exit status")
        b.start()
        c = iw.Client(b.port)
        got = c.init_pid(version=4, producer_id=pid, epoch=1)
        check(got[0] != pid and got[1] == 0, "after a restart a bump gets a new id, got %r" % (got,))
        c.close()


if __name__ == "__main__":
    main(test)
