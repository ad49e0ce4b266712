"""Every torch_compile sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('compile_cache_limit_rank.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 0, 'cache_limit_hit': True}}),
    ('compile_cache_limit_windows.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 0, 'cache_limit_hit': True}}),
    ('compile_explain.txt', 'torch_compile', {'compile': {'graph_breaks': 1, 'graph_break_reasons': {'control_flow': 1}, 'recompiles': 0}}),
    ('compile_explain_old.txt', 'torch_compile', {'compile': {'graph_breaks': 2, 'graph_break_reasons': {'print': 1, 'control_flow': 1}, 'recompiles': 0}}),
    ('compile_gb_2023.log', 'torch_compile', {'compile': {'graph_breaks': 1, 'graph_break_reasons': {'other': 1}, 'recompiles': 0}}),
    ('compile_gb_2024.log', 'training_log', {'compile': {'graph_breaks': 1, 'graph_break_reasons': {'other': 1}, 'recompiles': 0}}),
    ('compile_gb_newest.log', 'torch_compile', {'compile': {'graph_breaks': 1, 'graph_break_reasons': {'other': 1}, 'recompiles': 0}}),
    ('compile_gb_structured.log', 'torch_compile', {'compile': {'graph_breaks': 1, 'graph_break_reasons': {'unsupported': 1}, 'recompiles': 0}}),
    ('compile_recompile_limit_fullgraph.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 0, 'cache_limit_hit': True, 'fullgraph': True}}),
    ('compile_recompiles_2023.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 1, 'recompile_reasons': {'other': 1}}}),
    ('compile_recompiles_2025.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 1, 'recompile_reasons': {'shape': 1}}}),
    ('compile_recompiles_windows.log', 'torch_compile', {'compile': {'graph_breaks': 0, 'recompiles': 1, 'recompile_reasons': {'shape': 1}}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


@pytest.mark.parametrize(("reason", "category"), [
    ("call_function BuiltinVariable(print) [ConstantVariable(str)] {}", "print"),
    ("Logger not supported for non-export cases", "print"),
    ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "host_sync"),
    ("call_method TensorVariable() tolist [] {}", "host_sync"),
    ("Data-dependent branching", "control_flow"),
    ("generic_jump TensorVariable()", "control_flow"),
    ("Unsupported context manager", "control_flow"),
    ("generic_jump SymNodeVariable()", "shape_control_flow"),
    ("Attempted to call function marked as skipped", "unsupported"),
    ("Call to `torch._dynamo.graph_break()`", "other"),
    ("something new", "other"),
])
def test_graph_break_categories(reason: str, category: str) -> None:
    from kb.parsers.torch_compile import GRAPH_BREAK_CATEGORIES, categorize_break

    assert categorize_break(reason) == category
    assert category in GRAPH_BREAK_CATEGORIES


def test_recompile_dtype_guard() -> None:
    from kb.parsers import torch_compile

    lines = [
        "Recompiling function forward in m.py:3\n",
        "    triggered by the following guard failure(s):\n",
        "    - 0/0: tensor 'L['x']' dtype mismatch. expected Half, actual Float\n",
    ]
    res = torch_compile.parse(lines, "t")
    assert res.facts == {"compile": {"graph_breaks": 0, "recompiles": 1, "recompile_reasons": {"dtype": 1}}}
