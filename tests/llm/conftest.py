"""Fixtures of the LLM-layer tests: real reports from the bundled knowledge, well-formed
answers built from them, and a guard that fails any connection off 127.0.0.1."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.llm._support import DATALOADER_FACTS, HOT_FACTS

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", None, ""}


def _local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    return host in LOCAL_HOSTS


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection or name lookup off the loopback fails the test."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self, address):
        if not _local(address):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _local(address):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        h = host.decode() if isinstance(host, bytes) else host
        if h not in LOCAL_HOSTS:
            raise AssertionError(f"name lookup attempted: {h!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield


@pytest.fixture(scope="session")
def report_en(kn):
    import kb

    return kb.diagnose(DATALOADER_FACTS, knowledge=kn)


@pytest.fixture(scope="session")
def report_zh(kn):
    import kb

    return kb.diagnose(DATALOADER_FACTS, knowledge=kn, lang="zh")


@pytest.fixture(scope="session")
def report_hot(kn):
    import kb

    return kb.diagnose(HOT_FACTS, knowledge=kn)


@pytest.fixture
def litellm(monkeypatch):
    """litellm, loaded the way kb loads it (network side effects off), or skip.

    The environment must be set before the first import: a bare ``import litellm`` fetches
    the model cost map from GitHub (the no-network guard of conftest.py catches that)."""
    from kb.llm.client import LITELLM_ENV, load_litellm

    for k, v in LITELLM_ENV.items():
        monkeypatch.setenv(k, v)
    pytest.importorskip("litellm")
    return load_litellm()
