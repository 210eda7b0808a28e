"""What was learned of a server is forgotten when `serve` starts one on the same URL (it may be
the other engine, or serve another template): its probed abilities, in this process and in the
day-long probe file, and its template layout. Another URL's are kept."""

from __future__ import annotations

import json

from activerag.serving import probe, server, templates
from activerag.serving.probe_requests import Abilities
from activerag.serving.templates import ChatLayout
from activerag.settings import Settings

OLD, OTHER = "http://127.0.0.1:8765/v1", "http://127.0.0.1:8785/v1"


def test_a_server_started_on_a_url_forgets_only_that_url(tmp_path, monkeypatch):
    settings = Settings(home=tmp_path)
    record = {"probed_at": 1.0, "most_n": 5}
    (tmp_path / probe.PROBE_FILE).write_text(json.dumps(
        {f"{OLD} m": record, f"{OLD} ": record, f"{OTHER} m": record}))
    found = Abilities(OLD, "m", frozenset())
    monkeypatch.setitem(probe._seen, (OLD, "m"), found)
    monkeypatch.setitem(probe._seen, (OTHER, "m"), found)
    layout = ChatLayout("m", "", "", "", "", "")
    monkeypatch.setitem(templates._layouts, (OLD, "m"), layout)
    monkeypatch.setitem(templates._layouts, (OTHER, "m"), layout)
    server.forget_server_state(settings, OLD + "/")
    assert json.loads((tmp_path / probe.PROBE_FILE).read_text()) == {f"{OTHER} m": record}
    assert (OLD, "m") not in probe._seen and (OTHER, "m") in probe._seen
    assert (OLD, "m") not in templates._layouts and (OTHER, "m") in templates._layouts
