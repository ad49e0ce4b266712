"""The one redactor for everything that leaves the machine (the LLM payload).

Always removed:

* secrets found by detect-secrets' provider plugins (AWS, GitHub, GitLab, OpenAI, Slack,
  Stripe, Twilio, JWT, npm, PyPI, ... ; used when the ``llm`` extra is installed) and by the
  rules below, which also cover what it has no plugin for (``hf_`` Hugging Face tokens,
  ``sk-proj-``, Google ``AIza``, ``github_pat_``);
* high-entropy tokens (detect-secrets' Shannon entropy: base64-like >= 24 characters mixing
  cases and digits above 4.5 bits, hex >= 32 characters above 3.0 bits);
* private-key blocks, bearer/basic credentials, passwords in URLs (``user:pass@``);
* the values of secret-named keys in every form: ``password=``, ``pw=``, ``token:``,
  ``"api_key": "..."``, ``--token VALUE``, and env-style names followed by a space
  (``AWS_SECRET_ACCESS_KEY wJalr...``);
* e-mail addresses and the user name in home-directory paths (``/home/<user>/``,
  ``/Users/<user>/``, ``C:\\Users\\<user>\\``, ``~user/``).

With ``hosts=True`` also IPv4/IPv6 addresses, fully qualified host names, and short host
names: hyphenated names ending in a number (``gpu-node-17``), ``host=``/``hostname:`` values
and the host prefix of NCCL log lines (``node7:1234:1234 [0] NCCL``).

:class:`Redactor` works in two passes over a whole document (:func:`redact_payload`): it first
*learns* every secret value and host name anywhere in it, then removes each learned value
everywhere, so a value that is recognisable in one field (``token=abc...`` in the evidence)
is also removed where it appears bare (the draft conclusion repeating it). Strings in ``keep``
(the reference URLs and commands of the knowledge) survive exactly as written. Every pattern
is linear in the length of the text: repetitions are bounded (``{0,6}``, not ``*``) wherever a
failed match could otherwise be retried from every position of a long run such as ``a-a-a-``.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any, Callable, Iterable

SECRET = "[REDACTED]"
EMAIL = "[EMAIL]"
HOST = "[HOST]"
IP = "[IP]"
USER = "[USER]"

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|\Z)", re.S)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://[^\s/:@]{0,256}):([^\s/@]+)@")
_AUTH = re.compile(
    r"(?i)(\bbearer\s+|\bauthorization\s*[:=]\s*(?:(?:basic|bearer|token|digest)\s+)?)"
    r"(?!\[REDACTED\])([A-Za-z0-9\-._~+/]{6,}=*)")
_TOKENS = [
    re.compile(_NOT_ALNUM_BEFORE + r"sk-[A-Za-z0-9_\-]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|A3T[A-Z0-9]|ABIA|ACCA)[A-Z0-9]{12,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"gh[pousr]_[A-Za-z0-9]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"github_pat_[A-Za-z0-9_]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"xox[abposrec]-[A-Za-z0-9\-]{6,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"glpat-[A-Za-z0-9_\-]{16,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"AIza[A-Za-z0-9_\-]{30,}"),
    re.compile(_NOT_ALNUM_BEFORE + r"eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}"),
]
_SECRET_NAMES = (r"password|passwd|passphrase|pwd|pw|pass|token|secret|api[_\-]?key|apikey|"
                 r"access[_\-]?key|private[_\-]?key|credentials?|auth|session[_\-]?key")
# NAME=VALUE, NAME: VALUE, "NAME": "VALUE"; NAME may carry prefixes/suffixes (HF_TOKEN, db_password)
_KEY_VALUE = re.compile(
    r"(?i)" + _NOT_ALNUM_BEFORE
    + r"((?:[A-Za-z0-9]{1,30}[_\-.]){0,6}(?:" + _SECRET_NAMES + r")(?:[_\-][A-Za-z0-9]{1,30}){0,6})"
    + r"([\"']?[ \t]*[:=][ \t]*)(?!\[REDACTED\])"
    + r"(\"[^\"\n]*\"?|'[^'\n]*'?|[^\s\"'`]+)")
# ENV_STYLE_NAME VALUE (a space as separator): only upper-case names, so prose ("token
# throughput 5000") is left alone, and only credential-looking values (8+ characters)
_ENV_SPACE_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])((?:[A-Z0-9]{1,30}_){0,6}(?:PASSWORD|PASSWD|PASSPHRASE|TOKEN|SECRET|API_?KEY|"
    r"ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)(?:_[A-Z0-9]{1,30}){0,6})([ \t]{1,8})(?!\[REDACTED\])"
    r"([A-Za-z0-9+/=_\-.~]{8,})")
_FLAG_VALUE = re.compile(
    r"(?i)(--?(?:[a-z0-9]{1,30}-){0,6}(?:password|passwd|token|secret|api-key|apikey|auth-token)[ \t]{1,8})"
    r"(?!\[REDACTED\])(?!-)(\S+)")
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-])[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]{1,64}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,10}"
    r"[A-Za-z0-9\-]{0,62}[A-Za-z][A-Za-z0-9\-]{0,62}")
_HOME_UNIX = re.compile(r"(?<![\w.])(/home/|/Users/|/export/home/|/var/home/)(?!\[USER\])"
                        r"([A-Za-z0-9._\-$@]{1,64})")
_HOME_WIN = re.compile(r"(?i)(?<![A-Za-z])([A-Z]:\\Users\\)(?!\[USER\])([^\\\s/]{1,64})")
_HOME_TILDE = re.compile(r"(?<![\w/~])(~)([A-Za-z_][A-Za-z0-9._\-]{0,31})(?=/)")
_BASE64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,2}")
_HEX_TOKEN = re.compile(r"(?<![A-Za-z0-9])(?:0x)?[0-9a-fA-F]{32,}(?![A-Za-z0-9])")

_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    r"(?!\d|\.\d)")
# a candidate: hex digits, colons (at least two) and dots, with an optional zone; validated below
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9_:.])(?=[0-9A-Fa-f.]{0,45}:[0-9A-Fa-f.]{0,45}:)[0-9A-Fa-f:.]{2,60}"
    r"(?:%[A-Za-z0-9_.\-]{1,30})?")
# host names: lowercase or mixed labels ending in a top-level domain that host names use
_TLDS = (
    "com|net|org|io|ai|dev|app|cloud|edu|gov|mil|int|info|biz|co|us|uk|de|fr|jp|cn|kr|ru|br|ca|"
    "au|nl|se|ch|eu|es|it|pl|be|at|dk|no|fi|ie|il|sg|hk|tw|nz|za|mx|ar|cz|hu|pt|gr|tr|ua|vn|th|"
    "id|my|ph|tech|site|online|xyz|systems|network|services|company|host|space|run|"
    "local|localdomain|internal|intranet|lan|corp|home|private|cluster|svc|arpa|test|example|"
    "invalid|localhost")
_FQDN = re.compile(
    r"(?<![A-Za-z0-9_\-.])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,20}"
    r"(?:" + _TLDS + r")(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])", re.I)
# short host names: hyphenated and ending in a number, as cluster nodes are named
_SHORT_HOST = re.compile(
    r"(?<![A-Za-z0-9_\-./])[A-Za-z][A-Za-z0-9]{0,30}(?:-[A-Za-z0-9]{1,30}){0,6}-\d{1,6}"
    r"(?![A-Za-z0-9_\-]|\.\d)")
# host names named by their context, whatever they look like
_HOST_CONTEXT = re.compile(
    r"(?i)\b(?:host(?:name)?|node(?:name)?|server|machine|master_addr)\b[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"([A-Za-z][A-Za-z0-9\-_]{0,62}(?:\.[A-Za-z0-9\-_]{1,63}){0,10})")
_NCCL_PREFIX = re.compile(r"(?m)^[ \t]*([A-Za-z][A-Za-z0-9\-_.]{0,62}):\d+:\d+ \[\d+\]")
_HOST_STOPWORDS = frozenset({"localhost", "none", "null", "unknown", "true", "false", "auto"})
# first labels of hyphenated names that are models, toolkits or standards, not machines
_NOT_HOSTS = frozenset({
    "cuda", "cudnn", "nccl", "llama", "resnet", "gpt", "qwen", "mistral", "mixtral", "gemma",
    "phi", "opt", "bert", "vit", "t5", "falcon", "deepseek", "python", "torch", "sm", "fp", "bf",
    "int", "uint", "float", "utf", "iso", "rfc", "cve", "x86", "arm", "aarch64", "ubuntu",
    "debian", "rhel", "centos", "rocky", "top", "step", "epoch", "rank", "tp", "pp", "dp", "ep"})


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


@lru_cache(maxsize=1)
def _detect_secrets_plugins() -> tuple[Any, ...]:
    """detect-secrets' provider plugins (regex based), or () without the ``llm`` extra.

    The keyword and high-entropy plugins are used through :func:`_entropy` and our own
    key/value rules (their stock forms need quotes or a known file type); the private-key
    plugin only finds the header line, the IP plugin only public IPv4: both are covered here.
    """
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError:
        return ()
    skip = {"PrivateKeyDetector", "IPPublicDetector"}
    out = []
    for cls in get_mapping_from_secret_type_to_class().values():
        if issubclass(cls, RegexBasedDetector) and cls.__name__ not in skip:
            try:
                out.append(cls())
            except TypeError:  # pragma: no cover - a plugin that needs configuration
                continue
    return tuple(out)


@lru_cache(maxsize=1)
def _entropy() -> Callable[[str, str], float]:
    """detect-secrets' Shannon entropy (``kind`` "b64" or "hex"); a local one without it."""
    try:
        from detect_secrets.plugins.high_entropy_strings import (
            Base64HighEntropyString, HexHighEntropyString)
    except ImportError:
        import math
        from collections import Counter

        def plain(data: str, kind: str) -> float:
            n = len(data)
            return -sum(c / n * math.log2(c / n) for c in Counter(data).values()) if n else 0.0

        return plain
    b64, hexa = Base64HighEntropyString(), HexHighEntropyString()
    return lambda data, kind: (b64 if kind == "b64" else hexa).calculate_shannon_entropy(data)


