"""Redact secrets (and optionally host names and IP addresses) before anything is sent.

Always removed: API keys (``sk-``, ``hf_``, ``AKIA``, ``ghp_``/``gho_``/``github_pat_``,
``xox?-``), bearer/basic credentials, JWTs, private-key blocks, the values of
``password=``/``token=``/``secret=``/``api_key=`` (also ``:`` and ``--flag value`` forms),
passwords in URLs (``user:pass@``) and e-mail addresses. With ``hosts=True`` also fully
qualified host names and IPv4/IPv6 addresses. Strings in ``keep`` (the reference URLs of the
index) are left exactly as they are.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Iterable

SECRET = "[REDACTED]"
EMAIL = "[EMAIL]"
HOST = "[HOST]"
IP = "[IP]"

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/:@]*):([^\s/@]+)@")
_AUTH = re.compile(
    r"(?i)(\bbearer\s+|\bauthorization\s*[:=]\s*(?:(?:basic|bearer|token|digest)\s+)?)"
    r"(?!\[REDACTED\])([A-Za-z0-9\-._~+/]{6,}=*)")
_TOKENS = [
    re.compile(_NOT_ALNUM_BEFORE + r"sk-[A-Za-z0-9_\-]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"gh[pousr]_[A-Za-z0-9]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"github_pat_[A-Za-z0-9_]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"xox[abposrec]-[A-Za-z0-9\-]{6,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"glpat-[A-Za-z0-9_\-]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"AIza[A-Za-z0-9_\-]{30,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}"),
]
_SECRET_NAMES = (r"password|passwd|passphrase|pwd|token|secret|api[_\-]?key|apikey|"
                 r"access[_\-]?key|private[_\-]?key|credentials?|auth")
# NAME=VALUE, NAME: VALUE, "NAME": "VALUE"; NAME may carry prefixes/suffixes (HF_TOKEN, db_password)
_KEY_VALUE = re.compile(
    r"(?i)" + _NOT_ALNUM_BEFORE
    + r"((?:[A-Za-z0-9]+[_\-.])*(?:" + _SECRET_NAMES + r")(?:[_\-][A-Za-z0-9]+)*)"
    + r"([\"']?\s*[:=]\s*)(?!\[REDACTED\])"
    + r"(\"[^\"\n]*\"?|'[^'\n]*'?|[^\s\"'`]+)")
_FLAG_VALUE = re.compile(
    r"(?i)(--?(?:[a-z0-9]+-)*(?:password|passwd|token|secret|api-key|apikey|auth-token)\s+)"
    r"(?!\[REDACTED\])(?!-)(\S+)")
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?\.)+"
    r"[A-Za-z0-9\-]*[A-Za-z][A-Za-z0-9\-]*")

_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?!\d|\.\d)")
# a candidate: hex digits, colons (at least two) and dots, with an optional zone; validated below
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9_:.])(?=[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:)[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.\-]+)?")
# host names: lowercase or mixed labels ending in a top-level domain that host names use
_TLDS = (
    "com|net|org|io|ai|dev|app|cloud|edu|gov|mil|int|info|biz|co|us|uk|de|fr|jp|cn|kr|ru|br|ca|"
    "au|nl|se|ch|eu|es|it|pl|be|at|dk|no|fi|ie|il|sg|hk|tw|nz|za|mx|ar|cz|hu|pt|gr|tr|ua|vn|th|"
    "id|my|ph|tech|site|online|xyz|systems|network|services|company|host|space|run|"
    "local|localdomain|internal|intranet|lan|corp|home|private|cluster|svc|arpa|test|example|"
    "invalid|localhost")
_FQDN = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:" + _TLDS + r")(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])", re.I)


def _sub_ipv6(m: re.Match[str]) -> str:
    text = m.group(0)
    for core in (text, text.rstrip("."), text.rstrip(".:")):
        if core in ("", "::"):  # the unspecified address names no host
            continue
        try:
            ipaddress.IPv6Address(core)
        except ValueError:
            continue
        return IP + text[len(core):]
    return text


def _redact_piece(text: str, hosts: bool) -> str:
    text = _PRIVATE_KEY.sub(SECRET, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{SECRET}@", text)
    for rx in _TOKENS:
        text = rx.sub(SECRET, text)
    text = _AUTH.sub(lambda m: f"{m.group(1)}{SECRET}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{SECRET}", text)
    text = _FLAG_VALUE.sub(lambda m: f"{m.group(1)}{SECRET}", text)
    text = _EMAIL.sub(EMAIL, text)
    if hosts:
        text = _IPV6.sub(_sub_ipv6, text)
        text = _IPV4.sub(IP, text)
        text = _FQDN.sub(HOST, text)
    return text


def redact(text: str, *, hosts: bool = False, keep: Iterable[str] = ()) -> str:
    """``text`` with secrets (and with ``hosts`` host names and IPs) replaced by placeholders.

    Occurrences of the strings in ``keep`` (e.g. the reference URLs of the index) survive
    unchanged; everything between them is redacted.
    """
    if not text:
        return text
    kept = sorted({k for k in keep if k and k in text}, key=len, reverse=True)
    if not kept:
        return _redact_piece(text, hosts)
    rx = re.compile("|".join(re.escape(k) for k in kept))
    out: list[str] = []
    pos = 0
    for m in rx.finditer(text):
        out.append(_redact_piece(text[pos:m.start()], hosts))
        out.append(m.group(0))
        pos = m.end()
    out.append(_redact_piece(text[pos:], hosts))
    return "".join(out)


def redact_data(value: object, *, hosts: bool = False, keep: Iterable[str] = ()) -> object:
    """Redact every string inside a JSON-like value (dict keys included)."""
    keep = tuple(keep)
    if isinstance(value, str):
        return redact(value, hosts=hosts, keep=keep)
    if isinstance(value, dict):
        return {redact(str(k), hosts=hosts, keep=keep): redact_data(v, hosts=hosts, keep=keep)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v, hosts=hosts, keep=keep) for v in value]
    return value
