"""plugin/plugin.json against the rules of the vSphere Client's remote plugin manifest schema.

The rules are those the published schema states (vSphere Client SDK, "Remote Plug-in Manifest
Schema" / "vSphere Client Remote Plug-in Extensions Reference"): no unknown properties where the
schema allows none, manifestVersion and plugin.api.version from the schema's enumeration, a
configuration with a nameKey and an icon, i18n locales of the form xx-YY, unique, and every localized
string defined for each of them. Beyond the schema: every key the client shows is defined, icons
exist in the sprite sheet, each view's page exists, and the navigation ids are those the UI uses.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"
MANIFEST = PLUGIN / "plugin.json"

# The schema's enumerations (vSphere 7.0-8.0 manifest schema).
MANIFEST_VERSIONS = {"1.0.0", "1.0.1", "1.1.0", "1.2.0"}
API_VERSIONS = {"1.0.0", "1.0.1", "1.1.0", "1.2.0"}
VERSION_RANGE = re.compile(
    r"^\s*(([\(\[]\s*(\d+(\.\d+){0,3})?\s*,\s*(\d+(\.\d+){0,3})?\s*[\)\]])|\d+(\.\d+){0,3})\s*$"
)
LOCALE = re.compile(r"^[a-z]{2}-[A-Z]{2}$")
ROOT_KEYS = {"manifestVersion", "requirements", "configuration", "global", "objects", "definitions"}
REQUIREMENT_KEYS = {"plugin.api.version", "vcenter.server", "vsphere.client"}
VIEW_KEYS = {"navigationId", "labelKey", "uri", "dynamicUri"}
# vSphere managed object types a remote plugin can extend.
OBJECT_TYPES = {
    "ClusterComputeResource",
    "Datacenter",
    "Datastore",
    "DistributedVirtualPortgroup",
    "DistributedVirtualSwitch",
    "Folder",
    "HostSystem",
    "Network",
    "ResourcePool",
    "StoragePod",
    "VirtualApp",
    "VirtualMachine",
}
OBJECT_EXTENSIONS = {"summary", "monitor", "configure", "menu"}


def problems_of(manifest: Any, base: Path = PLUGIN) -> list[str]:
    """Every rule the manifest breaks, as 'path: message' (empty when it follows them all)."""
    out: list[str] = []

    def bad(path: str, message: str) -> None:
        out.append(f"{path}: {message}")

    def only(obj: Any, allowed: set[str], path: str) -> None:
        if not isinstance(obj, dict):
            bad(path, "must be an object")
            return
        for key in obj:
            if key not in allowed:
                bad(f"{path}.{key}", "unknown property (the schema allows no additional properties)")

    def text(obj: dict[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key)
        if not isinstance(value, str) or value.strip() == "":
            bad(f"{path}.{key}", "must be a string of at least 1 character")
            return None
        return value

    only(manifest, ROOT_KEYS, "$")
    if not isinstance(manifest, dict):
        return out
    if manifest.get("manifestVersion") not in MANIFEST_VERSIONS:
        bad("$.manifestVersion", f"must be one of {sorted(MANIFEST_VERSIONS)}")

    req = manifest.get("requirements")
    only(req, REQUIREMENT_KEYS, "$.requirements")
    if isinstance(req, dict):
        if req.get("plugin.api.version") not in API_VERSIONS:
            bad("$.requirements.plugin.api.version", f"must be one of {sorted(API_VERSIONS)}")
        for env in ("vcenter.server", "vsphere.client"):
            if env in req:
                versions = req[env].get("version") if isinstance(req[env], dict) else None
                if not isinstance(versions, str) or not VERSION_RANGE.match(versions):
                    bad(f"$.requirements.{env}.version", "must be a version or an interval like [7.0.3,)")

    # i18n first: the keys below are checked against it.
    definitions = manifest.get("definitions", {})
    only(definitions, {"iconSpriteSheet", "i18n"}, "$.definitions")
    i18n = definitions.get("i18n") if isinstance(definitions, dict) else None
    locales: list[str] = []
    strings: dict[str, Any] = {}
    if not isinstance(i18n, dict):
        bad("$.definitions.i18n", "must be present: the labels the vSphere Client shows are localized")
    else:
        only(i18n, {"locales", "definitions"}, "$.definitions.i18n")
        locales = i18n.get("locales") if isinstance(i18n.get("locales"), list) else []
        if not locales:
            bad("$.definitions.i18n.locales", "must list at least one locale")
        if len(set(locales)) != len(locales):
            bad("$.definitions.i18n.locales", "items must be unique")
        for i, loc in enumerate(locales):
            if not isinstance(loc, str) or not LOCALE.match(loc):
                bad(f"$.definitions.i18n.locales[{i}]", f"{loc!r} is not a locale like en-US")
        if "en-US" not in locales:
            bad("$.definitions.i18n.locales", "must include en-US, the client's fallback")
        strings = i18n.get("definitions") if isinstance(i18n.get("definitions"), dict) else {}
        for key, item in strings.items():
            path = f"$.definitions.i18n.definitions.{key}"
            if not isinstance(item, dict):
                bad(path, "must be an object of translations")
                continue
            for loc, value in item.items():
                if not LOCALE.match(loc):
                    bad(f"{path}.{loc}", "translation keys must be locales like en-US")
                elif loc not in locales:
                    bad(f"{path}.{loc}", "is not one of the manifest's locales")
                if not isinstance(value, str) or value.strip() == "":
                    bad(f"{path}.{loc}", "must be a string of at least 1 character")
            for loc in locales:
                if loc not in item:
                    bad(path, f"has no {loc} translation (every string needs each locale)")

    def localized(key: str | None, path: str) -> None:
        if key is not None and key not in strings:
            bad(path, f"{key!r} is not defined in definitions.i18n (the client would show the key)")

    sheet = definitions.get("iconSpriteSheet") if isinstance(definitions, dict) else None
    icons: dict[str, Any] = {}
    if sheet is not None:
        only(sheet, {"uri", "definitions", "themeOverrides"}, "$.definitions.iconSpriteSheet")
        icons = sheet.get("definitions", {}) if isinstance(sheet, dict) else {}
        uri = text(sheet, "uri", "$.definitions.iconSpriteSheet") if isinstance(sheet, dict) else None
        image = base / "public" / uri if uri else None
        if image is not None and not image.is_file():
            bad("$.definitions.iconSpriteSheet.uri", f"{uri} is not in plugin/public, so the build lacks it")
        elif image is not None:
            width, height = png_size(image)
            for name, pos in icons.items():
                p = f"$.definitions.iconSpriteSheet.definitions.{name}"
                only(pos, {"x", "y"}, p)
                x, y = pos.get("x"), pos.get("y")
                if not (isinstance(x, int) and isinstance(y, int) and 0 <= x < width and 0 <= y < height):
                    bad(p, f"({x}, {y}) is outside the {width}x{height} sprite sheet")

    def icon(obj: Any, path: str) -> None:
        only(obj, {"name"}, path)
        if isinstance(obj, dict):
            name = text(obj, "name", path)
            if name is not None and name not in icons:
                bad(f"{path}.name", f"{name!r} is not an icon of the sprite sheet")

    conf = manifest.get("configuration")
    if not isinstance(conf, dict):
        bad("$.configuration", "must be an object with nameKey and icon")
    else:
        localized(text(conf, "nameKey", "$.configuration"), "$.configuration.nameKey")
        if "icon" not in conf:
            bad("$.configuration.icon", "is required: the navigator and menus show the plugin's icon")
        else:
            icon(conf["icon"], "$.configuration.icon")

    nav_ids: list[tuple[str, str]] = []

    def view(obj: Any, path: str, labelled: bool) -> None:
        only(obj, VIEW_KEYS | ({"navigationVisible"} if not labelled else set()), path)
        if not isinstance(obj, dict):
            return
        nav = text(obj, "navigationId", path)
        if nav is not None:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9._-]*", nav):
                bad(f"{path}.navigationId", "must be a plain identifier")
            nav_ids.append((nav, path))
        uri = text(obj, "uri", path)
        if uri is not None:
            page = uri.split("#", 1)[0].split("?", 1)[0]
            if uri.startswith(("/", "http:", "https:")):
                bad(f"{path}.uri", "must be relative to plugin.json (the client proxies the plugin server)")
            elif not (base / page).is_file():
                bad(f"{path}.uri", f"{page} is not a page of the plugin")
        if labelled:
            localized(text(obj, "labelKey", path), f"{path}.labelKey")
        if "navigationVisible" in obj and not isinstance(obj["navigationVisible"], bool):
            bad(f"{path}.navigationVisible", "must be true or false")

    glob = manifest.get("global")
    if not isinstance(glob, dict) or "view" not in glob:
        bad("$.global.view", "is required: the plugin's global view")
    else:
        only(glob, {"view"}, "$.global")
        view(glob["view"], "$.global.view", labelled=False)

    objects = manifest.get("objects", {})
    if not isinstance(objects, dict):
        bad("$.objects", "must be an object keyed by vSphere object type")
        objects = {}
    for kind, ext in objects.items():
        path = f"$.objects.{kind}"
        if kind not in OBJECT_TYPES:
            bad(path, "is not a vSphere object type the client extends")
        only(ext, OBJECT_EXTENSIONS, path)
        for tab in ("monitor", "configure"):
            if isinstance(ext, dict) and tab in ext:
                only(ext[tab], {"views", "dynamicUri"}, f"{path}.{tab}")
                views = ext[tab].get("views") if isinstance(ext[tab], dict) else None
                if not isinstance(views, list) or not views:
                    bad(f"{path}.{tab}.views", "must list at least one view")
                    continue
                for i, v in enumerate(views):
                    view(v, f"{path}.{tab}.views[{i}]", labelled=True)

    seen: dict[str, str] = {}
    for nav, path in nav_ids:
        if nav in seen:
            bad(f"{path}.navigationId", f"{nav!r} is also used by {seen[nav]}")
        seen[nav] = path
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return loaded


def test_manifest_follows_the_schema_rules(manifest: dict[str, Any]) -> None:
    assert problems_of(manifest) == []


def test_manifest_extends_the_views_the_product_needs(manifest: dict[str, Any]) -> None:
    objects = manifest["objects"]
    for kind, route in (
        ("Datastore", "#/datastore"),
        ("StoragePod", "#/storagepod"),
        ("VirtualMachine", "#/vm"),
    ):
        views = objects[kind]["monitor"]["views"]
        assert [v["uri"] for v in views] == [f"client.html{route}"], kind
    # In-client pages load the vSphere Client's htmlClientSdk; the standalone one must not.
    assert "/api/ui/htmlClientSdk.js" in (PLUGIN / "client.html").read_text(encoding="utf-8")
    assert "htmlClientSdk" not in (PLUGIN / "index.html").read_text(encoding="utf-8")
    assert manifest["global"]["view"]["uri"].startswith("client.html#/")


def test_navigation_ids_are_the_ones_the_ui_navigates_to(manifest: dict[str, Any]) -> None:
    routes = (PLUGIN / "src" / "host" / "routes.ts").read_text(encoding="utf-8")
    ui_ids = dict(re.findall(r"(\w+): '([\w.]+)'", routes.split("VIEW_IDS", 1)[1]))
    assert ui_ids == {
        "global": manifest["global"]["view"]["navigationId"],
        "datastore": manifest["objects"]["Datastore"]["monitor"]["views"][0]["navigationId"],
        "storagePod": manifest["objects"]["StoragePod"]["monitor"]["views"][0]["navigationId"],
        "vm": manifest["objects"]["VirtualMachine"]["monitor"]["views"][0]["navigationId"],
    }


def test_plugin_version_is_one_the_registration_accepts() -> None:
    version = json.loads((PLUGIN / "package.json").read_text(encoding="utf-8"))["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)


def _broken(manifest: dict[str, Any], change: str) -> dict[str, Any]:
    m: dict[str, Any] = json.loads(json.dumps(manifest))
    if change == "version":
        m["manifestVersion"] = "2.0.0"
        m["requirements"]["plugin.api.version"] = "9"
    elif change == "extra":
        m["configuration"]["icon"]["colour"] = "green"
        m["objects"]["Datastore"]["monitor"]["views"][0]["title"] = "x"
    elif change == "locale":
        m["definitions"]["i18n"]["locales"] = ["en-US", "english", "en-US"]
    elif change == "missing-translation":
        del m["definitions"]["i18n"]["definitions"]["vm.monitor.label"]["de-DE"]
    elif change == "undefined-key":
        m["objects"]["VirtualMachine"]["monitor"]["views"][0]["labelKey"] = "no.such.key"
    elif change == "icon":
        m["configuration"]["icon"] = {"name": "nope"}
        m["definitions"]["iconSpriteSheet"]["definitions"]["main"] = {"x": 640, "y": 0}
    elif change == "views":
        m["objects"]["StoragePod"]["monitor"]["views"] = []
        m["objects"]["Datastor"] = m["objects"].pop("Datastore")
        m["objects"]["VirtualMachine"]["monitor"]["views"][0]["uri"] = "https://elsewhere/x.html"
        m["global"]["view"]["navigationId"] = "basil.vm.monitor"
    return m


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("version", ["$.manifestVersion", "$.requirements.plugin.api.version"]),
        ("extra", ["$.configuration.icon.colour", "$.objects.Datastore.monitor.views[0].title"]),
        ("locale", ["$.definitions.i18n.locales: items must be unique", "$.definitions.i18n.locales[1]"]),
        ("missing-translation", ["$.definitions.i18n.definitions.vm.monitor.label: has no de-DE"]),
        ("undefined-key", ["$.objects.VirtualMachine.monitor.views[0].labelKey"]),
        ("icon", ["$.configuration.icon.name", "$.definitions.iconSpriteSheet.definitions.main"]),
        (
            "views",
            [
                "$.objects.StoragePod.monitor.views",
                "$.objects.Datastor: is not a vSphere object type",
                "$.objects.VirtualMachine.monitor.views[0].uri",
                "navigationId: 'basil.vm.monitor' is also used",
            ],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_broken_rule_is_reported(manifest: dict[str, Any], change: str, expected: list[str]) -> None:
    found = problems_of(_broken(manifest, change))
    for fragment in expected:
        assert any(fragment in p for p in found), (fragment, found)


def test_a_non_object_manifest_is_refused() -> None:
    assert problems_of([]) == ["$: must be an object"]
