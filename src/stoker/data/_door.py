"""The one thing the torch door needs of stoker.data beyond its public API: the loader's defaults.

``stoker.torch.data.DataLoader`` is a subclass of :class:`stoker.data.DataLoader` (and of
torch's). Where torch's DataLoader is given no sampler or collate_fn it builds torch's; the
door's defaults are samplers that are stoker's (resumable at an offset, cut into batches
without per-index work) and torch's too (``isinstance`` holds, so trainers that inspect
``loader.sampler`` see a ``torch.utils.data.RandomSampler``) inside torch's exact
``BatchSampler``, and torch's own ``default_collate`` / ``default_convert`` (which the engine
recognises, collating with stoker's NumPy path and handing out tensors). It says so by setting
its ``_defaults`` class attribute to a :class:`LoaderDefaults`, whose ``datasets`` (a
:class:`DatasetAdapter`) takes in torch's datapipes as torch's DataLoader does; every other
difference (torch's global generator) the engine already makes through :mod:`stoker._torch`.
The contract is this module: nothing else of stoker.data's private side is used outside it.
"""

from stoker.data._loader import DatasetAdapter, LoaderDefaults

__all__ = ["DatasetAdapter", "LoaderDefaults"]
