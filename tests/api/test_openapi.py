"""webapp/openapi.json: valid OpenAPI 3.1, served, and in step with the app and docs/api.md."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
import schemathesis

DOCUMENT = json.loads(resources.files("webapp").joinpath("openapi.json").read_text())
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
METHODS = ("get", "put", "post", "delete", "patch")
SETTINGS = DOCUMENT["components"]["schemas"]["RoomSettingsChange"]["properties"]


def operations() -> set[tuple[str, str]]:
    """(METHOD, path) of every operation in the document."""
    return {
        (method.upper(), path)
        for path, item in DOCUMENT["paths"].items()
        for method in METHODS
        if method in item
    }


def references(node):
    """Every $ref in a part of the document."""
    if isinstance(node, dict):
        yield from ([node["$ref"]] if "$ref" in node else [])
        for value in node.values():
            yield from references(value)
    elif isinstance(node, list):
        for value in node:
            yield from references(value)


def test_document_is_valid_openapi_3_1():
    """The document passes the OpenAPI 3.1 meta-schema, and every $ref resolves."""
    assert DOCUMENT["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(DOCUMENT).validate()
    for ref in references(DOCUMENT):
        node = DOCUMENT
        for part in ref.removeprefix("#/").split("/"):
            assert isinstance(node, dict) and part in node, ref
            node = node[part]


def test_served_as_json(client):
    """GET /api/openapi.json answers the document itself, as application/json."""
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == DOCUMENT


def test_every_api_route_is_documented(app):
    """The routes under /api/ and the document's operations under /api/ are the same."""
    routes = {
        (method, re.sub(r"<(?:[^:<>]+:)?([^:<>]+)>", r"{\1}", rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/")
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}
    }
    assert routes == {(method, path) for method, path in operations() if path.startswith("/api/")}


def test_the_guide_has_every_operation():
    """docs/api.md has a heading for every operation of the document, and no other."""
    guide = GUIDE.read_text()
    headings = set(re.findall(r"^### `([A-Z]+ /[^`\[?]*)", guide, re.MULTILINE))
    documented = {
        f"{method} {path.replace('{', '<').replace('}', '>')}" for method, path in operations()
    }
    assert headings == documented


def test_every_status_code_is_in_the_guide():
    """Every status code the document names is explained in docs/api.md."""
    guide = GUIDE.read_text()
    codes = {
        code
        for item in DOCUMENT["paths"].values()
        for method in METHODS
        for code in item.get(method, {}).get("responses", {})
    }
    missing = {
        code for code in codes if not re.search(rf"\*\*{code}\*\*|^\| {code} \|", guide, re.M)
    }
    assert not missing, sorted(missing)


def test_every_setting_is_in_the_guide():
    """docs/api.md's settings table names every setting, with the document's bounds."""
    guide = GUIDE.read_text()
    for name, spec in SETTINGS.items():
        row = re.search(rf"^\| `{name}` \|(.*)$", guide, re.MULTILINE)
        assert row, name
        if "minimum" in spec:
            bounds = re.search(r"(\d[\d,]*)\.\.(\d[\d,]*)", row[1])
            assert bounds, name
            low, high = (int(bound.replace(",", "")) for bound in bounds.groups())
            assert (low, high) == (spec["minimum"], spec["maximum"]), name


@pytest.mark.parametrize("name", [name for name, spec in SETTINGS.items() if "minimum" in spec])
def test_setting_bounds_are_the_apps(admin, client, name):
    """Each integer setting's documented bounds are exactly the ones the API enforces."""
    low, high = SETTINGS[name]["minimum"], SETTINGS[name]["maximum"]
    for value, status in ((low - 1, 400), (low, 201), (high, 200), (high + 1, 400)):
        response = client.put("/api/admin/rooms/bounds", json={name: value}, headers=admin)
        assert response.status_code == status, (value, response.get_json())


def test_settings_are_the_apps(admin, client):
    """The document names exactly the settings a room has, their defaults and choices;
    others are refused."""
    created = client.put("/api/admin/rooms/gig", json={}, headers=admin).get_json()
    assert set(created) == {"name", *SETTINGS}
    assert set(created) == set(DOCUMENT["components"]["schemas"]["Room"]["required"])
    assert created == {"name": "gig"} | {name: spec["default"] for name, spec in SETTINGS.items()}
    for name, spec in SETTINGS.items():
        choices = spec.get("$ref", "").split("/")[-1]
        for choice in DOCUMENT["components"]["schemas"].get(choices, {}).get("enum", []):
            response = client.put("/api/admin/rooms/gig", json={name: choice}, headers=admin)
            assert response.get_json()[name] == choice
    refused = client.put("/api/admin/rooms/gig", json={"seats": 3}, headers=admin)
    assert refused.status_code == 400
