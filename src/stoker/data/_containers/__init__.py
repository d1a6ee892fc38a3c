"""Datasets' containers that workers share instead of copying: compact sequences and records.

``compact`` (CompactSequence, StringSequence, BytesSequence: Python objects as flat buffers)
and ``records`` (RecordSequence: dicts of columns). Every module is imported by its own name;
this package's ``__init__`` imports nothing.
"""
