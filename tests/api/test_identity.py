"""One place per person (issue 29): a room with ``identity`` takes its site's signed
token for its customer (HS256 or EdDSA), holds one place per ``sub`` from any device or
address, uses each ``jti`` once, refuses a bad or missing token with 401 and nothing
changed; the customer is in the pass (``uid``), the panel's lists and the audit log."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.api.conftest import ADMIN
from tests.api.test_gate import SITE, site_app
from webapp.domain.passes import new_private_pem

pytestmark = pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
KEY = new_private_pem()
SECRET = "the shop's identity secret, 32+ characters long"
SIGNER = Ed25519PrivateKey.generate()
PUBLIC_PEM = (
    SIGNER.public_key()
    .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    .decode()
)


@pytest.fixture
def app(redis_url, r, clock, tmp_path):
    return site_app(redis_url, clock, tmp_path, KEY)


@pytest.fixture
def shop(make_room):
    return make_room("shop", capacity=1, site_url=SITE, identity="optional",
                     identity_secret=SECRET, identity_public_key=PUBLIC_PEM)  # fmt: skip


def token(clock, sub="customer-42", room="shop", jti=None, ahead=300, key=SECRET, alg="HS256"):
    claims = {"sub": sub, "aud": room, "exp": int(clock()) + ahead, "jti": jti or f"j-{sub}"}
    return jwt.encode(claims, key, algorithm=alg)


def join(client, identity=None, address="192.0.2.1", key=""):
    body = {} if identity is None else {"identity": identity}
    headers = {"Idempotency-Key": key} if key else {}
    return client.post("/api/rooms/shop/join", json=body, headers=headers,
                       environ_base={"REMOTE_ADDR": address})  # fmt: skip


def waiting(app):
    return app.extensions["services"].reports.summary("shop").waiting


def test_one_customer_holds_one_place_from_any_device(client, shop, clock, app):
    """Two tokens for one sub, from two addresses and two clients: the same ticket."""
    join(client, key="someone")  # the one seat: the customer waits in line
    first = join(client, token(clock, jti="a"), address="192.0.2.1", key="phone")
    second = join(client, token(clock, jti="b"), address="198.51.100.7", key="laptop")
    assert first.status_code == second.status_code == 200
    assert first.get_json()["token"] == second.get_json()["token"]
    assert waiting(app) == 1
    other = join(client, token(clock, sub="customer-43"))
    assert other.status_code == 200 and other.get_json()["token"] != first.get_json()["token"]


@pytest.mark.parametrize(
    "what",
    ["used", "other room", "expired", "too long-lived", "bad signature", "wrong algorithm",
     "no sub", "garbage"],
)  # fmt: skip
def test_a_bad_token_is_401_and_changes_nothing(client, shop, clock, app, what):
    good = token(clock, jti="once")
    assert join(client, good).status_code == 200  # the seat
    bad = {
        "used": good,
        "other room": token(clock, room="elsewhere"),
        "expired": token(clock, ahead=-1),
        "too long-lived": token(clock, ahead=3600),
        "bad signature": token(clock, key="another secret, also 32 characters long"),
        "wrong algorithm": jwt.encode(
            {"sub": "x", "aud": "shop", "exp": int(clock()) + 60, "jti": "z"},
            SECRET * 2,  # HS512 wants 64 bytes
            algorithm="HS512",
        ),
        "no sub": jwt.encode({"aud": "shop", "exp": int(clock()) + 60, "jti": "y"}, SECRET),
        "garbage": "not.a.token",
    }[what]
    before = app.extensions["services"].reports.summary("shop")
    reply = join(client, bad, address="203.0.113.5")
    assert reply.status_code == 401
    assert reply.get_json()["error"] == "identity_invalid"
    assert app.extensions["services"].reports.summary("shop") == before


def test_eddsa_tokens_are_taken_too(client, shop, clock):
    signed = token(clock, sub="ed-customer", key=SIGNER, alg="EdDSA")
    assert join(client, signed).status_code == 200


def test_a_required_room_refuses_joins_without_a_token(client, make_room, clock, app):
    make_room("shop", capacity=1, site_url=SITE, identity="required", identity_secret=SECRET)
    reply = join(client)
    assert reply.status_code == 401
    assert reply.get_json()["error"] == "identity_required"
    assert reply.get_json()["site_url"] == SITE
    assert app.extensions["services"].reports.summary("shop").active == 0
    assert join(client, token(clock)).status_code == 200


def test_a_refused_join_leaves_the_token_unused(client, shop, clock, app):
    """A closed room refuses the join (409): the same token works once it opens."""
    app.extensions["services"].visits.configure("shop", {"status": "closed"})
    once = token(clock, jti="kept")
    assert join(client, once).status_code == 409
    app.extensions["services"].visits.configure("shop", {"status": "open"})
    assert join(client, once).status_code == 200


def test_the_customer_is_in_the_pass_the_panel_lists_and_the_audit(client, shop, clock, app):
    body = join(client, token(clock, sub="c-77")).get_json()
    claims = jwt.decode(body["pass"], options={"verify_signature": False})
    assert claims["uid"] == "c-77"
    services = app.extensions["services"]
    (seated,) = services.reports.seated("shop")
    assert seated.customer == "c-77"
    client.post(f"/api/admin/rooms/shop/remove/{body['token']}", headers=ADMIN)
    audit = client.get("/api/admin/rooms/shop/audit", headers=ADMIN).get_json()
    assert {e["customer"] for e in audit if e["kind"] in ("admit", "remove")} == {"c-77"}
    csv = client.get("/api/admin/rooms/shop/audit?format=csv", headers=ADMIN).get_data(as_text=True)
    assert csv.splitlines()[0].endswith(",customer") and ",c-77" in csv


def test_the_secret_and_key_are_checked(client, make_room):
    short = client.put("/api/admin/rooms/shop", json={"capacity": 1, "identity_secret": "short"},
                       headers=ADMIN)  # fmt: skip
    assert short.status_code == 400 and "at least 32" in short.get_json()["error"]
    rsa = client.put("/api/admin/rooms/shop", json={"capacity": 1, "identity_public_key": "x"},
                     headers=ADMIN)  # fmt: skip
    assert rsa.status_code == 400 and "PEM" in rsa.get_json()["error"]


def test_the_secret_never_reaches_the_audit_log(client, shop):
    """The shared secret is set and changed, and neither value is written out: the audit
    log (and the room.changed event, built from the same list) says it is hidden."""
    other = "another identity secret, 32+ characters long!"
    changed = client.put("/api/admin/rooms/shop", json={"identity_secret": other}, headers=ADMIN)
    assert changed.status_code == 200
    audit = client.get("/api/admin/rooms/shop/audit", headers=ADMIN).get_data(as_text=True)
    csv = client.get("/api/admin/rooms/shop/audit?format=csv", headers=ADMIN).get_data(as_text=True)
    for text in (audit, csv):
        assert SECRET not in text and other not in text
        assert "(hidden)" in text
