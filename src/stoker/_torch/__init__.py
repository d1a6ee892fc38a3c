"""The one torch boundary: the only module of stoker's torch-free parts that looks at torch.

stoker never imports torch on its own, with one exception: ``add_graph`` traces a model, which
only torch can do, so :func:`trace_module` imports it when called. Every question about a torch
object (is this a tensor, a generator, a torch ``IterableDataset``; what is its NumPy value; what
is a generator's state) and every call into torch (drawing from a ``torch.Generator``, stacking
tensors, seeding a worker, asking ``torch.distributed`` for the rank) goes through here, and each
answers from ``sys.modules``: if the program has not imported torch, no torch object can exist,
so the answer is "no" without importing anything.

Detection is by ``isinstance`` against the imported torch's classes, never by the object's
module name: ``type(x).__module__.startswith("torch")`` also matches objects of torchvision,
torchmetrics or torchdata that are not tensors.

The package's modules, one concern each: :mod:`._detect` (questions about torch objects),
:mod:`._tensors`, :mod:`._generators`, :mod:`._distributed` and :mod:`._workers` (seeding and
torch's ``get_worker_info()`` in stoker's workers, with the import hook). The rest of stoker
imports this facade only (``from stoker import _torch``).
"""

from __future__ import annotations

from stoker._torch._detect import (
    accelerator_available,
    batch_collation,
    is_batch_sampler,
    is_generator,
    is_iterable_dataset,
    is_tensor,
    is_traced_module,
    loaded,
)
from stoker._torch._distributed import process_group
from stoker._torch._generators import (
    SEED_MASK,
    default_generator,
    draw_seed,
    generator_state,
    multinomial,
    new_generator,
    randint,
    randperm,
    set_generator_state,
)
from stoker._torch._tensors import (
    as_tensor,
    bfloat16_bits,
    copy_into,
    from_numpy,
    index_tensor,
    is_strided,
    pin,
    slab_dtype,
    stack,
    stack_into,
    tensor_to_numpy,
    trace_module,
)
from stoker._torch._workers import (
    enter_thread_worker,
    leave_thread_worker,
    seed_worker,
    set_worker_info,
)

__all__ = [
    "SEED_MASK",
    "accelerator_available",
    "as_tensor",
    "batch_collation",
    "bfloat16_bits",
    "copy_into",
    "default_generator",
    "draw_seed",
    "enter_thread_worker",
    "from_numpy",
    "generator_state",
    "index_tensor",
    "is_batch_sampler",
    "is_generator",
    "is_iterable_dataset",
    "is_strided",
    "is_tensor",
    "is_traced_module",
    "leave_thread_worker",
    "loaded",
    "multinomial",
    "new_generator",
    "pin",
    "process_group",
    "randint",
    "randperm",
    "seed_worker",
    "set_generator_state",
    "set_worker_info",
    "slab_dtype",
    "stack",
    "stack_into",
    "tensor_to_numpy",
    "trace_module",
]
