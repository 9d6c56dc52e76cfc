"""The gate of site rooms (issue 23): the pass, /gate/<room>, the published keys, the
release, and the pass in the JSON API, through the app on real Redis."""

from __future__ import annotations

import jwt
import pytest
from joserfc import jwt as rfc_jwt
from joserfc.jwk import KeySet
from werkzeug.test import EnvironBuilder, run_wsgi_app

from tests.api.conftest import ADMIN, api_app
from webapp.config import ConfigError
from webapp.domain.passes import InvalidPass, Passes, PassKeys, new_private_pem
from webapp.domain.tickets import public_id
from webapp.views.shared.passes import site_target
from webapp.web.local_paths import is_local_path

# RFC 9864 names the algorithm "Ed25519" and deprecates "EdDSA"; passes say "EdDSA",
# which every JOSE library of today reads (PyJWT, jose for Node, joserfc with a warning)
pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
SITE = "https://shop.example/"
PUBLIC = "https://shop.example/queue"
KEY = new_private_pem()
OTHER_KEY = new_private_pem()


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return site_app(redis_url, clock, tmp_path, KEY)


def site_app(redis_url, clock, tmp_path, key, previous=None, **extra):
    return api_app(
        redis_url,
        clock,
        tmp_path,
        PUBLIC_URL=PUBLIC,
        PASS_KEY=key,
        PASS_KEY_PREVIOUS=previous,
        **extra,
    )


@pytest.fixture
def shop(make_room):
    return make_room("shop", capacity=1, site_url=SITE, pass_renew_seconds=30)


def join(client, room="shop", key="a"):
    reply = client.post(f"/api/rooms/{room}/join", headers={"Idempotency-Key": key})
    assert reply.status_code == 200, reply.get_json()
    return reply.get_json()


def site_key(client, room="shop"):
    """A new site key of ``room`` (the credential that counts what the site sold)."""
    reply = client.post(f"/api/admin/rooms/{room}/site-key", headers=ADMIN)
    assert reply.status_code == 201, reply.get_json()
    return reply.get_json()["key"]


def gate(client, room, token=None, **headers):
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.get(f"/gate/{room}", headers=headers)


def test_join_reply_carries_pass_and_site(client, shop, clock):
    """An admitted joiner of a site room gets a pass for the room and the site's URL."""
    body = join(client)
    assert body["status"] == "admitted"
    assert body["site_url"] == SITE
    claims = jwt.decode(body["pass"], options={"verify_signature": False})
    assert claims["aud"] == "shop"
    assert claims["iss"] == PUBLIC
    assert claims["sub"] == public_id(body["token"])
    assert claims["exp"] - claims["iat"] == 60
    assert body["token"] not in body["pass"]  # the ticket travels sealed
    assert gate(client, "shop", body["pass"]).status_code == 204


def test_waiting_reply_has_no_pass_until_admitted(client, shop):
    """A waiting joiner gets no pass; its position reply carries one once admitted."""
    first, second = join(client, key="a"), join(client, key="b")
    assert "pass" not in second and second["status"] == "waiting"
    client.post(f"/api/rooms/shop/leave/{first['token']}")
    body = client.get(f"/api/rooms/shop/position/{second['token']}").get_json()
    assert body["status"] == "admitted" and body["pass"] and body["site_url"] == SITE


def test_chat_room_replies_have_no_pass(client, make_room):
    """A room without site_url is a chat room: no pass in its replies."""
    make_room("chat", capacity=1)
    body = join(client, "chat")
    assert "pass" not in body and "site_url" not in body


def test_gate_without_pass_names_the_waiting_page(client, shop):
    """No pass and no free seat: 401 with X-Waiting-Room-Location (the original path as
    next)."""
    join(client)  # the one seat
    reply = gate(client, "shop", **{"X-Original-URI": "/shop/item?x=1"})
    assert reply.status_code == 401
    assert (
        reply.headers["X-Waiting-Room-Location"] == f"{PUBLIC}/rooms/shop?next=/shop/item%3Fx%3D1"
    )
    caddy = client.get("/gate/shop?redirect=1", headers={"X-Forwarded-Uri": "/shop/item"})
    assert caddy.status_code == 302
    assert caddy.headers["Location"] == f"{PUBLIC}/rooms/shop?next=/shop/item"


