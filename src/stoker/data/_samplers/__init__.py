"""The samplers: what order a loader reads its dataset in, and where that order stands.

``base`` (Sampler, SequentialSampler, BatchSampler, the piece arithmetic), ``shuffled``
(RandomSampler, SubsetRandomSampler, WeightedRandomSampler), ``distributed``
(DistributedSampler) and ``distributed_state`` (its saved state's fields), ``epochs`` (the
epoch clock and the draws a sampler's generator made), ``positions`` (the position math:
which positions of an epoch are consumed, shared out over ranks and workers) and ``stateful``
(the ``Stateful`` contracts a sampler or dataset may keep). Every module is imported by its
own name; this package's ``__init__`` imports nothing.
"""
