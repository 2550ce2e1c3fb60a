"""Hatchling build hook: compiles tokcost's BPE merge loop (csrc/tokcost_bpe.c) into the wheel
as the top-level module ``_tokcost_bpe``, with setuptools' compiler driver (the one pip uses
for every C extension). Without a C compiler the wheel stays pure Python and ``bpe train``
runs the same merges in its Python loop, about 7x slower; set TOKCOST_REQUIRE_C=1 to make a
failed compile an error instead (CI does)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "_tokcost_bpe"
SOURCE = "csrc/tokcost_bpe.c"


def compile_core(root: str, out: str) -> Path:
    """The built extension's path under ``out``."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension(MODULE, [os.path.join(root, SOURCE)], extra_compile_args=["-O2"]
                    if os.name != "nt" else [])
    cmd = build_ext(Distribution({"name": MODULE, "ext_modules": [ext]}))
    cmd.build_lib = os.path.join(out, "lib")
    cmd.build_temp = os.path.join(out, "tmp")
    cmd.ensure_finalized()
    cmd.run()
    return Path(cmd.get_ext_fullpath(MODULE))


class CompiledCoreHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="tokcost-build-")
        try:
            built = compile_core(self.root, self._tmp.name)
        except Exception as exc:  # no compiler or no Python headers: the pure-Python loop
            if os.environ.get("TOKCOST_REQUIRE_C"):
                raise
            self.app.display_warning(f"tokcost: the C merge loop was not built ({exc}); "
                                     "`bpe train` will use its slower Python loop")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        target = {str(built): built.name}
        build_data["force_include"].update(target)
        if version == "editable":  # the editable wheel takes only this map: keep the config's
            build_data["force_include_editable"].update(
                {**self.build_config.force_include, **target})

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
