"""One redactor over the whole payload: real-looking secrets planted anywhere are never sent.

Table tests name each kind of secret detect-secrets or our rules must catch; the property
test plants one into every free-text field of a real report (title, why, evidence, draft
conclusion, symptom, next checks...) and checks the dry-run messages.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kb.llm import LlmOptions
from kb.llm.flow import dry_run_text
from kb.llm.payload import build_request
from kb.llm.redact import Redactor, redact, redact_data

# (name, text with the secret, the part that must not survive); made-up but well-formed values
TOKENS = [
    ("aws access key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws secret, space separated", "AWS_SECRET_ACCESS_KEY wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("aws secret, bare and random", "creds wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in env",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("hugging face", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz"),
    ("hugging face bare", "login with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 failed",
     "hf_AbCdEfGhIjKlMnOpQrStUvWxYz"),
    ("openai legacy", "key sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst", "T3BlbkFJ"),
    ("openai project", "OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl0Mno", "Abc123Def456Ghi789"),
    ("github classic", "remote https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y",
     "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github fine-grained", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMN",
     "11ABCDEFG0abcdefghijkl"),
    ("gitlab", "token glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"),
    ("slack", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
     ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N"),
    ("jwt bare", "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
     ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("private key block", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
     "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("rsa key block cut off", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75\n", "MIIEpAIBAAKCAQEA75"),
    ("password=", "db password=hunter2", "hunter2"),
    ("pw=", "mysql -u root pw=hunter2", "hunter2"),
    ("json password", '{"password": "c0rrect horse"}', "c0rrect horse"),
    ("flag", "run --api-key Zx9Qw3Er7Ty8Ui", "Zx9Qw3Er7Ty8Ui"),
    ("url password", "postgres://trainer:S3cr3t!@db.internal:5432/runs", "S3cr3t!"),
    ("email", "contact alice.smith@example.com", "alice.smith@example.com"),
    ("home path", "File /home/alice/proj/train.py, line 3", "alice"),
    ("mac home path", "/Users/bob.jones/miniconda3/lib", "bob.jones"),
    ("windows home path", r"C:\Users\carol\AppData\x.py", "carol"),
]
HOSTS = [
    ("ipv4", "connect to 10.1.2.3:29500 failed", "10.1.2.3"),
    ("ipv6", "peer fe80::1ff:fe23:4567:890a%eth0 lost", "fe80::1ff:fe23:4567:890a"),
    ("fqdn", "gpu07.rack3.corp.example.com refused", "gpu07.rack3.corp.example.com"),
    ("short host", "rank 3 on gpu-node-17 timed out", "gpu-node-17"),
    ("nccl prefix", "trainer42:1234:1300 [0] NCCL INFO NET/IB : No device found.", "trainer42"),
    ("hostname=", "hostname=dgx-a100-b host: worker3", "worker3"),
]


@pytest.mark.parametrize("name,text,secret", TOKENS, ids=[t[0] for t in TOKENS])
def test_secret_is_redacted(name, text, secret):
    out = redact(text)
    assert secret not in out, out


@pytest.mark.parametrize("name,text,host", HOSTS, ids=[t[0] for t in HOSTS])
def test_host_is_redacted_on_request(name, text, host):
    assert host not in redact(text, hosts=True)


def test_a_value_learned_in_one_field_is_removed_from_all():
    """The draft conclusion repeats the raw value; it goes because the evidence taught it."""
    data = {"evidence": "token=Zx9Qw3Er7Ty8", "conclusion": "shown by Zx9Qw3Er7Ty8 and gpu-node-17",
            "host": "hostname=trainer42"}
    out = json.dumps(redact_data(data, hosts=True))
    assert "Zx9Qw3Er7Ty8" not in out and "trainer42" not in out and "gpu-node-17" not in out


def test_keep_strings_survive_and_teach_nothing():
    keep = ["https://docs.pytorch.org/docs/stable/data.html", "NCCL_DEBUG=INFO torchrun x.py"]
    r = Redactor(hosts=True, keep=keep)
    text = f"see {keep[0]} then {keep[1]}, on 10.0.0.1"
    r.learn(text)
    out = r.redact(text)
    assert keep[0] in out and keep[1] in out and "10.0.0.1" not in out


# -- the whole payload ------------------------------------------------------------------------
PLANTS = [t[1] for t in TOKENS if "\n" not in t[1]]
#: fields that hold free text (ids, enums and numbers are checked by the model's schema)
_TEXT_KEYS = {"title", "symptom", "why", "condition", "text", "expect", "look_for", "question"}


def _plant(value: Any, secret: str, counter: list[int]) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _TEXT_KEYS and isinstance(v, str):
                counter[0] += 1
                out[k] = f"{v} {secret}"
            elif k == "value":
                counter[0] += 1
                out[k] = f"{v} {secret}"
            elif k in ("conclusion", "warnings") and isinstance(v, list):
                counter[0] += 1
                out[k] = [f"{x} {secret}" for x in v]
            else:
                out[k] = _plant(v, secret, counter)
        return out
    if isinstance(value, list):
        return [_plant(v, secret, counter) for v in value]
    return value


def _must_go(text: str) -> str:
    return next(t[2] for t in TOKENS if t[1] == text)


@pytest.mark.parametrize("hosts", [False, True])
@pytest.mark.parametrize("secret", PLANTS)
def test_secret_planted_in_every_field_is_never_sent(report_hot, kn, secret, hosts):
    from kb.report.model import Report

    counter = [0]
    planted = Report.model_validate(_plant(report_hot.model_dump(), secret, counter))
    assert counter[0] > 10  # titles, whys, evidence, conclusion... all carry it
    req = build_request(planted, kn, redact_hosts=hosts)
    sent = dry_run_text(req, LlmOptions(model="m", dry_run=True, cache_dir=None))
    assert _must_go(secret) not in sent
    assert "[REDACTED]" in sent or "[EMAIL]" in sent or "[USER]" in sent
    for r in req.payload["references"]:  # the knowledge's URLs are untouched
        assert r["url"] in sent
    # the knowledge's commands are sent exactly as without the plants
    assert req.payload["allowed_commands"] == build_request(report_hot, kn).payload["allowed_commands"]


def test_redaction_is_linear_on_adversarial_text():
    """Long runs of the characters the patterns look for finish within a time bound (a
    pattern retried from every position of ``a-a-a-...`` took 157 s on 20 KB before)."""
    import subprocess
    import sys

    code = (
        "from kb.llm.redact import redact, redact_payload\n"
        "n = 100_000\n"
        "for unit in ['a', 'a-', 'a.', 'token=', '@a', '/home/', ':', '1.', 'A_', 'x=y ',\n"
        "             '-----BEGIN PRIVATE KEY-----', 'hostname=', '--token ']:\n"
        "    text = unit * (n // len(unit))\n"
        "    redact(text, hosts=True)\n"
        "    redact_payload({'v': [text]}, hosts=True)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=_ROOT)


_ROOT = str(__import__("pathlib").Path(__file__).resolve().parents[2])
