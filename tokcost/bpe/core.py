"""The trainer's optional C core (csrc/tokcost_bpe.c, built into the wheel as
``_tokcost_bpe`` when a C compiler is there): the merge loop and the counting of ASCII lines.
Each has a pure-Python twin that stays the reference; the tests hold them equal."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from types import ModuleType

MODULE = "_tokcost_bpe"


@lru_cache(maxsize=1)
def compiled_core() -> ModuleType | None:
    """The built module, or None (not built, or ``TOKCOST_PURE_PYTHON=1``)."""
    if os.environ.get("TOKCOST_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(MODULE)
    except ImportError:
        return None
