"""The longer examples (five lines or more) of the library's functions, moved out of their docstrings (a
docstring keeps what a reader needs; these pin behaviour): each runs as a doctest in its
module's namespace, as pytest's --doctest-modules runs the ones left in place."""

from __future__ import annotations

import doctest
import importlib

import pytest

EXAMPLES = [
    ("tokcost.app.check", "<module>", r"""
>>> adhoc = AdhocBudget(paths="prompts/**/*.md", limits={"max_tokens_per_file": "10k"})
>>> adhoc.budget_config.budgets[0].max_tokens_per_file
10000
"""),
    ("tokcost.app.count", "count", r"""
>>> import io, tokcost
>>> r = tokcost.count(tokcost.CountRequest.of(paths="-", stdin=io.BytesIO(b"hello world"),
...                                           tokenizers="cl100k_base"))
>>> r.total_tokens(), r.to_dict()["total"]["tokens"]
(2, {'cl100k_base': 2})
"""),
    ("tokcost.app.count", "tokenize", r"""
>>> import io, tokcost
>>> stdin = io.BytesIO(b"hello world")
>>> r = tokcost.tokenize(tokcost.TokenizeRequest.of(paths="-", stdin=stdin, max_tokens=1))
>>> r.files[0].text, r.files[0].input_tokens, r.to_dict()["files"][0]["truncated"]
('hello', 2, True)
"""),
    ("tokcost.app.generate", "<module>", r"""
>>> r = generate(GenerateRequest.of(prompt="The baker", max_new_tokens=2))
>>> r.cache, len(r.samples[0].token_ids), r.kv_cache.matches
(<CacheMode.PAGED: 'paged'>, 2, True)
"""),
    ("tokcost.app.generate", "GenerateRequest", r"""
>>> r = GenerateRequest.of(prompt="Hi", temperature="0.8", max_new_tokens="1k")
>>> r.sampling.max_new_tokens, r.sampling.temperature
(1000, 0.8)
"""),
    ("tokcost.app.memory", "estimate_memory", r"""
>>> r = estimate_memory(KvRequest.of(model="llama-3.1-8b", contexts=[8192],
...                                  kv_memory="10GiB"))
>>> r.bytes_per_token, r.fit.num_blocks
(131072, 1280)
"""),
    ("tokcost.app.price", "<module>", r"""
>>> import tokcost
>>> request = tokcost.PriceRequest(model="gpt-4o", input_tokens="1k", output_tokens=200)
>>> tokcost.price(request).breakdown.lines[0].tokens
1000
"""),
    ("tokcost.app.simulate", "simulate", r"""
>>> r = simulate(SimulationRequest.of(slots=600, distribution="fixed:40,20", requests=10,
...                                   policies="paged"))
>>> r.policies[0].label, r.policies[0].completed
('paged/16', 10)
"""),
    ("tokcost.atomic", "ensure_writable", r"""
>>> folder = Path(tempfile.mkdtemp())
>>> ensure_writable(folder / "out.txt")
>>> list(folder.iterdir())
[]
>>> ensure_writable(folder / "new" / "out.txt", create_folder=True)
>>> try:
...     ensure_writable(folder / "no" / "out.txt")
... except InputError as exc:
...     print(str(exc).replace(str(folder), "F"))
cannot write F/no/out.txt: folder F/no does not exist; create it first
"""),
    ("tokcost.atomic", "atomic_set", r"""
>>> folder = Path(tempfile.mkdtemp())
>>> with atomic_set([folder / "a.txt", folder / "b.txt"]) as (a, b):
...     _ = a.write_text("A")
...     _ = b.write_text("B")
>>> sorted(p.name for p in folder.iterdir())
['a.txt', 'b.txt']
>>> with atomic_set([folder / "a.txt", folder / "c.txt"]) as (a, c):
...     _ = a.write_text("new A")
...     raise RuntimeError("stopped before c.txt was written")
Traceback (most recent call last):
RuntimeError: stopped before c.txt was written
>>> sorted(p.name for p in folder.iterdir()), (folder / "a.txt").read_text()
(['a.txt', 'b.txt'], 'A')
"""),
    ("tokcost.atomic", "atomic_path", r"""
>>> target = Path(tempfile.mkdtemp()) / "out.txt"
>>> with atomic_path(target) as tmp:
...     _ = tmp.write_text("done")
>>> target.read_text()
'done'
"""),
    ("tokcost.catalog.hf_weights", "summarize", r"""
>>> t = [TensorMeta("model.layers.0.mlp.experts.0.w1.weight", "BF16", (4, 8), 64),
...      TensorMeta("model.layers.0.self_attn.q_proj.weight", "BF16", (8, 8), 128),
...      TensorMeta("model.layers.1.eh_proj.weight", "BF16", (8, 8), 128)]
>>> s = summarize(t, layers=1, config_dtype="bfloat16")
>>> (s.bytes, s.params, s.expert_bytes, s.skipped_tensors)
(192, 96, 64, 1)
"""),
    ("tokcost.catalog.rules", "<module>", r"""
>>> a = Entry("gpt-x", aliases=(("x", ("aliases", 0)),))
>>> [c.message for c in name_clashes([a, Entry("X"), Entry("gpt-X")])]
["duplicate model id 'gpt-X' ('gpt-x'; case is ignored); ids must be unique", "alias 'x' is already the id of 'X'"]
"""),
    ("tokcost.catalog.validation", "<module>", r"""
>>> from tokcost.catalog.document import Pricing
>>> [i.message for i in check(Pricing, {"input": "cheap", "output": 1})[1]]
["expected a number >= 0 (USD per million tokens), got 'cheap'"]
"""),
    ("tokcost.counting.cuts", "find_boundary", r"""
>>> text = "one two"
>>> text[:find_boundary(text)], text[find_boundary(text):]
('one', ' two')
"""),
    ("tokcost.counting.inputs", "read_input", r"""
>>> import io
>>> got = read_input("-", stdin=io.BytesIO(b"hi \xff"))
>>> got.name, got.text == "hi \ufffd", got.invalid_bytes, got.warnings
('<stdin>', True, 1, ('<stdin>: 1 byte of invalid UTF-8 replaced with U+FFFD',))
"""),
    ("tokcost.errors", "<module>", r"""
>>> e = UsageError(f"{arg('tp', 3)} does not divide kv_heads=8", param="tp", value=3)
>>> (e.param, e.exit_code, str(e))
('tp', 2, 'tp=3 does not divide kv_heads=8')
>>> e.render(lambda name, value: f"--{name} {value}" if value else f"--{name}")
'--tp 3 does not divide kv_heads=8'
"""),
    ("tokcost.memory.blocks", "check_block_size", r"""
>>> check_block_size(100000, max_len=2048)
Traceback (most recent call last):
...
tokcost.errors.UsageError: block_size=100000 is out of range; give 1 to 2,048 tokens: at most max_len=2048, the longest sequence (serving engines use 8 to 128)
"""),
    ("tokcost.memory.cache_policy", "KvQuant", r"""
>>> KvQuant("int4").layer_bytes(1000, kv_heads=2, head_dim=32, full_bytes=4)
149248
"""),
    ("tokcost.memory.kv", "kv_cache_bytes", r"""
>>> from tokcost.catalog import load_catalog
>>> arch = load_catalog().resolve("opt-13b").architecture
>>> kv_cache_bytes(arch, 2048, "fp16")  # PagedAttention §3: ~1.6 GB
1677721600
"""),
    ("tokcost.errors", "Note", r"""
>>> note = Note("set {reserve=SIZE}")
>>> note, note.render(lambda name, value: f"--{name} {value}")
('set reserve=SIZE', 'set --reserve SIZE')
"""),
    ("tokcost.memory.request", "<module>", r"""
>>> r = KvRequest.of(model="llama-3.1-8b", contexts="1k,8k", gpu_memory="80GiB")
>>> r.contexts, r.budget.gpu_memory, r.engine_spec.profile.name
((1000, 8000), 85899345920, 'vllm')
"""),
    ("tokcost.memory.workload", "clip_requests", r"""
>>> clip_requests([Request(10, 5), Request(3000, 5)], 2048)
([Request(prompt_tokens=10, output_tokens=5, n=1, arrival=0), Request(prompt_tokens=2047, output_tokens=1, n=1, arrival=0)], 1)
"""),
    ("tokcost.parts", "<module>", r"""
>>> from dataclasses import dataclass, field
>>> @dataclass(frozen=True)
... class Where:
...     jobs: int = 1
>>> @dataclass(frozen=True)
... class Job(Parts):
...     name: str = ""
...     where: Where = field(default_factory=Where)
>>> Job.of(name="x", jobs=4)
Job(name='x', where=Where(jobs=4))
"""),
    ("tokcost.pricing", "limit_warnings", r"""
>>> gpt4 = ModelEntry(id="gpt-4", context_window=8192, max_output_tokens=8192)
>>> limit_warnings(gpt4, input_tokens=100_000)[0].split(":")[0]
"the prompt (100,000 tokens) exceeds gpt-4's context window of 8,192 tokens"
"""),
    ("tokcost.pricing", "estimate_cost", r"""
>>> rates = Pricing(input=Decimal("2.50"), cached_input=Decimal("1.25"), output=Decimal(10))
>>> entry = ModelEntry(id="gpt-4o-like", pricing=rates)
>>> estimate_cost(entry, input_tokens=1000, cached_tokens=400, output_tokens=200).total
Decimal('0.0040')
"""),
    ("tokcost.reference.attention_stats", "<module>", r"""
>>> import numpy as np
>>> prev = np.zeros((1, 4, 4)); prev[0, 0, 0] = 1; prev[0, [1, 2, 3], [0, 1, 2]] = 1
>>> s = layer_stats(prev, layer=0)[0]
>>> s.name, s.previous_token, s.labels
('L0H0', 1.0, ('previous-token',))
"""),
    ("tokcost.reference.config", "RefConfig", r"""
>>> cfg = RefConfig(layers=4, hidden_size=128, attention_heads=4, kv_heads=2,
...                 head_dim=32, vocab_size=512, context_window=1024)
>>> cfg.group, cfg.ffn_hidden, cfg.kv_bytes_per_token
(2, 384, 2048)
"""),
    ("tokcost.reference.kvpolicy", "int_encode", r"""
>>> x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 1, 4, 16)
>>> b = int_encode(x, bits=4, axis=-1, group=16)
>>> b.nbytes  # 4 tokens x 16 nibbles = 32 B of codes, 4 groups x (2 + 2) B
48
"""),
    ("tokcost.reference.kvpolicy", "IntBlock.join", r"""
>>> x = np.arange(32, dtype=np.float32).reshape(1, 1, 2, 16)
>>> a, b = (int_encode(x[:, :, i:i + 1], bits=8, axis=-1, group=16) for i in (0, 1))
>>> bool(np.allclose(a.join(b).decode(), int_decode(int_encode(x, bits=8, axis=-1,
...      group=16))))
True
"""),
    ("tokcost.reference.model", "Transformer", r"""
>>> from tokcost.reference.config import RefConfig
>>> from tokcost.reference.weights import init_weights
>>> cfg = RefConfig(layers=1, hidden_size=16, attention_heads=2, kv_heads=1,
...                 head_dim=8, vocab_size=11, context_window=32)
>>> Transformer(cfg, init_weights(cfg, seed=0)).forward(np.array([[1, 2, 3]])).logits.shape
(1, 3, 11)
"""),
    ("tokcost.reference.sampling", "<module>", r"""
>>> import numpy as np
>>> d = distribution(np.array([2.0, 1.0, 0.0, -1.0], dtype=np.float32),
...                  SamplingParams(temperature=1.0, top_k=2, seed=0))
>>> [round(float(p), 3) for p in d.probs], d.excluded_by(2), d.size
([0.731, 0.269, 0.0, 0.0], 'top_k', 2)
"""),
    ("tokcost.scale.mapreduce", "<module>", r"""
>>> from tokcost.bpe.pretokenize import PretokenizeSpec
>>> sorted(pretokenize_texts(["a a\na\n"], PretokenizeSpec("gpt2")).items())
[('\n', 2), (' a', 1), ('a', 2)]
"""),
    ("tokcost.units", "parse_count", r"""
>>> parse_count("128k"), parse_count("8Ki"), parse_count("8.03B"), parse_count("1e6")
(128000, 8192, 8030000000, 1000000)
>>> parse_count("8_000"), parse_count("1.5M"), parse_count(1000)
(8000, 1500000, 1000)
"""),
    ("tokcost.units", "parse_size", r"""
>>> parse_size("80GB"), parse_size("1GiB"), parse_size("2 KiB"), parse_size(2**30)
(80000000000, 1073741824, 2048, 1073741824)
>>> parse_size("7240417280B"), parse_size("512 B")
(7240417280, 512)
"""),
    ("tokcost.units", "format_usd", r"""
>>> format_usd(Decimal("1234.5")), format_usd(Decimal("0.465")), format_usd(0.3)
('$1,234.50', '$0.465', '$0.30')
>>> format_usd(Decimal("0.00026265")), format_usd(Decimal("0.0066025")), format_usd(0)
('$0.000263', '$0.00660', '$0.00')
>>> format_usd(Decimal("0.075"), per_million=True)
'$0.075/M'
"""),
    ("tokcost.units", "format_percent", r"""
>>> format_percent(7.94), format_percent(0.0469), format_percent(0.0004)
('7.9%', '0.047%', '0.00040%')
>>> format_percent(0.0996), format_percent(70.588, sign=True), format_percent(-0.004, sign=True)
('0.10%', '+70.6%', '-0.0040%')
"""),
    ("tokcost.app.attention", "<module>", r"""
>>> parse_head("L3H5", layers=4, heads=8)
(3, 5)
"""),
    ("tokcost.app.compare", "<module>", r"""
>>> result = compare(CompareRequest(corpus=Corpus(kinds=["code"]), tokenizers=["cl100k_base"]))
>>> [(g.kind, g.baseline) for g in result.report.groups]
[('code', 'python')]
"""),
    ("tokcost.app.models", "<module>", r"""
>>> show_model("gpt-4o-2024-08-06").to_dict()["id"]
'gpt-4o'
"""),
    ("tokcost.app.models", "_tokenizer_label", r"""
>>> _tokenizer_label(load_catalog().resolve("mistral-nemo"), short=True)
'mistral-common tekken_240718'
"""),
    ("tokcost.bpe.encode", "bpe_merge", r"""
>>> ranks = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"ab": 257, b"aaab": 258}
>>> bpe_merge(b"aaabdaaabac", ranks)
[258, 100, 258, 97, 99]
"""),
    ("tokcost.bpe.train", "train_from_texts", r"""
>>> r = train_from_texts(["aaabdaaabac"], TrainerConfig(vocab_size=259, pattern="gpt2"))
>>> [r.model.decoder[i] for a, b, i in r.model.merges]
[b'aa', b'ab', b'aaab']
"""),
    ("tokcost.bpe.train", "knee", r"""
>>> knee([1000, 2000, 4000, 8000], [0.50, 0.40, 0.37, 0.36])  # cuts 20%, 7.5%, 2.7%
4000
"""),
    ("tokcost.catalog.safetensors_meta", "parse_header", r"""
>>> raw = b'{"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}'
>>> parse_header(raw, "x.safetensors")
(TensorMeta(name='w', dtype='BF16', shape=(2, 3), nbytes=12),)
"""),
    ("tokcost.inflation.measure", "SentencePremiums.of", r"""
>>> p = SentencePremiums.of([2, 3, 9, 4], [2, 2, 3, 1])  # ratios 1, 1.5, 3, 4
>>> p.sentences, p.median, round(p.p95, 6), p.over_2x
(4, 2.25, 3.85, 0.5)
"""),
    ("tokcost.memory.cache_policy", "Eviction", r"""
>>> Eviction("snapkv", budget=256, recent=32).held(3000, prompt=2000)
1288
"""),
    ("tokcost.memory.cache_policy", "parse_evict", r"""
>>> parse_evict("streaming:4+1024")
Eviction(kind='streaming', recent=1024.0, sinks=4, heavy=0, budget=0)
"""),
    ("tokcost.memory.cache_policy", "policy_bytes", r"""
>>> policy_bytes(1000, layers=4, kv_heads=2, head_dim=32, full_bytes=4,
...              quant=KvQuant("int4"))
596992
"""),
    ("tokcost.memory.cache_policy", "parse_policy", r"""
>>> parse_policy("int4:per-token").quant
KvQuant(format='int4', group=64, keys='token', values='token', residual=128)
"""),
    ("tokcost.memory.kv", "pp_stages", r"""
>>> [len(s) for s in pp_stages(61, 4)]
[15, 15, 16, 15]
"""),
    ("tokcost.runner", "plan_shards", r"""
>>> [[(p.path, p.start, p.end) for p in s] for s in plan_shards([("a", 10), ("b", 6)], 8)]
[[('a', 0, 8)], [('a', 8, 10), ('b', 0, 6)]]
"""),
    ("tokcost.units", "parse_money", r"""
>>> parse_money("$0.05"), parse_money("5c"), parse_money("$1.2k"), parse_money(0.25)
(Decimal('0.05'), Decimal('0.05'), Decimal('1200.0'), Decimal('0.25'))
"""),
    ("tokcost.adapters.openai_encodings", "parse_ranks", r"""
>>> parse_ranks(b"YQ== 0\nYg== 1\n", "example")
{b'a': 0, b'b': 1}
"""),
    ("tokcost.adapters.registry", "normalize_spec", r"""
>>> normalize_spec("o200k"), normalize_spec("tiktoken:cl100k"), normalize_spec(" hf:x ")
('tiktoken:o200k_base', 'tiktoken:cl100k_base', 'hf:x')
"""),
    ("tokcost.app.bpe", "tokenizer_spec", r"""
>>> [tokenizer_spec(t) for t in ("o200k_base", "tok.bpe", "x.tiktoken", "m.model")]
['tiktoken:o200k_base', 'bpe:tok.bpe', 'tiktoken:x.tiktoken', 'sp:m.model']
"""),
    ("tokcost.app.bpe", "decode_bpe", r"""
>>> decode_bpe(BPEDecodeRequest(tokenizer="cl100k_base", ids=(15339, 1917))).text
'hello world'
"""),
    ("tokcost.bpe.io", "hf_pattern", r"""
>>> hf_pattern(r"\p{N}{1,3}+|\s")
'(?>\\p{N}{1,3})|\\s'
"""),
    ("tokcost.bpe.pretokenize", "pretokenize", r"""
>>> pretokenize("end<|endoftext|> of", PretokenizeSpec("gpt2", ("<|endoftext|>",)))
['end', '<|endoftext|>', ' of']
"""),
    ("tokcost.catalog.hf_config", "shortest_period", r"""
>>> shortest_period(["sliding"] * 5 + ["full"] + ["sliding"] * 5 + ["full", "sliding"])
('sliding', 'sliding', 'sliding', 'sliding', 'sliding', 'full')
"""),
    ("tokcost.catalog.hf_config", "weights_dtype", r"""
>>> weights_dtype("bfloat16", {"quant_method": "mxfp4"}), weights_dtype("float32", None)
('mxfp4', 'bf16')
"""),
    ("tokcost.catalog.lookup", "Catalog.resolve", r"""
>>> load_catalog().resolve("gpt-4o-2024-08-06").id
'gpt-4o'
"""),
    ("tokcost.catalog.schema", "Attention.layer_kinds", r"""
>>> Attention("sliding", ("sliding", "full"), 4096).layer_kinds(4)
('sliding', 'full', 'sliding', 'full')
"""),
    ("tokcost.catalog.yamltext", "line_of", r"""
>>> line_of(load("a: 1\nb:\n  - {c: 2}\n  - {c: 3}\n", nodes=True), ("b", 1, "c"))
4
"""),
    ("tokcost.errors", "arg", r"""
>>> arg("tp"), arg("tp", 3), arg("allow_special", True)
('{tp}', '{tp=3}', '{allow_special=True}')
"""),
    ("tokcost.errors", "suggest", r"""
>>> suggest("gpt-4p", ["gpt-4o", "gpt-4", "o3"])
' (did you mean: gpt-4, gpt-4o?)'
"""),
    ("tokcost.memory.engines", "engine_class", r"""
>>> engine_class("SGLang").title
'SGLang'
"""),
    ("tokcost.memory.engines.base", "largest", r"""
>>> largest(lambda n: n * n <= 50, 100)
7
"""),
    ("tokcost.memory.kv", "KvDtype.vector_bytes", r"""
>>> KV_DTYPES["int4"].vector_bytes(128)  # 64 B of nibbles + 2 groups x 4 B
72
"""),
    ("tokcost.memory.policies", "make_policy", r"""
>>> make_policy("paged", 100, block_size=16).capacity  # whole blocks only
96
"""),
    ("tokcost.reference.kvpolicy", "fp8_encode", r"""
>>> fp8_decode(fp8_encode(np.array([0.3, -1.0, 500.0, 1e-9], dtype=np.float32))).tolist()
[0.3125, -1.0, 448.0, 0.0]
"""),
    ("tokcost.reference.request", "as_int", r"""
>>> as_int("12k", "n"), as_int(-3, "n"), as_int("-1", "top_k")
(12000, -3, -1)
"""),
    ("tokcost.reference.request", "decode_prompt", r"""
>>> decode_prompt("café ".encode() + bytes([255])).invalid_utf8_bytes
1
"""),
    ("tokcost.runner", "shard_size", r"""
>>> shard_size(200_000_000, 2) == 6_250_000, shard_size(10**12, 100) == MAX_SHARD_BYTES
(True, True)
"""),
    ("tokcost.runner", "LocalRunner", r"""
>>> [r for _, r in LocalRunner(2).map(len, ["ab", "c"])]
[2, 1]
"""),
    ("tokcost.units", "_q", r"""
>>> _q(" 8q "), _q("8\n0")
("'8q'", "'8\\n0'")
"""),
    ("tokcost.units", "_power", r"""
>>> _power(10**15), _power(2**60), _power(2048)
('10^15', '2^60', '2,048')
"""),
    ("tokcost.units", "parse_context_list", r"""
>>> parse_context_list("1k, 8Ki")
[1000, 8192]
"""),
    ("tokcost.units", "parse_percent", r"""
>>> parse_percent("80%"), parse_percent(10), parse_percent("12.5 %")
(Decimal('80'), Decimal('10'), Decimal('12.5'))
"""),
    ("tokcost.units", "parse_fraction", r"""
>>> parse_fraction("0.5"), parse_fraction("50%"), parse_fraction(1)
(Decimal('0.5'), Decimal('0.5'), Decimal('1'))
"""),
    ("tokcost.units", "format_bytes", r"""
>>> format_bytes(131072), format_bytes(819200, binary=False), format_bytes(2**60)
('128 KiB', '819.2 KB', '1 EiB')
"""),
    ("tokcost.units", "round_percent", r"""
>>> round_percent(12.3456), round_percent(0.004712)
(12.35, 0.0047)
"""),
    ("tokcost.units", "spec_label", r"""
>>> spec_label("tiktoken:cl100k_base"), spec_label("hf:org/repo")
('cl100k_base', 'hf:org/repo')
"""),
]


@pytest.mark.parametrize(("module", "name", "examples"), EXAMPLES,
                         ids=[f"{m}.{n}" for m, n, _ in EXAMPLES])
def test_example(module: str, name: str, examples: str) -> None:
    mod = importlib.import_module(module)
    test = doctest.DocTestParser().get_doctest(examples, dict(vars(mod)), f"{module}.{name}",
                                               mod.__file__, 0)
    report: list[str] = []
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
