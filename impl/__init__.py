"""Optimised implementation of Kafka's on-disk log layer.

Zero-copy batch scanning over any buffer (bytes, memoryview, mmap), later lazy mmapped indexes and
single-pass recovery.  ``impl`` never imports ``model`` (DESIGN.md): the conformance suite compares
the two, so they must not share code.
"""
