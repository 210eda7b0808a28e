"""A deployment's limits on what a run's context may name: ACTIVERAG_ALLOWED_BASE_URLS for the
LM endpoints, ACTIVERAG_STORE_ROOT for the folders; unset, nothing is limited (issue #19,
item 15)."""

import os

import pytest

from activerag.context import FlareContext
from activerag.errors import SettingError
from activerag.graphs.flare import graph as flare_graph
from activerag.nodes.app.context import AppContext
from activerag.nodes.app.steps import fb_context
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext

ALLOWED = "http://127.0.0.1:8000, https://lm.internal/v1"
LIGHT = "http://127.0.0.1:8000/v1"


@pytest.fixture
def allowlist(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_ALLOWED_BASE_URLS", ALLOWED)


@pytest.fixture
def root(monkeypatch, tmp_path):
    (tmp_path / "root" / "store").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    monkeypatch.setenv("ACTIVERAG_STORE_ROOT", str(tmp_path / "root"))
    return tmp_path / "root"


def test_without_the_variables_any_endpoint_and_folder_is_taken(monkeypatch):
    monkeypatch.delenv("ACTIVERAG_ALLOWED_BASE_URLS", raising=False)
    monkeypatch.delenv("ACTIVERAG_STORE_ROOT", raising=False)
    ctx = FBRagContext(base_url="http://anywhere:9/v1", light_base_url="http://else:1/v1",
                       store_dir="/etc", query_encoder="../x")
    assert (ctx.base_url, ctx.store_dir) == ("http://anywhere:9/v1", "/etc")


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000", "https://lm.internal/v1",
    "https://LM.internal:443/v1/", "https://lm.internal/v1/deeper",
])
def test_an_endpoint_under_an_allowed_prefix_is_taken(allowlist, url):
    assert FlareContext(base_url=url).base_url == url


@pytest.mark.parametrize("url", [
    "http://evil.example/v1",
    "http://127.0.0.1:8001/v1",  # another port
    "http://127.0.0.1:80001/v1",  # a string prefix, not the same port
    "http://127.0.0.1:8000@evil.example/v1",  # the allowed text as user info
    "http://127.0.0.1:8000\\@evil.example/v1",
    "https://127.0.0.1:8000/v1",  # another scheme
    "https://lm.internal/v10",  # a string prefix, not the same path
    "https://lm.internal/v1/../admin",
    "https://lm.internal/v1/%2e%2e/admin",
    "https://lm.internal.evil.example/v1",
    "",
])
def test_an_endpoint_outside_the_allowlist_is_refused(allowlist, url):
    with pytest.raises(SettingError, match=r"^base_url .*ACTIVERAG_ALLOWED_BASE_URLS"):
        ReplugContext(base_url=url)


def test_fb_rags_light_endpoint_is_checked_too(allowlist):
    with pytest.raises(SettingError, match="^light_base_url 'http://evil.example/v1'"):
        FBRagContext(base_url=LIGHT, light_base_url="http://evil.example/v1")
    assert FBRagContext(base_url=LIGHT, light_base_url=LIGHT).light_base_url == LIGHT


def test_the_apps_fb_settings_sent_as_json_are_checked(allowlist):
    app = AppContext(base_url=LIGHT, fb={"base_url": LIGHT, "light_base_url": "http://x:1/v1"})
    with pytest.raises(SettingError, match="light_base_url"):
        fb_context(app)


async def test_a_client_context_is_refused_before_any_request(allowlist):
    """The dev server hands a client's JSON context to the graph, which builds its dataclass."""
    with pytest.raises(SettingError, match="^base_url 'http://evil.example/v1'"):
        await flare_graph.ainvoke({"question": "Where was Ilsa Brandt born?"},
                                  context={"base_url": "http://evil.example/v1"})


def test_a_malformed_allowlist_names_its_variable(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_ALLOWED_BASE_URLS", "127.0.0.1:8000")
    with pytest.raises(SettingError, match="^ACTIVERAG_ALLOWED_BASE_URLS holds '127.0.0.1:8000'"):
        FlareContext(base_url=LIGHT)


def test_folders_inside_the_store_root_are_taken(root):
    ctx = ReplugContext(store_dir=str(root / "store"), query_encoder=str(root / "enc"))
    assert ctx.store_dir == str(root / "store")
    assert FlareContext(store_dir="").store_dir == ""  # the deployment's own default


@pytest.mark.parametrize("field", ["store_dir", "query_encoder"])
@pytest.mark.parametrize("where", ["/etc", "{root}/../outside", "{root}/store/../../outside",
                                   "{root}/link", "{root}/link/deeper", "{root}x"])
def test_folders_outside_the_store_root_are_refused(root, field, where):
    os.symlink(root.parent / "outside", root / "link")
    value = where.format(root=root)
    with pytest.raises(SettingError, match=rf"^{field} '.*' lies outside ACTIVERAG_STORE_ROOT"):
        FlareContext(**{field: value})


def test_a_relative_folder_is_resolved_before_it_is_checked(root, monkeypatch):
    monkeypatch.chdir(root / "store")
    assert FlareContext(store_dir=".").store_dir == "."
    with pytest.raises(SettingError, match="outside ACTIVERAG_STORE_ROOT"):
        FlareContext(store_dir="../..")
