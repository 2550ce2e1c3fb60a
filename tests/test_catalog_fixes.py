"""Catalog fixes found in review (issue 12, item 5): phi-3-mini's sliding window and
chatgpt-4o-latest's own price. Both read the shipped models.yaml: they pin the entries."""

from __future__ import annotations

import json
from decimal import Decimal

from typer.testing import CliRunner

from tokcost.catalog import Architecture, load_catalog
from tokcost.cli.app import app
from tokcost.memory import kv_bytes_per_token, kv_cache_bytes, kv_layout
from tokcost.pricing import estimate_cost

runner = CliRunner()


def phi3() -> Architecture:
    arch = load_catalog().resolve("phi-3-mini").architecture
    assert arch is not None
    return arch


def test_phi3_mini_slides_every_layer_at_2047() -> None:
    """vLLM gives every Phi-3-mini layer the config's 2,047-token window.

    Per token and layer: 2 (K, V) x 32 kv heads x 96 head_dim x 2 B (bf16) = 12,288 B;
    x 32 layers = 393,216 B (384 KiB), the cost of a token while the context is shorter
    than the window. At the model's 4,096-token context:

    * full attention (the old entry) would hold 4,096 x 393,216 = 1,610,612,736 B (1.5 GiB);
    * the 2,047 window holds min(4,096, 2,047) = 2,047 tokens: 2,047 x 393,216
      = 804,913,152 B (767.6 MiB), about half;
    * paged in 16-token blocks, a window needs ceil((2,047 - 1) / 16) + 1 = 129 blocks
      (the oldest one partly outside it): 129 x 16 x 393,216 = 811,597,824 B (774 MiB),
      where full attention would need ceil(4,096 / 16) = 256 blocks.

    Up to the window nothing changes: 2,047 tokens cost 2,047 x 393,216 either way.
    """
    arch = phi3()
    assert arch.attention.type == "sliding" and arch.attention.window == 2047
    layout = kv_layout(arch, "bf16")
    assert layout.counts == {"sliding": 32}  # every layer, no full ones
    assert kv_bytes_per_token(arch, "bf16") == 2 * 32 * 96 * 2 * 32 == 393_216
    assert kv_cache_bytes(arch, 4096, "bf16") == 2047 * 393_216 == 804_913_152
    assert kv_cache_bytes(arch, 4096, "bf16", block_size=16) == 129 * 16 * 393_216 == 811_597_824
    assert kv_cache_bytes(arch, 2047, "bf16") == 2047 * 393_216
    assert kv_cache_bytes(arch, 1000, "bf16") == 1000 * 393_216
    # the window caps the sequence: 4,096 tokens cost what 2,047 cost
    assert kv_cache_bytes(arch, 4096, "bf16") == kv_cache_bytes(arch, 2047, "bf16")


def test_phi3_mini_kvmem_says_sliding() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "phi-3-mini", "--context", "4Ki",
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    text = json.dumps(json.loads(result.stdout))
    assert "2047" in text  # the window is reported


def test_chatgpt_4o_latest_is_its_own_model() -> None:
    """$5 input and $15 output per million, and no cached-input price.

    1M input + 1M output = $5 + $15 = $20. 10k prompt with 4k cached + 1k output: no
    cached rate, so 10,000 x $5/M + 1,000 x $15/M = $0.05 + $0.015 = $0.065.
    """
    cat = load_catalog()
    latest = cat.resolve("chatgpt-4o-latest")
    assert latest.id == "chatgpt-4o-latest"  # no longer resolves to gpt-4o
    assert "chatgpt-4o-latest" not in cat.resolve("gpt-4o").aliases
    assert latest.pricing is not None and latest.pricing.cached_input is None
    assert latest.pricing.as_of is not None and latest.pricing.source
    assert estimate_cost(latest, input_tokens=1_000_000, output_tokens=1_000_000).total == 20
    cached = estimate_cost(latest, input_tokens=10_000, cached_tokens=4_000, output_tokens=1_000)
    assert cached.total == Decimal("0.065")
    assert "no cached-input price: cached tokens billed as input" in cached.notes
    # gpt-4o keeps its own, lower price
    gpt4o = cat.resolve("gpt-4o")
    assert estimate_cost(gpt4o, input_tokens=1_000_000).total < 5


def test_cli_prices_chatgpt_4o_latest() -> None:
    result = runner.invoke(app, ["price", "-m", "chatgpt-4o-latest", "-i", "1M",
                                 "--output-tokens", "1M"])
    assert result.exit_code == 0, result.output
    assert "chatgpt-4o-latest" in result.stdout and "total: $20.00" in result.stdout
