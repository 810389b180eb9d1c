"""The vSphere Client plugin's files: the manifest (``/plugin/plugin.json``) and the UI under ``/plugin/``.

vCenter fetches ``plugin.json`` from the URL the plugin was registered with and then proxies the
pages; both are public (no Basil credentials: the UI authenticates its API calls itself). The files
come from the directory named by ``BASIL_PLUGIN_DIST``, else the copy an installed wheel carries
(``basil/data/plugin``, see setup.py), else the plugin's build output ``plugin/dist`` in a source
checkout (built by ``make demo`` and ``make test``).
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Blueprint, Response, abort, jsonify, send_from_directory
from flask.blueprints import BlueprintSetupState

DIST_ENV = "BASIL_PLUGIN_DIST"

# service/basil/api/plugin_assets.py -> the checkout's plugin/dist
_SOURCE_DIST = Path(__file__).resolve().parents[3] / "plugin" / "dist"
# basil/data/plugin: the build a wheel carries (absent from a source checkout)
_PACKAGED_DIST = Path(__file__).resolve().parents[1] / "data" / "plugin"

blueprint = Blueprint("plugin_assets", __name__, url_prefix="/plugin")


def dist_dir() -> Path:
    """Where the built plugin is: $BASIL_PLUGIN_DIST, else a wheel's copy, else the checkout's plugin/dist."""
    env = os.environ.get(DIST_ENV)
    if env:
        return Path(env)
    return _PACKAGED_DIST if (_PACKAGED_DIST / "index.html").is_file() else _SOURCE_DIST


def _not_built(path: str) -> Response:
    response = jsonify(
        error="not_found",
        message=(
            f"the plugin's {path} is not built: run `make demo` or `cd plugin && npm ci && npm run build` "
            f"(looked in {dist_dir()}; set {DIST_ENV} to another build)"
        ),
    )
    response.status_code = 404
    return response


def _send(path: str, cache: str) -> Response:
    root = dist_dir()
    if not (root / "index.html").is_file():
        return _not_built(path)
    if not (root / path).is_file():
        abort(404)
    response = send_from_directory(root, path)
    response.headers["Cache-Control"] = cache
    return response


@blueprint.get("/plugin.json")
def manifest() -> Response:
    """The remote plugin manifest vCenter reads at registration and at every client start."""
    response = _send("plugin.json", "no-cache")
    response.mimetype = "application/json"
    return response


@blueprint.get("/")
def index() -> Response:
    """The standalone UI (what `make demo` opens)."""
    return _send("index.html", "no-cache")


def favicon() -> Response:
    """The plugin's icon at the site's root too, where browsers look for it unasked (``/favicon.ico``)."""
    return _send("favicon.ico", "public, max-age=86400")


@blueprint.record_once
def _favicon_at_root(state: BlueprintSetupState) -> None:
    # Outside the blueprint's /plugin prefix; named in the blueprint, so that it is documented with the
    # plugin's other public files.
    state.app.add_url_rule("/favicon.ico", endpoint=f"{blueprint.name}.favicon", view_func=favicon)


@blueprint.get("/<path:path>")
def asset(path: str) -> Response:
    """Pages and hashed assets; the hashed ones never change, so they may be cached for long."""
    cache = "public, max-age=31536000, immutable" if path.startswith("assets/") else "no-cache"
    return _send(path, cache)
