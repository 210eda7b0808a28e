"""Every Chroma client the stores open (a server by URL, a folder, or in memory) is opened with
telemetry off: nothing of a user's corpus use is reported anywhere, whichever kind of store
(issue #38). Chroma's clients are stood in, so no server is reached."""

import chromadb
import pytest

from activerag.stores import chroma


@pytest.fixture
def opened(monkeypatch):
    calls = []
    for name in ("HttpClient", "EphemeralClient", "PersistentClient"):
        monkeypatch.setattr(chromadb, name,
                            lambda name=name, **kwargs: calls.append((name, kwargs)) or name)
    return calls


@pytest.mark.parametrize("where,kind", [
    ({"url": "https://chroma.example:8443"}, "HttpClient"),
    ({"url": "http://127.0.0.1"}, "HttpClient"),
    ({}, "EphemeralClient"),
    ({"path": "store"}, "PersistentClient"),
])
def test_every_client_is_opened_with_telemetry_off(tmp_path, opened, where, kind):
    path = tmp_path / where["path"] if "path" in where else None
    assert chroma._client(path, where.get("url")) == kind
    [(name, kwargs)] = opened
    assert name == kind
    assert kwargs["settings"].anonymized_telemetry is False


def test_a_server_url_gives_host_port_and_tls(opened):
    chroma._client(None, "https://chroma.example:8443")
    chroma._client(None, "http://10.0.0.2")
    assert [(k["host"], k["port"], k["ssl"]) for _, k in opened] == [
        ("chroma.example", 8443, True), ("10.0.0.2", 8000, False)]
