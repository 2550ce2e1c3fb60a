"""``hf:PATH/tokenizer.json`` or ``hf:ORG/REPO``: Hugging Face ``tokenizers``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost import net
from tokcost.adapters.base import check_ids, special_tokens_by_id
from tokcost.errors import InputError, TokenizerDataError, UsageError
from tokcost.limits import regex_problem

if TYPE_CHECKING:
    from tokenizers import Tokenizer as HFTokenizer


# tokenizers holds over 100 bytes a character while it encodes (18 MB of prose: 2.4 GB RSS):
# one call is bounded, and streamed chunks are cut this small first (docs/count.md).
MAX_ENCODE_CHARS = 8 << 20
STREAM_CHARS = 1 << 18


class HFTokenizerAdapter:
    """A ``tokenizers.Tokenizer``; counts exclude the post-processor's BOS/EOS. Pipelines
    proven in tokcost.adapters.hf_cuts count chunk by chunk; others whole texts."""

    releases_gil = True
    count_backend = "tokenizers"
    cut_punct = False  # spaces only (tokcost.adapters.hf_cuts says why)
    max_chars = MAX_ENCODE_CHARS  # the most one encode call takes
    stream_chars = STREAM_CHARS  # chunks handed to ``count`` are cut to about this

    def __init__(self, name: str, tokenizer: HFTokenizer, *, exact: bool = True) -> None:
        from tokcost.adapters.hf_cuts import streamable
        self.name, self.tokenizer, self.exact = name, tokenizer, exact
        self.streamable = streamable(tokenizer)

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return self._encode(text, allow_special=allow_special, post_process=False)

    def encode_as_input(self, text: str, *, allow_special: bool = False) -> list[int]:
        """``encode`` plus the post-processor's BOS: a model's prompt, as transformers gives it."""
        return self._encode(text, allow_special=allow_special, post_process=True)

    def _encode(self, text: str, *, allow_special: bool, post_process: bool) -> list[int]:
        return list(self._encoding(text, allow_special=allow_special,
                                   post_process=post_process).ids)

    def _encoding(self, text: str, *, allow_special: bool, post_process: bool) -> Any:
        if len(text) > self.max_chars:
            raise InputError(f"{self.name}: {len(text):,} characters in one piece are over the "
                             f"{self.max_chars >> 20} Mi characters tokenizers encodes at once in "
                             "bounded memory; split the text")
        # encode_special_tokens=True makes "<|endoftext|>" in user text plain text.
        self.tokenizer.encode_special_tokens = not allow_special
        return self.tokenizer.encode(text, add_special_tokens=post_process)

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(self._encoding(text, allow_special=allow_special, post_process=False))

    def decode(self, ids: Sequence[int]) -> str:
        check_ids(self.name, ids, self.vocab_size)
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        # One id at a time: decode() undoes the byte-level vocabularies' character mapping.
        return [self.decode([i]).encode("utf-8") for i in ids]

    def special_tokens(self) -> dict[str, int]:
        added = self.tokenizer.get_added_tokens_decoder()
        return special_tokens_by_id((t.content, int(i)) for i, t in added.items() if t.special)

    def matched_texts(self, allow_special: bool) -> list[str]:
        """The added tokens ``encode`` matches in raw text: the non-special ones always."""
        added = self.tokenizer.get_added_tokens_decoder().values()
        return [t.content for t in added if allow_special or not t.special]

    def pattern(self) -> str | None:
        """The first ``Split`` regex of the pre-tokenizer (ByteLevel's own: GPT-2's)."""
        return next(_splits(self.tokenizer), None)


def _splits(tokenizer: Any) -> Iterator[str]:
    """The pre-tokenizer's ``Split`` regexes, in order (ByteLevel's own: GPT-2's)."""
    from tokcost.adapters.openai_encodings import PATTERNS
    pre = tokenizer.pre_tokenizer
    nodes = [json.loads(pre.__getstate__())] if pre is not None else []
    while nodes:
        node = nodes.pop(0)
        if isinstance(node, list):
            nodes[:0] = node
        elif isinstance(node, dict) and node.get("type") == "Split" and isinstance(
                regex := (node.get("pattern") or {}).get("Regex"), str):
            yield regex
        elif isinstance(node, dict) and node.get("type") == "ByteLevel":
            yield from [PATTERNS["gpt2"]] if node.get("use_regex", True) else []
        elif isinstance(node, dict):
            nodes[:0] = [node.get("pretokenizers")]


def _checked(spec: str, tokenizer: Any) -> HFTokenizerAdapter:
    """The adapter, once no pre-tokenizer regex can backtrack for ever (onig has no limit)."""
    for regex in _splits(tokenizer):
        if (problem := regex_problem(regex)) is not None:
            raise TokenizerDataError(f"{spec}: its pre-tokenizer regex {problem}")
    return HFTokenizerAdapter(spec, tokenizer)


def load(arg: str) -> HFTokenizerAdapter:
    from tokenizers import Tokenizer
    path = Path(arg).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise UsageError(f"tokenizer file not found: {path}")
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise TokenizerDataError(f"{path} is not a valid Hugging Face tokenizer.json "
                                     f"({str(exc)[:120]})") from exc
        return _checked(f"hf:{arg}", tokenizer)
    return _checked(f"hf:{arg}", Tokenizer.from_file(_hub_file(arg)))


_OFFLINE_FIX = ("on a connected machine save the repo's tokenizer.json and pass "
                "hf:PATH/tokenizer.json")


def _hub_file(repo: str) -> str:
    """tokenizer.json of a hub repo: from the local cache, else downloaded (fast to fail)."""
    from huggingface_hub import constants, hf_hub_download, try_to_load_from_cache
    cached = try_to_load_from_cache(repo, "tokenizer.json")
    if isinstance(cached, str):
        return cached
    offline_env = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if constants.HF_HUB_OFFLINE or offline_env:
        raise TokenizerDataError(f"hf:{repo} is not in the local Hugging Face cache and "
                                 f"HF_HUB_OFFLINE is set; {_OFFLINE_FIX}")
    if not net.reachable(constants.ENDPOINT):
        raise TokenizerDataError(f"hf:{repo} is not in the local Hugging Face cache and the "
                                 f"hub is unreachable; {_OFFLINE_FIX}")
    try:
        return str(hf_hub_download(repo, "tokenizer.json"))
    except Exception as exc:  # gated, missing repo, no tokenizer.json, HTTP errors
        name = type(exc).__name__
        hint = ("it is gated: accept its licence on the hub, then log in (hf auth login) or "
                "set HF_TOKEN" if "Gated" in name else f"{name}: {str(exc).splitlines()[0][:120]}")
        raise TokenizerDataError(f"cannot download hf:{repo} tokenizer.json ({hint})") from exc
