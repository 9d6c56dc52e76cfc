"""The admin panel's login (issue 11): accounts, the Redis session, CSRF, the throttle."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.web.conftest import CSRF, PASSWORD, cheap_hashing
from webapp import create_app
from webapp.config import ConfigError
from webapp.domain.admins import Admins
from webapp.web.admin_session import COOKIE


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    cheap_hashing(monkeypatch)


@pytest.fixture
def make_app(redis_url, r, tmp_path, cheap_argon2) -> Any:
    def make(**config: Any) -> Flask:
        base = {"TESTING": True, "REDIS_URL": redis_url, "SECRET_KEY": "admin-tests",
                "SWEEP_INTERVAL": 0, "DATA_DIR": str(tmp_path)}  # fmt: skip
        app = create_app({**base, **config})
        made.append(app)
        return app

    made: list[Flask] = []
    yield make
    for app in made:
        app.extensions["services"].stop()


@pytest.fixture
def app(make_app) -> Flask:
    """An app with the account "ada"."""
    app = make_app()
    app.extensions["services"].admins.add("ada", PASSWORD)
    return app


class Browser:
    """An admin's browser: a test client that logs in through the form."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client

    def csrf(self, path: str = "/admin/login") -> str:
        page = self.client.get(path, follow_redirects=True)  # the panel, once logged in
        match = CSRF.search(page.get_data(as_text=True))
        assert match, f"no CSRF token on {path}"
        return match.group(1)

    def login(self, name: str = "ada", password: str = PASSWORD, **form: str) -> Any:
        data = {"name": name, "password": password, "csrf_token": self.csrf(), **form}
        return self.client.post("/admin/login", data=data)

    def logout(self) -> Any:
        return self.client.post("/admin/logout", data={"csrf_token": self.csrf("/admin/")})

    @property
    def token(self) -> str | None:
        cookie = self.client.get_cookie(COOKIE, path="/admin")
        return None if cookie is None else cookie.value


@pytest.fixture
def browser(app: Flask) -> Browser:
    return Browser(app.test_client())


def session_keys(r) -> list[str]:
    return r.keys("wr:admin-session:*")


def test_login_opens_the_panel(browser, r):
    """The right name and password: 303 to the panel, which says who is logged in."""
    form = browser.client.get("/admin/login").get_data(as_text=True)
    assert 'autocomplete="username"' in form and 'autocomplete="current-password"' in form
    response = browser.login()
    assert response.status_code == 303 and response.location == "/admin/"
    page = browser.client.get("/admin/")
    assert page.status_code == 200 and "logged in as <strong>ada</strong>" in page.get_data(
        as_text=True
    )
    assert page.headers["Cache-Control"] == "no-store"
    assert len(session_keys(r)) == 1
    assert browser.token not in session_keys(r)[0]  # stored by its hash, never as given


@pytest.mark.parametrize(("name", "password"), [("ada", "wrong password!"), ("bob", PASSWORD)])
def test_a_wrong_login_is_a_401_that_says_so(browser, r, caplog, name, password):
    """A wrong password or an unknown name: the same 401 page, logged with the address."""
    with caplog.at_level(logging.WARNING, logger="webapp.web.security"):
        response = browser.login(name, password)
    assert response.status_code == 401
    text = response.get_data(as_text=True)
    assert 'role="alert">Wrong name or password.' in text
    assert f'value="{name}"' in text  # the name is kept, the password is not
    assert "refused an admin login from 127.0.0.1 on POST /admin/login" in caplog.messages
    assert browser.token is None and session_keys(r) == []


def test_logout_ends_the_session_and_its_cookie(browser, r):
    """After logout the Redis record is gone: the old cookie no longer opens the panel."""
    browser.login()
    old = browser.token
    response = browser.logout()
    assert response.status_code == 303 and response.location == "/admin/login"
    assert browser.token is None and session_keys(r) == []
    browser.client.set_cookie(COOKIE, old, path="/admin")
    assert browser.client.get("/admin/").status_code == 302


def test_the_cookie_is_for_the_panel_only(browser, make_app):
    """wr_admin: HttpOnly, SameSite=Strict, Path=/admin, no Expires; Secure behind HTTPS."""
    cookie = browser.login().headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    attributes = {part.strip().split("=")[0] for part in cookie.split(";")[1:]}
    assert attributes == {"HttpOnly", "Path", "SameSite"}
    assert "Path=/admin;" in cookie + ";" and "SameSite=Strict" in cookie
    secure = make_app(SESSION_COOKIE_SECURE=True)
    client = secure.test_client()
    assert "Secure" in Browser(client).login().headers["Set-Cookie"]


