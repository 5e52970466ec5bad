"""The one compiled part: impl._batch_walk, recovery's plain-batch loop (impl/_batch_walk.c).

Everything else is declared in pyproject.toml; setuptools reads ext_modules only from here.
``optional=True``: without a C compiler or Python's headers the install still succeeds and impl
runs its pure-Python loop (the same results, slower); ``impl.segment.COMPILED_WALK`` says which.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("impl._batch_walk", ["impl/_batch_walk.c"], extra_compile_args=["-O3", "-std=gnu11"], optional=True)
    ]
)