#: detect-secrets' patterns are written for lines of code and some are quadratic on long runs
#: (``/home/`` x 30,000 takes 11 s in one of them); they see at most this many characters at a
#: time, in overlapping windows, so a secret (well under the overlap) is always seen whole.
_PLUGIN_WINDOW = 1024
_PLUGIN_OVERLAP = 256
#: a string of the payload longer than this is cut (at a space) before it is redacted: the
#: model needs no 100 KB log line, and every pattern then runs on bounded input
MAX_FIELD_CHARS = 4000
TRUNCATED = " …[truncated]"


def _windows(text: str) -> Iterable[str]:
    for line in text.splitlines() or [text]:
        if len(line) <= _PLUGIN_WINDOW:
            yield line
            continue
        step = _PLUGIN_WINDOW - _PLUGIN_OVERLAP
        for start in range(0, len(line) - _PLUGIN_OVERLAP, step):
            yield line[start:start + _PLUGIN_WINDOW]


def _plugin_values(text: str) -> set[str]:
    """Every secret value detect-secrets' provider plugins find in ``text``."""
    found: set[str] = set()
    plugins = _detect_secrets_plugins()
    if not plugins:
        return found
    for piece in _windows(text):
        for plugin in plugins:
            try:
                found.update(v for v in plugin.analyze_string(piece) if v and len(v) >= 4)
            except Exception:  # noqa: BLE001 - a plugin bug must not stop redaction
                continue
    return found


