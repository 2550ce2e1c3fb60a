"""Errors of the reference path; each says what to do next."""

from __future__ import annotations

from tokcost.errors import TokcostError, UsageError


class ModelTooLarge(UsageError):
    """The catalog model is far too large for a numpy reference run."""


class PromptTooLong(UsageError):
    """The prompt plus the new tokens do not fit the model's context window."""


class WeightsMismatch(TokcostError):
    """A weights file does not match the architecture the catalog describes."""


class CacheFull(TokcostError):
    """The paged cache's block pool ran out of free blocks."""
