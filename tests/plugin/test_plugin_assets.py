"""basil.api.plugin_assets: the built plugin and its manifest, served without credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from basil.api import plugin_assets

# The first bytes of an ICO file (reserved 0, type 1, one image): enough for a test of serving it.
ICON = b"\x00\x00\x01\x00\x01\x00"


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>Basil</title>", encoding="utf-8")
    (tmp_path / "client.html").write_text("<!doctype html><title>Basil in vSphere</title>", encoding="utf-8")
    (tmp_path / "plugin.json").write_text(json.dumps({"manifestVersion": "1.0.0"}), encoding="utf-8")
    (tmp_path / "assets" / "main-abc123.js").write_text("console.log(1)", encoding="utf-8")
    (tmp_path / "favicon.ico").write_bytes(ICON)
    (tmp_path.parent / "secret.txt").write_text("not for you", encoding="utf-8")
    monkeypatch.setenv(plugin_assets.DIST_ENV, str(tmp_path))
    return tmp_path


def get(app: Flask, url: str) -> TestResponse:
    """GET *url*, read the whole body and close the response (its file with it)."""
    resp = app.test_client().get(url)
    resp.get_data()
    resp.close()
    return resp


@pytest.fixture
def client() -> Flask:
    app = Flask("test")
    app.register_blueprint(plugin_assets.blueprint)
    return app


def test_manifest_is_json_and_not_cached(client: Flask, dist: Path) -> None:
    resp = get(client, "/plugin/plugin.json")
    assert resp.status_code == 200
    assert resp.mimetype == "application/json"
    assert resp.get_json() == {"manifestVersion": "1.0.0"}
    assert resp.headers["Cache-Control"] == "no-cache"


def test_pages_and_hashed_assets(client: Flask, dist: Path) -> None:
    assert get(client, "/plugin/").get_data(as_text=True).endswith("<title>Basil</title>")
    assert "vSphere" in get(client, "/plugin/client.html").get_data(as_text=True)
    js = get(client, "/plugin/assets/main-abc123.js")
    assert js.status_code == 200
    assert "immutable" in js.headers["Cache-Control"]


def test_unknown_files_and_escapes_are_not_found(client: Flask, dist: Path) -> None:
    assert get(client, "/plugin/nope.js").status_code == 404
    assert get(client, "/plugin/../secret.txt").status_code == 404
    assert get(client, "/plugin/%2e%2e/secret.txt").status_code == 404


def test_an_unbuilt_plugin_says_how_to_build_it(
    client: Flask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(plugin_assets.DIST_ENV, str(tmp_path / "empty"))
    resp = get(client, "/plugin/plugin.json")
    assert resp.status_code == 404
    body = resp.get_json()
    assert body["error"] == "not_found"
    assert "make demo" in body["message"]


def test_default_is_the_checkout_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(plugin_assets.DIST_ENV, raising=False)
    assert plugin_assets.dist_dir() == Path(__file__).resolve().parents[2] / "plugin" / "dist"


def test_favicon_is_served_at_the_root_and_under_plugin(client: Flask, dist: Path) -> None:
    for url in ("/favicon.ico", "/plugin/favicon.ico"):
        resp = get(client, url)
        assert (url, resp.status_code, resp.get_data()) == (url, 200, ICON)


def test_the_built_plugin_carries_its_favicon() -> None:
    icon = Path(__file__).resolve().parents[2] / "plugin" / "public" / "favicon.ico"
    assert icon.read_bytes()[:4] == b"\x00\x00\x01\x00"  # an ICO header, copied into dist/ by the build