def test_gate_ignores_foreign_next(client, shop):
    """An original URI that is not a path of this origin is left out of the link."""
    join(client)
    for bad in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        reply = gate(client, "shop", **{"X-Original-URI": bad})
        assert reply.headers["X-Waiting-Room-Location"] == f"{PUBLIC}/rooms/shop"


def test_fresh_pass_costs_no_redis_call(client, shop, r, monkeypatch, app):
    """A fresh pass is checked by signature and expiry alone: no Redis command."""
    token = join(client)["pass"]
    services = app.extensions["services"]

    def refuse(*args, **kwargs):
        raise AssertionError("Redis was called")

    monkeypatch.setattr(services.client, "execute_command", refuse)
    assert gate(client, "shop", token).status_code == 204
    client.set_cookie("wr_pass_shop", token)
    assert client.get("/gate/shop").status_code == 204


def test_pass_past_half_life_renews_the_seat(client, shop, clock, app):
    """Past half its life the gate renews the seat and sets a fresh pass cookie."""
    body = join(client)
    seats = app.extensions["services"].rooms.room_keys("shop").seats
    r = app.extensions["services"].client
    before = float(r.zscore(seats, body["token"]))
    clock.advance(31)
    reply = gate(client, "shop", body["pass"])
    assert reply.status_code == 204
    cookie = reply.headers["Set-Cookie"]
    assert cookie.startswith("wr_pass_shop=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
    assert float(r.zscore(seats, body["token"])) == pytest.approx(before + 31)
    fresh = cookie.split(";")[0].split("=", 1)[1]
    assert jwt.decode(fresh, options={"verify_signature": False})["iat"] == int(clock())


def test_pass_of_an_ended_seat_is_refused_at_renewal(client, shop, clock):
    """A seat that ended (its holder left) fails the gate once the pass needs renewal."""
    body = join(client)
    client.post(f"/api/rooms/shop/leave/{body['token']}")
    clock.advance(31)
    assert gate(client, "shop", body["pass"]).status_code == 401


def refused_passes(body, app):
    """A tampered pass, an expired one, another room's, one signed by an unknown key."""
    token = body["pass"]
    head, claims, signature = token.split(".")
    tampered = f"{head}.{claims[:-2]}{'A' if claims[-2] != 'A' else 'B'}{claims[-1]}.{signature}"
    passes = app.extensions["services"].passes
    now = app.extensions["services"].clock()
    other_room = passes.issue("other", body["token"], 30, now)
    stranger = Passes(PassKeys(OTHER_KEY), PUBLIC, "test-secret")
    unknown = stranger.issue("shop", body["token"], 30, now)
    # a forger's own key under ours' id, over claims of their choosing (a longer life:
    # re-signing a copy of a pass unchanged gives nothing its holder lacks, and the
    # gate, which checks its own passes by their HMAC, takes it as that copy)
    claims = jwt.decode(token, options={"verify_signature": False})
    forged_kid = jwt.encode(
        claims | {"exp": claims["exp"] + 3600},
        stranger.keys.signing,
        "EdDSA",
        headers={"kid": passes.keys.kid},
    )
    return {
        "tampered": tampered,
        "other room": other_room,
        "unknown key": unknown,
        "forged kid": forged_kid,
        "garbage": "not-a-pass",
    }


def test_bad_passes_get_401_and_change_nothing(client, shop, app, r, make_room):
    """Tampered, other room's, unknown key's passes: 401, and Redis is as before."""
    make_room("other", capacity=1, site_url=SITE)
    body = join(client)
    bad = refused_passes(body, app)
    before = {k: r.dump(k) for k in r.keys("*{room:shop}*")}
    for name, token in bad.items():
        assert gate(client, "shop", token).status_code == 401, name
        release = client.post(
            "/api/rooms/shop/release", headers={"Authorization": f"Bearer {token}"}
        )
        assert release.status_code == 401, name
    assert {k: r.dump(k) for k in r.keys("*{room:shop}*")} == before


def test_expired_pass_gets_401(client, shop, clock):
    """A pass past its exp is refused, even while the seat lives."""
    body = join(client)
    clock.advance(60)
    reply = gate(client, "shop", body["pass"])
    assert reply.status_code == 401


def test_release_ends_the_seat_and_admits_the_next(client, shop, app, r):
    """POST release with the pass (beside the site key, which counts the sale): the
    seat ends (released), the next is admitted at once, the sale is recorded; a second
    release records nothing more."""
    first, second = join(client, key="a"), join(client, key="b")
    auth = {"Authorization": f"Bearer {site_key(client)}", "X-Waiting-Room-Pass": first["pass"]}
    reply = client.post("/api/rooms/shop/release", json={"sold": 2}, headers=auth)
    assert reply.status_code == 200
    assert reply.get_json() == {"released": True, "why": "released", "sold": 2}
    services = app.extensions["services"]
    assert services.reports.ticket_state("shop", second["token"]) == "offered"
    assert services.visits.drops.stock("shop")[1] == 2
    again = client.post("/api/rooms/shop/release", json={"sold": 2}, headers=auth)
    assert again.get_json() == {"released": True, "why": "released", "sold": 0}
    assert services.visits.drops.stock("shop")[1] == 2
    ended = client.get(f"/api/rooms/shop/position/{first['token']}")
    assert ended.status_code == 410
    kinds = [e.kind for e in services.reports.audit("shop")]
    assert "release" in kinds and "stock" in kinds


def test_release_refuses_bad_bodies(client, shop):
    """sold must be a whole number from 0 up; nothing changes otherwise."""
    body = join(client)
    auth = {"Authorization": f"Bearer {body['pass']}"}
    for bad in ({"sold": -1}, {"sold": "2"}, {"sold": 1.5}, {"sold": 1e9}, [1]):
        reply = client.post("/api/rooms/shop/release", json=bad, headers=auth)
        assert reply.status_code == 400, bad
    assert gate(client, "shop", body["pass"]).status_code == 204
    assert client.post("/api/rooms/shop/release").status_code == 401


def test_jwks_verifies_with_a_second_library(client, shop):
    """The pass verifies from /.well-known/jwks.json with joserfc."""
    body = join(client)
    reply = client.get("/.well-known/jwks.json")
    assert "max-age" in reply.headers["Cache-Control"]
    published = reply.get_json()
    (key,) = published["keys"]
    assert (key["kty"], key["crv"], key["use"]) == ("OKP", "Ed25519", "sig")
    token = rfc_jwt.decode(body["pass"], KeySet.import_key_set(published), algorithms=["EdDSA"])
    assert token.header["kid"] == key["kid"]
    assert token.claims["aud"] == "shop"


def test_key_rotation(redis_url, r, clock, tmp_path):
    """After a key change with PASS_KEY_PREVIOUS set, old passes verify (with the JWKS
    too) until they expire, then do not; new passes use the new key."""
    old = site_app(redis_url, clock, tmp_path, KEY).test_client()
    old.put(
        "/api/admin/rooms/shop",
        json={"capacity": 2, "site_url": SITE},  # two joins fill it: no seat at the gate
        headers={"Authorization": "Bearer test-admin-token"},
    )
    body = join(old)
    new_key = new_private_pem()
    new = site_app(redis_url, clock, tmp_path, new_key, previous=KEY).test_client()
    published = new.get("/.well-known/jwks.json").get_json()
    assert len(published["keys"]) == 2
    keyset = KeySet.import_key_set(published)
    rfc_jwt.decode(body["pass"], keyset, algorithms=["EdDSA"])
    assert gate(new, "shop", body["pass"]).status_code == 204
    fresh = join(new, key="b")["pass"]
    assert jwt.get_unverified_header(fresh)["kid"] != jwt.get_unverified_header(body["pass"])["kid"]
    clock.advance(61)
    assert gate(new, "shop", body["pass"]).status_code == 401
    claims = rfc_jwt.decode(body["pass"], keyset, algorithms=["EdDSA"]).claims
    with pytest.raises(Exception, match="expired"):
        rfc_jwt.JWTClaimsRegistry(exp={"essential": True}).validate(claims)
    without = site_app(redis_url, clock, tmp_path, new_key).test_client()
    assert len(without.get("/.well-known/jwks.json").get_json()["keys"]) == 1


def test_next_targets_stay_on_the_site():
    """next is a path (or URL) on site_url's origin; anything else is the site itself."""
    assert site_target(SITE, "/shop/item?x=1") == "https://shop.example/shop/item?x=1"
    assert site_target(SITE, "https://shop.example/a") == "https://shop.example/a"
    for bad in (
        "https://evil.example/",
        "//evil.example/",
        "/\\evil.example",
        "javascript:x",
        "https://shop.example.evil.example/",
        "http://shop.example/",
        None,
        "",
    ):
        assert site_target(SITE, bad) == SITE, bad
    assert not is_local_path("/a\nb")


def test_admit_per_minute_is_shown_in_the_estimate(client, make_room):
    """A waiting visitor's wait accounts for admit_per_minute when it is slower than
    seats free up (ten seats of a minute each: ten a minute; the cap: one)."""
    waits = {}
    for room, cap in (("free", None), ("capped", 1)):
        make_room(room, capacity=10, typical_stay_seconds=60, admit_per_minute=cap)
        for i in range(10):
            join(client, room, key=f"{room}-seat-{i}")
        body = join(client, room, key=f"{room}-waiting")
        assert body["status"] == "waiting"
        waits[room] = body["wait"]
    assert waits["capped"] > 5 * waits["free"]


def test_admit_per_minute_holds_joins_back(client, make_room, clock):
    """With admit_per_minute 2, the third joiner of a minute waits though seats are
    free, and is let in in the next minute."""
    clock.advance(60 - clock() % 60)
    make_room("paced", capacity=10, admit_per_minute=2, dropout_seconds=120)
    states = [join(client, "paced", key=f"k{i}")["status"] for i in range(3)]
    assert states == ["admitted", "admitted", "waiting"]
    third = join(client, "paced", key="k2")
    clock.advance(60)
    body = client.get(f"/api/rooms/paced/position/{third['token']}").get_json()
    assert body["status"] == "admitted"


@pytest.mark.parametrize(
    ("key", "previous", "says"),
    [
        ("not a key", None, "WEBAPP_PASS_KEY is not a PEM"),
        (KEY, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "PREVIOUS"),
    ],
)
def test_a_bad_pass_key_is_refused_at_start(redis_url, r, clock, tmp_path, key, previous, says):
    """A WEBAPP_PASS_KEY (or _PREVIOUS) that is not an Ed25519 PEM key stops the start
    with words saying which."""
    with pytest.raises(ConfigError, match=says):
        site_app(redis_url, clock, tmp_path, key, previous)


def test_a_pass_key_is_made_and_kept(redis_url, r, clock, tmp_path):
    """Without WEBAPP_PASS_KEY, one is made in the data directory and every process
    started on it signs with the same key."""
    first = site_app(redis_url, clock, tmp_path, None).test_client()
    second = site_app(redis_url, clock, tmp_path, None).test_client()
    assert (tmp_path / "pass_key.pem").read_text().startswith("-----BEGIN PRIVATE KEY-----")
    keys = first.get("/.well-known/jwks.json").get_json()
    assert keys == second.get("/.well-known/jwks.json").get_json()


def test_pass_cookie_is_secure_and_shared_when_configured(redis_url, r, clock, tmp_path):
    """Behind HTTPS (SESSION_COOKIE_SECURE) the pass cookie is Secure; with
    PASS_COOKIE_DOMAIN it names that domain, for sibling hosts."""
    secure = {"SESSION_COOKIE_SECURE": True, "PASS_COOKIE_DOMAIN": "example.com"}
    app = site_app(redis_url, clock, tmp_path, KEY, **secure)
    client = app.test_client()
    client.put("/api/admin/rooms/shop", json={"capacity": 2, "site_url": SITE},
               headers={"Authorization": "Bearer test-admin-token"})  # fmt: skip
    body = join(client)
    clock.advance(31)
    cookie = gate(client, "shop", body["pass"]).headers["Set-Cookie"]
    assert "Secure" in cookie and "Domain=example.com" in cookie


def test_fresh_pass_is_answered_before_flask(client, shop, app, monkeypatch):
    """The fast path (FreshGate) answers a fresh pass without Flask's request handling,
    with the route's answer; a pass due for renewal still reaches the route."""
    body = join(client)
    entered = []
    monkeypatch.setattr(
        app, "full_dispatch_request", lambda: entered.append(1) or app.response_class("", 500)
    )
    reply = gate(client, "shop", body["pass"])
    assert reply.status_code == 204 and not entered
    assert reply.headers["X-Waiting-Room-Visitor"] == public_id(body["token"])
    assert gate(client, "shop", "bad").status_code == 500 and entered  # on to the route


def test_release_counts_the_stock_down(client, make_room, app):
    """A release's sold is a stock report (issue 24): a room with a stock counts it
    down, once per seat."""
    make_room("shop", capacity=2, site_url=SITE, stock=5)
    body = join(client)
    auth = {"Authorization": f"Bearer {site_key(client)}", "X-Waiting-Room-Pass": body["pass"]}
    for _ in range(2):
        client.post("/api/rooms/shop/release", json={"sold": 2}, headers=auth)
    left, sold, _ = app.extensions["services"].visits.drops.stock("shop")
    assert (left, sold) == (3, 2)


def test_a_pass_of_this_deployment_is_checked_by_its_hmac(app, clock):
    """Issue 32: the gate checks its own passes by the HMAC among their claims (``wrt``),
    not the Ed25519 signature (a site still checks that); without a matching tag, the
    signature decides, and claims changed under a kept tag are refused."""
    passes = app.extensions["services"].passes
    now = clock()
    token = passes.issue("shop", "t" * 24, 30, now)
    head, claims, signature = token.split(".")
    unsigned = f"{head}.{claims}.{'A' * len(signature)}"
    assert passes.verify("shop", unsigned, now).token == "t" * 24  # the HMAC sufficed
    header = jwt.get_unverified_header(token)
    untagged = jwt.encode(
        jwt.decode(token, options={"verify_signature": False}) | {"wrt": "x" * 43},
        passes.keys.signing, "EdDSA", headers={"kid": header["kid"]},
    )  # fmt: skip
    assert passes.verify("shop", untagged, now).token == "t" * 24  # by its signature
    with pytest.raises(InvalidPass):
        passes.verify("shop", f"{untagged.rsplit('.', 1)[0]}.{'A' * len(signature)}", now)
    changed = jwt.decode(token, options={"verify_signature": False}) | {"exp": int(now) + 9999}
    forged = jwt.encode(changed, PassKeys(OTHER_KEY).signing, "EdDSA", headers=header)
    with pytest.raises(InvalidPass):
        passes.verify("shop", forged, now)


def test_a_cookie_header_that_is_no_utf8_gets_the_gates_answer(client, shop, app):
    """A Cookie header of bytes that are no UTF-8 (the server decodes them as Latin-1):
    the gate reads it as Flask does (no such pass: 401 with the way to the line), never
    a server error; a fresh pass beside them still gets its 204."""
    body = join(client)
    cookie = f"wr_pass_shop={body['pass']}"
    for raw in ("wr_pass_shop=\xe9", "\xff\xfe; x=\xe9", f"{cookie}; x=\xe9"):
        environ = EnvironBuilder("/gate/shop").get_environ()
        environ["HTTP_COOKIE"] = raw  # (the test client would re-encode it)
        _, status, _ = run_wsgi_app(app, environ, buffered=True)
        assert int(status.split()[0]) < 500, raw
    assert int(status.split()[0]) == 204, "the pass beside the odd cookie"
