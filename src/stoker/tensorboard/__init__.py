"""Write TensorBoard event files without torch, TensorFlow or protobuf.

``SummaryWriter`` and ``FileWriter`` follow ``torch.utils.tensorboard`` (torch 2.13): same
methods, arguments and defaults, and event files that TensorBoard reads as it reads torch's.
"""

from stoker.tensorboard._file_writer import FileWriter
from stoker.tensorboard._writer import SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
