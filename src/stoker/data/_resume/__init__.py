"""Resuming a loader mid-epoch: what a state holds, how it is checked, loaded and merged.

``tracker`` (ResumeTracker: a loader's progress saved and loaded, and ``modes_for``, which
picks a plan's resume modes), ``mode`` (the ResumeMode protocol), one class per mode in
``samplers`` (map-style loaders) and ``iterable`` (IterableDatasets), ``progress``
(EpochProgress: the counters of the epoch in flight, its replica states and delivery marks)
and ``merge`` (the states of every rank merged into one, for a resume on another world).
Every module is imported by its own name; this package's ``__init__`` imports nothing.
"""