def test_idle_sessions_expire_and_activity_renews_them(make_app, r):
    """The record lives ADMIN_SESSION_IDLE_SECONDS after the last request, then is gone."""
    app = make_app(ADMIN_SESSION_IDLE_SECONDS=600)
    app.extensions["services"].admins.add("ada", PASSWORD)
    browser = Browser(app.test_client())
    browser.login()
    [key] = session_keys(r)
    assert 590 <= r.ttl(key) <= 600
    r.expire(key, 5)  # as if it had been idle for almost ten minutes
    assert browser.client.get("/admin/").status_code == 200
    assert r.ttl(key) > 590  # renewed by that request
    r.delete(key)  # expired
    response = browser.client.get("/admin/")
    assert response.status_code == 302 and response.location == "/admin/login?next=/admin/"


def test_login_rotates_the_session(browser, r):
    """Each login mints a new token and ends the browser's previous one (no fixation)."""
    browser.login()
    first = browser.token
    browser.login()
    assert browser.token != first and len(session_keys(r)) == 1
    other = Browser(browser.client.application.test_client())
    other.client.set_cookie(COOKIE, first, path="/admin")
    assert other.client.get("/admin/").status_code == 302


def test_posts_without_a_csrf_token_are_refused(browser):
    """The login form and every admin POST need the CSRF token."""
    refused = browser.client.post("/admin/login", data={"name": "ada", "password": PASSWORD})
    assert refused.status_code == 400 and browser.token is None
    browser.login()
    assert browser.client.post("/admin/logout").status_code == 400
    assert browser.client.get("/admin/").status_code == 200  # still logged in
    header = {"X-CSRFToken": browser.csrf("/admin/")}
    assert browser.client.post("/admin/logout", headers=header).status_code == 303


def test_wrong_logins_are_throttled_per_address(app, browser, caplog):
    """Ten wrong logins in 15 minutes; the eleventh try, even a right one, gets 429."""
    with caplog.at_level(logging.WARNING, logger="webapp.web.security"):
        for _ in range(10):
            assert browser.login(password="not the password").status_code == 401
    assert sum("refused an admin login from 127.0.0.1" in m for m in caplog.messages) == 10
    response = browser.login()
    assert response.status_code == 429
    assert 800 < int(response.headers["Retry-After"]) <= 901
    text = response.get_data(as_text=True)
    assert "Too many wrong logins from your address. Please try again in about 15 minutes." in text
    assert 'role="alert"' in text and "<form" not in text
    assert browser.token is None
    assert browser.client.get("/admin/login").status_code == 200  # the form still shows
    elsewhere = app.test_client()
    elsewhere.environ_base["REMOTE_ADDR"] = "127.0.0.2"
    # another address is not held back (another account: ada's own has had its 10
    # wrong passwords, issue 25)
    app.extensions["services"].admins.add("bob", PASSWORD)
    assert Browser(elsewhere).login(name="bob").status_code == 303


def test_wrong_tokens_and_wrong_logins_count_together(make_app):
    """The API's admin token and the login share one throttle per address."""
    app = make_app(ADMIN_TOKEN="the-right-admin-token")
    app.extensions["services"].admins.add("ada", PASSWORD)
    browser = Browser(app.test_client())
    wrong = {"Authorization": "Bearer wrong-admin-token-guess"}
    for _ in range(5):
        assert browser.client.get("/api/admin/rooms/x", headers=wrong).status_code == 401
        assert browser.login(password="not the password").status_code == 401
    assert browser.login().status_code == 429


def test_there_is_no_panel_without_an_account(make_app):
    """No account: every /admin URL is a 404, even a POST without a CSRF token."""
    app = make_app()
    client = app.test_client()
    for path in ("/admin", "/admin/", "/admin/login", "/admin/rooms/x"):
        assert client.get(path).status_code == 404, path
    assert client.post("/admin/login", data={"name": "admin"}).status_code == 404
    assert client.post("/admin/logout").status_code == 404
    app.extensions["services"].admins.add("ada", PASSWORD)
    assert client.get("/admin/login").status_code == 200


