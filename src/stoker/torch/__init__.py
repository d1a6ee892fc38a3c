"""stoker.torch: stoker's doors for torch programs.

:mod:`stoker.torch.data` is ``torch.utils.data`` with stoker's loader behind it: change
``from torch.utils.data import DataLoader`` to ``from stoker.torch.data import DataLoader`` and
the program gets the same batches (tensors, as torch's ``default_collate`` makes them), the
same randomness and the same subclass checks, plus stoker's workers, slabs, resume state and
failure reports. Importing this package imports nothing; ``stoker.torch.data`` imports torch.
"""

__all__: list[str] = []
