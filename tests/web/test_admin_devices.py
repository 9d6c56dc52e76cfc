"""Device cookies for the admin panel (issue 29, OWASP's scheme): strangers' wrong
passwords lock out the clients without one, never a browser that logged in before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from itsdangerous.encoding import base64_decode, base64_encode

from tests.web.conftest import PASSWORD, cheap_hashing, running_app
from tests.web.test_admin_login import Browser
from webapp.web.admin_devices import COOKIE, MAX_AGE

WRONG = "not the password"


@pytest.fixture
def app(redis_url: str, r: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    """Accounts "ada" and "bob"; 4 wrong passwords per account, 6 in all."""
    cheap_hashing(monkeypatch)
    limits = {"ADMIN_FAILURE_LIMIT": "3 per 15 minutes", "ADMIN_ACCOUNT_LIMIT": "4 per 15 minutes",
              "ADMIN_TOTAL_LIMIT": "6 per 15 minutes"}  # fmt: skip
    with running_app(redis_url, DATA_DIR=str(tmp_path), **limits) as app:
        app.extensions["services"].admins.add("ada", PASSWORD)
        app.extensions["services"].admins.add("bob", PASSWORD)
        yield app


def browser_at(app: Flask, address: str) -> Browser:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return Browser(client)


def known_browser(app: Flask, name: str = "ada", address: str = "192.0.2.10") -> Browser:
    """The admin's own browser: logged in once (so it has its device cookie), then out."""
    browser = browser_at(app, address)
    assert browser.login(name).status_code == 303
    assert browser.logout().status_code == 303
    return browser


def strangers_guess(app: Flask, name: str, tries: int) -> list[int]:
    """Wrong passwords for ``name``, each from an address of its own."""
    return [browser_at(app, f"10.0.{i}.1").login(name, WRONG).status_code for i in range(tries)]


def test_a_login_gives_a_long_lived_device_cookie(app: Flask) -> None:
    """After a login: wr_admin_device, HttpOnly, SameSite=Lax, Path=/admin, a year's
    Max-Age; a wrong password gives none."""
    browser = browser_at(app, "192.0.2.10")
    assert browser.login(password=WRONG).headers.get("Set-Cookie") is None
    cookies = browser.login().headers.getlist("Set-Cookie")
    [device] = [cookie for cookie in cookies if cookie.startswith(f"{COOKIE}=")]
    attributes = {part.strip().split("=")[0] for part in device.split(";")[1:]}
    assert attributes == {"Expires", "Max-Age", "HttpOnly", "Path", "SameSite"}
    assert f"Max-Age={MAX_AGE}" in device and "SameSite=Lax" in device
    assert "Path=/admin;" in device + ";"


def test_the_device_cookie_is_secure_as_the_session_is(redis_url, r, tmp_path, monkeypatch):
    """With SESSION_COOKIE_SECURE the device cookie is Secure too."""
    cheap_hashing(monkeypatch)
    with running_app(redis_url, DATA_DIR=str(tmp_path), SESSION_COOKIE_SECURE=True) as app:
        app.extensions["services"].admins.add("ada", PASSWORD)
        cookies = Browser(app.test_client()).login().headers.getlist("Set-Cookie")
    [device] = [cookie for cookie in cookies if cookie.startswith(f"{COOKIE}=")]
    assert "; Secure" in device


def test_strangers_do_not_lock_out_a_browser_with_a_device_cookie(app: Flask) -> None:
    """Strangers spend the account's wrong passwords, then the panel's: a client without
    a device cookie is locked out, the admin's own browser still logs in."""
    admin = known_browser(app)
    assert strangers_guess(app, "ada", 5) == [401] * 4 + [429]
    newcomer = browser_at(app, "198.51.100.1").login()  # the right password, no cookie
    assert newcomer.status_code == 429
    assert "Too many wrong logins for this account" in newcomer.get_data(as_text=True)
    assert admin.login().status_code == 303
    admin.logout()
    assert strangers_guess(app, "bob", 3) == [401, 401, 429]  # 6 wrong in all: paused
    assert browser_at(app, "198.51.100.2").login("bob").status_code == 429
    assert admin.login().status_code == 303


def test_a_browser_with_a_device_cookie_is_limited_on_its_own(app: Flask) -> None:
    """Its wrong passwords count against its own cookie (4, then 429 "from this
    browser"), neither the account's nor the panel's; the per-address limit still holds."""
    admin = known_browser(app)
    codes = []
    for address in ("192.0.2.20", "192.0.2.21", "192.0.2.22"):  # past the per-address 3
        admin.client.environ_base["REMOTE_ADDR"] = address
        codes += [admin.login(password=WRONG).status_code for _ in range(2)]
    assert codes == [401] * 4 + [429] * 2
    assert "Too many wrong logins from this browser" in admin.login().get_data(as_text=True)
    assert strangers_guess(app, "ada", 3) == [401] * 3  # the account's 4 are all left
    at_home = known_browser(app, address="192.0.2.30")  # another of ada's browsers
    for _ in range(3):
        at_home.login(password=WRONG)
    assert at_home.login().status_code == 429  # its address's 3 wrong credentials


def test_a_device_cookie_counts_for_its_own_account_only(app: Flask) -> None:
    """Bob's device cookie, or one altered, does not lift ada's lockout."""
    bobs = known_browser(app, "bob")
    assert strangers_guess(app, "ada", 5)[-1] == 429
    assert bobs.login("ada").status_code == 429
    cookie = bobs.client.get_cookie(COOKIE, path="/admin")
    assert cookie is not None
    payload, *signed = cookie.value.split(".")
    data = json.loads(base64_decode(payload))
    assert data["admin"] == "bob"
    altered = base64_encode(json.dumps({**data, "admin": "ada"}).encode()).decode()
    forged = browser_at(app, "192.0.2.40")
    forged.client.set_cookie(COOKIE, ".".join([altered, *signed]), path="/admin")
    assert forged.login("ada").status_code == 429
