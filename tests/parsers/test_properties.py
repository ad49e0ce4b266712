"""Properties: no parser raises on arbitrary or damaged input (except facts_json's InputError),
and every result validates as Facts."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.engine.errors import InputError
from kb.facts import Facts
from kb.inputs import load_inputs
from kb.parsers import PARSERS, detect_format, training_log
from tests.parsers._fixtures import FIXTURES

SAMPLES = sorted(p.read_text(encoding="utf-8") for p in FIXTURES.iterdir() if p.suffix != ".md")
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _all_parsers(text: str) -> None:
    detect_format(text)
    for parser in PARSERS:
        try:
            res = parser.parse(io.StringIO(text), "prop")
        except InputError:
            assert parser.NAME == "facts_json"
            continue
        Facts.model_validate(res.facts)
    Facts.model_validate(training_log.parse_stream(io.BytesIO(text.encode("utf-8", "replace")), "p", 16).facts)


@_SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    _all_parsers(data.decode("utf-8", "replace"))


@_SETTINGS
@given(st.text(max_size=1000))
def test_random_text(text: str) -> None:
    _all_parsers(text)


@_SETTINGS
@given(st.sampled_from(SAMPLES), st.data())
def test_mutated_and_truncated_samples(sample: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(sample)))
    pos = data.draw(st.integers(0, max(0, cut - 1)))
    junk = data.draw(st.text(max_size=20))
    _all_parsers(sample[:pos] + junk + sample[pos:cut])


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=500))
def test_loader_raises_only_input_error(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("p") / "in.txt"
    path.write_bytes(data)
    try:
        bundle = load_inputs([str(path)])
    except InputError:
        return
    Facts.model_validate(bundle.facts)
