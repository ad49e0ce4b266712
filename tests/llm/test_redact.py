"""Redaction: planted secrets never survive; reference URLs of the index always do."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kb.llm.payload import build_payload, build_request
from kb.llm.redact import redact
from tests.llm._support import SECRET_KEY

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def _s(alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=lo, max_size=hi)


# (strategy of the planted text, the part of it that must disappear)
SECRETS = st.one_of(
    _s(ALNUM + "_-", 20, 48).map(lambda s: ("sk-" + s, "sk-" + s)),
    _s(ALNUM, 20, 40).map(lambda s: ("sk-proj-" + s, s)),
    _s(ALNUM, 30, 40).map(lambda s: ("hf_" + s, "hf_" + s)),
    _s(UPPER, 16, 16).map(lambda s: ("AKIA" + s, "AKIA" + s)),
    _s(ALNUM, 36, 36).map(lambda s: ("ghp_" + s, "ghp_" + s)),
    _s(ALNUM, 30, 40).map(lambda s: ("github_pat_" + s, s)),
    _s(ALNUM + "-", 10, 40).map(lambda s: ("xoxb-" + s, "xoxb-" + s)),
    _s(ALNUM + "-._~+/", 12, 60).map(lambda s: ("Authorization: Bearer " + s, s)),
    _s(ALNUM + "-._~+/", 12, 60).map(lambda s: ("bearer " + s, s)),
    st.tuples(st.sampled_from(["password", "PASSWORD", "db_password", "token", "HF_TOKEN",
                               "secret", "client_secret", "api_key", "apiKey"]),
              st.sampled_from(["=", ": ", " = ", "\": \""]),
              _s(ALNUM + "!#$%^*()[]{}-_+.,/:;", 8, 30))
    .map(lambda t: (f"{t[0]}{t[1]}{t[2]}", t[2])),
    st.tuples(st.sampled_from(["--password", "--token", "--api-key"]), _s(ALNUM + "!#$%^*_+.", 8, 30))
    .map(lambda t: (f"{t[0]} {t[1]}", t[1])),
    st.tuples(st.sampled_from(["https", "http", "postgres", "redis", "s3"]), _s(ALNUM, 3, 12),
              _s(ALNUM + "!$%^*()_+-.", 8, 30), st.sampled_from(["db.internal", "10.0.0.7", "host"]))
    .map(lambda t: (f"{t[0]}://{t[1]}:{t[2]}@{t[3]}/x", t[2])),
    st.emails().map(lambda e: (e, e)),
)
FILLER = st.lists(st.sampled_from(["loss", "step", "NCCL", "WARN", "rank", "=", ":", "GPU", "0",
                                   "12.5", "(ok)", "[x]", "\n", "\t", "'"]), max_size=8).map(" ".join)
HOSTS = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str).filter(lambda a: a != "::"),  # "::" names no host
    st.tuples(_s(string.ascii_lowercase + string.digits, 1, 12), _s(string.ascii_lowercase, 2, 10),
              st.sampled_from(["com", "net", "org", "internal", "local", "cluster", "io", "ai"]))
    .map(lambda t: f"{t[0]}.{t[1]}.{t[2]}"),
)


@settings(max_examples=300, deadline=None)
@given(before=FILLER, secret=SECRETS, after=FILLER, sep=st.sampled_from([" ", "\n", ", ", "\t", "'"]))
def test_planted_secrets_never_survive(before, secret, after, sep):
    planted, must_go = secret
    assume(must_go not in before + after)
    assume(must_go not in planted.replace(must_go, "", 1))  # e.g. a user name equal to the password
    out = redact(sep.join([before, planted, after]))
    assert must_go not in out


@settings(max_examples=200, deadline=None)
@given(before=FILLER, host=HOSTS, after=FILLER, sep=st.sampled_from([" ", "\n", ", ", "=", "@"]))
def test_hosts_and_ips_are_redacted_on_request(before, host, after, sep):
    assume(host not in before + after)
    text = sep.join([before, host, after])
    assert host not in redact(text, hosts=True)


@pytest.fixture(scope="module")
def ref_urls(kn):
    return sorted(r.url for r in kn.references.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), before=FILLER, after=FILLER, secret=SECRETS, hosts=st.booleans())
def test_reference_urls_survive(ref_urls, data, before, after, secret, hosts):
    url = data.draw(st.sampled_from(ref_urls))
    assume(secret[1] not in secret[0].replace(secret[1], "", 1))
    text = f"{before} see {url} {secret[0]} and {url}. {after}"
    out = redact(text, hosts=hosts, keep=ref_urls)
    assert out.count(url) == text.count(url)
    assert secret[1] not in out or secret[1] in url


def test_reference_urls_survive_without_keep_when_hosts_are_kept(ref_urls):
    text = "\n".join(ref_urls)
    assert redact(text) == text


@pytest.mark.parametrize("text", [
    "max_num_batched_tokens=8192 and token throughput 5000 tok/s",
    "torch.cuda.synchronize in train.py line 12:30:45",
    "NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO",
    "DataLoader(ds, num_workers=8, prefetch_factor=4, persistent_workers=True)",
])
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_knowledge_text_is_not_changed(report_en, kn):
    """Only user data is redacted: every knowledge string reaches the model as written."""
    payload = build_payload(report_en, kn)
    for f in payload["findings"]:
        for x in f["fixes"] + f["verify"]:
            assert redact(x["command"]) == x["command"]
            assert redact(x["text"]) == x["text"]


def test_payload_redacts_evidence(report_hot, kn):
    for hosts in (False, True):
        req = build_request(report_hot, kn, redact_hosts=hosts)
        sent = json.dumps(req.messages, ensure_ascii=False)
        assert SECRET_KEY not in sent and "[REDACTED]" in sent
        assert ("node7.cluster.example.com" in sent) is not hosts
        for r in req.payload["references"]:
            assert r["url"] in sent
