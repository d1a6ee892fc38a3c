"""SharedArrays across processes: only the owner unlinks, and an owner exiting leaves no name.

A forked child that frees its copy of a container leaves the owner's name; a main process that
exits holding a shared container and an unread pickle leaves none of its names behind.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
from multiprocessing.reduction import ForkingPickler

from data_compact_helpers import names_of, owned_names

from stoker.data import StringSequence


def test_a_forked_child_freeing_its_copy_leaves_the_name() -> None:
    """Only the owner process unlinks: a forked child that frees the container leaves it."""
    seq = StringSequence(["x"] * 100)
    pickle.loads(ForkingPickler.dumps(seq))
    pid = os.fork()
    if pid == 0:
        del seq
        gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)
    assert len(owned_names(os.getpid())) == 1
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


_EXITING_OWNER = """
import pickle, sys
from multiprocessing.reduction import ForkingPickler
from stoker.data import StringSequence
kept = StringSequence(["kept"])
unread = ForkingPickler.dumps(StringSequence(["never read"]))
read = pickle.loads(ForkingPickler.dumps(kept))
print(len(sys.argv))
"""


def test_an_owner_exiting_removes_its_names_and_unread_tickets() -> None:
    """A main process exiting with a shared container and an unread pickle leaves no name behind."""
    done = subprocess.Popen([sys.executable, "-c", _EXITING_OWNER], stdout=subprocess.PIPE)
    assert done.communicate(timeout=60)[0].strip() == b"1"
    assert done.returncode == 0
    assert names_of(done.pid) == []