def clip(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """``text`` cut to about ``limit`` characters at a space, so no token is cut in half
    (half a key would no longer match its pattern); one huge token is dropped whole."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    cut = max(cut, text.rfind("\n", 0, limit))
    return (text[:cut] if cut > 0 else "") + TRUNCATED


def _high_entropy(text: str) -> list[str]:
    """Random-looking tokens: API keys without a known prefix, AWS secret keys, hex secrets."""
    ent = _entropy()
    out: list[str] = []
    for m in _BASE64_TOKEN.finditer(text):
        tok = m.group(0)
        if (any(c.isupper() for c in tok) and any(c.islower() for c in tok)
                and any(c.isdigit() for c in tok) and ent(tok.rstrip("="), "b64") > 4.5):
            out.append(tok)
    for m in _HEX_TOKEN.finditer(text):
        tok = m.group(0)
        body = tok[2:] if tok.startswith("0x") else tok
        if re.search(r"[a-fA-F]", body) and re.search(r"\d", body) and ent(body, "hex") > 3.0:
            out.append(tok)
    return out


def _credential_like(value: str) -> bool:
    """Worth removing wherever it repeats: 6+ characters with a digit, a symbol or mixed case.
    ("auth=enabled" redacts "enabled" in place, but does not erase every "enabled")."""
    if len(value) < 6 or SECRET in value:
        return False
    return (any(c.isdigit() for c in value) or not value.isalnum()
            or (any(c.isupper() for c in value) and any(c.islower() for c in value)))


def _sub_group1(placeholder: str) -> Callable[[re.Match[str]], str]:
    """A substitution that replaces only group 1 of the match (the host after its label)."""
    def sub(m: re.Match[str]) -> str:
        if m.group(1).lower() in _HOST_STOPWORDS or m.group(1) == placeholder.strip("[]"):
            return m.group(0)
        start, end = m.span(1)
        base = m.start(0)
        whole = m.group(0)
        return whole[: start - base] + placeholder + whole[end - base:]
    return sub


class Redactor:
    """Learn the secrets and host names of a document, then remove them everywhere in it."""

    def __init__(self, *, hosts: bool = False, keep: Iterable[str] = ()) -> None:
        self.hosts = hosts
        self.keep = sorted({k for k in keep if k}, key=len, reverse=True)
        self._keep_rx = re.compile("|".join(re.escape(k) for k in self.keep)) if self.keep else None
        #: values found anywhere (secret values, host names), removed wherever they appear
        self.learned: dict[str, str] = {}
        self._learned_rx: re.Pattern[str] | None = None

    # -- learning ----------------------------------------------------------------------------
    def _learn(self, value: str, placeholder: str) -> None:
        value = value.strip().strip("\"'")
        if len(value) >= 4 and value not in self.learned and SECRET not in value:
            self.learned[value] = placeholder
            self._learned_rx = None

    def learn(self, text: str) -> None:
        """Record the secret values (and with ``hosts`` the host names) found in ``text``."""
        for piece in self._pieces(text):
            for value in _plugin_values(piece):
                self._learn(value, SECRET)
            for value in _high_entropy(piece):
                self._learn(value, SECRET)
            for rx, group in ((_KEY_VALUE, 3), (_ENV_SPACE_VALUE, 3), (_FLAG_VALUE, 2),
                              (_URL_PASSWORD, 2), (_AUTH, 2)):
                for m in rx.finditer(piece):
                    val = m.group(group)
                    if _credential_like(val.strip("\"'")):
                        self._learn(val, SECRET)
            if self.hosts:
                for rx in (_HOST_CONTEXT, _NCCL_PREFIX):
                    for m in rx.finditer(piece):
                        name = m.group(1).rstrip(".")
                        if name.lower() not in _HOST_STOPWORDS and re.search(r"[\d.\-]", name):
                            self._learn(name, HOST)

    def learn_data(self, value: object) -> None:
        """:meth:`learn` every string (and dict key) inside a JSON-like value."""
        for s in _strings(value):
            self.learn(s)

    # -- removing ----------------------------------------------------------------------------
    def _pieces(self, text: str) -> list[str]:
        """The parts of ``text`` between the ``keep`` strings (which teach nothing)."""
        return self._keep_rx.split(text) if self._keep_rx is not None else [text]

    def redact(self, text: str) -> str:
        """``text`` with every secret (and with ``hosts`` every host) replaced by placeholders;
        the ``keep`` strings are left exactly as they are."""
        if not text:
            return text
        if self._keep_rx is None:
            return self._redact_piece(text)
        out: list[str] = []
        pos = 0
        for m in self._keep_rx.finditer(text):
            out.append(self._redact_piece(text[pos:m.start()]))
            out.append(m.group(0))
            pos = m.end()
        out.append(self._redact_piece(text[pos:]))
        return "".join(out)

    def redact_data(self, value: object) -> object:
        """Redact every string inside a JSON-like value (dict keys included)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(str(k)): self.redact_data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_data(v) for v in value]
        return value

    def _learned_pattern(self) -> re.Pattern[str] | None:
        if self._learned_rx is None and self.learned:
            values = sorted(self.learned, key=len, reverse=True)
            self._learned_rx = re.compile("|".join(re.escape(v) for v in values))
        return self._learned_rx

    def _redact_piece(self, text: str) -> str:
        text = _PRIVATE_KEY.sub(SECRET, text)
        learned = self._learned_pattern()
        if learned is not None:
            text = learned.sub(lambda m: self.learned[m.group(0)], text)
        for value in sorted(_plugin_values(text), key=len, reverse=True):
            text = text.replace(value, SECRET)
        for value in sorted(set(_high_entropy(text)), key=len, reverse=True):
            text = text.replace(value, SECRET)
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{SECRET}@", text)
        for rx in _TOKENS:
            text = rx.sub(SECRET, text)
        text = _AUTH.sub(lambda m: f"{m.group(1)}{SECRET}", text)
        text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{SECRET}", text)
        text = _ENV_SPACE_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{SECRET}", text)
        text = _FLAG_VALUE.sub(lambda m: f"{m.group(1)}{SECRET}", text)
        text = _EMAIL.sub(EMAIL, text)
        for rx in (_HOME_UNIX, _HOME_WIN, _HOME_TILDE):
            text = rx.sub(lambda m: m.group(1) + USER, text)
        if self.hosts:
            text = _IPV6.sub(_sub_ipv6, text)
            text = _IPV4.sub(IP, text)
            text = _FQDN.sub(HOST, text)
            text = _SHORT_HOST.sub(
                lambda m: m.group(0) if m.group(0).split("-")[0].lower() in _NOT_HOSTS else HOST,
                text)
            text = _HOST_CONTEXT.sub(_sub_group1(HOST), text)
            text = _NCCL_PREFIX.sub(_sub_group1(HOST), text)
        return text


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def redact(text: str, *, hosts: bool = False, keep: Iterable[str] = ()) -> str:
    """``text`` with secrets (and with ``hosts`` host names and IPs) replaced by placeholders.

    Occurrences of the strings in ``keep`` (e.g. the reference URLs of the index) survive
    unchanged; everything between them is redacted. Values learned in ``text`` itself are
    removed wherever they repeat in it.
    """
    if not text:
        return text
    r = Redactor(hosts=hosts, keep=keep)
    r.learn(text)
    return r.redact(text)


def redact_data(value: object, *, hosts: bool = False, keep: Iterable[str] = ()) -> object:
    """Redact every string inside a JSON-like value (dict keys included), learning from all of
    it first, so a secret recognised in one string is removed from every other string too."""
    r = Redactor(hosts=hosts, keep=keep)
    r.learn_data(value)
    return r.redact_data(value)


def _clip_data(value: object, keep: frozenset[str]) -> object:
    if isinstance(value, str):
        return value if value in keep else clip(value)
    if isinstance(value, dict):
        return {k: _clip_data(v, keep) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clip_data(v, keep) for v in value]
    return value


def redact_payload(payload: dict[str, Any], *, hosts: bool = False,
                   keep: Iterable[str] = ()) -> dict[str, Any]:
    """The whole LLM payload through one :class:`Redactor` (what is sent is what this returns).

    Strings longer than :data:`MAX_FIELD_CHARS` (except the ``keep`` ones) are cut first."""
    keep = tuple(keep)
    out = redact_data(_clip_data(payload, frozenset(keep)), hosts=hosts, keep=keep)
    assert isinstance(out, dict)
    return out
