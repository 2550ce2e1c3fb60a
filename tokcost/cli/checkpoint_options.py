"""The options that point a reference-path command at a real checkpoint.

``generate`` and ``attention`` both run Hugging Face checkpoints, so ``--model-dir`` and
the ``hf:`` form of ``--model`` read the same in both.
"""

from __future__ import annotations

from typing import Annotated

import typer

MODEL_HELP = ("Catalog model to run (tiny-ref ships weights), or hf:ORG/REPO from the local "
              "Hugging Face cache.")
ModelDirOpt = Annotated[
    str | None,
    typer.Option("--model-dir", help="A Hugging Face model folder (config.json, "
                 "*.safetensors, tokenizer.json) instead of --model."),
]