def test_login_required_sends_pages_to_the_form_and_back(browser):
    """A page redirects to the form with next=; htmx gets 401 and HX-Redirect."""
    response = browser.client.get("/admin/?tab=rooms")
    assert response.status_code == 302
    assert response.location == "/admin/login?next=/admin/?tab%3Drooms"
    htmx = {"HX-Request": "true", "HX-Current-URL": "http://localhost/admin/?tab=rooms"}
    partial = browser.client.get("/admin/", headers=htmx)
    assert partial.status_code == 401 and partial.headers["HX-Redirect"] == response.location
    assert browser.login(next="/admin/?tab=rooms").location == "/admin/?tab=rooms"


@pytest.mark.parametrize("target", ["//evil.example/admin", "https://evil.example/admin",
                                    "/rooms/x", "/admin\\..\\x",
                                    "///admin/x"])  # fmt: skip  # host "admin" to a browser
def test_login_never_redirects_off_the_panel(browser, target):
    """next= outside the panel is ignored: the panel's home instead."""
    assert browser.login(next=target).location == "/admin/"


def test_removing_an_account_or_its_password_ends_its_sessions(app, browser):
    """A removed account or a replaced password logs that admin out on the next request."""
    browser.login()
    app.extensions["services"].admins.add("ada", "a brand new password")
    assert browser.client.get("/admin/").status_code == 302
    browser.login(password="a brand new password")
    app.extensions["services"].admins.add("bob", PASSWORD)
    app.extensions["services"].admins.remove("ada")
    assert browser.client.get("/admin/").status_code == 302


def test_visitor_pages_keep_the_signed_cookie(app, r):
    """Visiting /, picking a name and even the login form store no session in Redis."""
    client = app.test_client()
    client.get("/")
    token = CSRF.search(client.get("/").get_data(as_text=True)).group(1)
    assert client.post("/name", data={"name": "Vi", "csrf_token": token}).status_code == 303
    assert client.get_cookie("session") is not None  # Flask's signed cookie
    assert client.get("/admin/login").status_code == 200
    assert session_keys(r) == []


def test_cli_adds_lists_and_removes_accounts(make_app):
    """`flask admin add NAME` asks twice, hidden, and again when too short."""
    app = make_app()
    runner = app.test_cli_runner()
    result = runner.invoke(args=["admin", "add", "ada"], input=f"short\n{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert "a password is 12 to 1024 characters long (this one has 5)" in result.output
    assert PASSWORD not in result.output  # hidden input
    assert "Added ada." in result.output
    assert app.extensions["services"].admins.verify("ada", PASSWORD)
    mismatch = runner.invoke(args=["admin", "add", "bob"], input=f"{PASSWORD}\nother password!\n")
    assert mismatch.exit_code != 0 and "do not match" in mismatch.output
    assert runner.invoke(args=["admin", "add", "bad name"]).exit_code == 2
    changed = runner.invoke(args=["admin", "add", "ada"], input="another password\n" * 2)
    assert "Changed the password of ada" in changed.output
    assert runner.invoke(args=["admin", "list"]).output == "ada\n"
    assert runner.invoke(args=["admin", "remove", "bob"]).exit_code == 1
    removed = runner.invoke(args=["admin", "remove", "ada"])
    assert removed.exit_code == 0 and "every /admin page answers 404" in removed.output
    assert runner.invoke(args=["admin", "list"]).output == ""


def test_admin_password_makes_the_admin_account(make_app, monkeypatch, r):
    """WEBAPP_ADMIN_PASSWORD (read as text) creates "admin", keeps a hash that verifies,
    and replaces one that does not."""
    monkeypatch.setenv("WEBAPP_ADMIN_PASSWORD", "123456789012")
    app = make_app()
    assert app.config["ADMIN_PASSWORD"] == "123456789012"
    assert Browser(app.test_client()).login("admin", "123456789012").status_code == 303
    stored = r.hget("wr:admins", "admin")
    make_app()
    assert r.hget("wr:admins", "admin") == stored  # unchanged: its sessions live on
    monkeypatch.setenv("WEBAPP_ADMIN_PASSWORD", "a different password")
    admins: Admins = make_app().extensions["services"].admins
    assert admins.verify("admin", "a different password")
    assert not admins.verify("admin", "123456789012")


def test_a_short_admin_password_refuses_to_start(make_app, monkeypatch):
    """Under 12 characters: a ConfigError that says so."""
    monkeypatch.setenv("WEBAPP_ADMIN_PASSWORD", "12345678901")
    with pytest.raises(ConfigError, match=r"WEBAPP_ADMIN_PASSWORD is 11 characters.*at least 12"):
        make_app()
