"""stoker: feed a training loop and watch its gauges, no deep-learning framework required.

Importing :mod:`stoker` imports none of its subpackages; import the part you need:
:mod:`stoker.data`, :mod:`stoker.tensorboard`, :mod:`stoker.cmp` or :mod:`stoker.morestrings`.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
