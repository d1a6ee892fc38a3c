"""Resuming a loader mid-epoch: what a state holds, how it is checked, loaded and merged.

``tracker`` (ResumeTracker: a loader's progress saved and loaded, per sampler kind),
``iterable`` (the state of an IterableDataset's replicas and workers), ``progress``
(EpochProgress: the counters of the epoch in flight) and ``merge`` (the states of every rank
merged into one, for a resume on another world). Every module is imported by its own name;
this package's ``__init__`` imports nothing.
"""
