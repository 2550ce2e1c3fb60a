"""The application layer: one module per use case, between the CLI and the parts.

Each use case takes a frozen request (or plain typed arguments, never a mirror of
the CLI's flags), resolves tokenizers, models and engines once, calls the parts,
and returns a frozen result whose ``to_dict()`` is the command's ``--json``
document. ``tokcost/__init__.py`` re-exports them: that is the public API, and
the CLI imports nothing else from the package but ``tokcost.errors``.
"""
