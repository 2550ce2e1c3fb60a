"""Session-wide isolation for the tests and the doctests: nothing outside pytest's tmp dirs.

Set at configure time, before any test module is imported, so even work done at
import or collection time (a tokenizer built at module level, matplotlib's font
cache, hypothesis's example database) stays out of the user's home and the
checkout. tests/conftest.py adds per-test isolation on top.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    factory = pytest.TempPathFactory.from_config(config, _ispytest=True)
    base = factory.getbasetemp()
    os.environ["TOKCOST_CACHE_DIR"] = str(base / "tokcost-cache")
    os.environ["MPLCONFIGDIR"] = str(base / "matplotlib")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HOME"] = str(base / "hf-home")
    os.environ.pop("TOKCOST_CATALOG", None)
    os.environ.pop("TOKCOST_TIKTOKEN_DIR", None)
    try:
        from hypothesis import settings
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # hypothesis comes with the test extra; doctests run without it
        return
    set_hypothesis_home_dir(base / "hypothesis")  # its constants cache, not ./.hypothesis
    # No .hypothesis/ example database in the checkout: every run starts from the seed.
    settings.register_profile("tokcost", database=None, deadline=None)
    settings.load_profile("tokcost")
