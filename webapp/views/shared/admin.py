"""What the admin's two doors (the panel and the JSON API) and the metrics endpoint
share: the admin token's check and its throttle, the bounds of an admission request,
and CSV downloads guarded against spreadsheet formulas."""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable, Sequence

from flask import Response, current_app, request
from flask.typing import ResponseReturnValue

from webapp.views.shared.errors import error_response
from webapp.web.security import credential_failures, is_admin_token, refused_credentials

admin_throttle = credential_failures("admin-credentials")
MAX_REQUEST_ID = 128
MAX_ADMIT = 10_000


def check_admin() -> ResponseReturnValue | None:
    """None if the request carries the admin token, else the refusal to answer with."""
    expected = current_app.config.get("ADMIN_TOKEN")
    if not expected:
        return error_response(401, "admin access is disabled (WEBAPP_ADMIN_TOKEN is unset)")
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and is_admin_token(token.strip()):
        return None
    refused_credentials("an admin token")
    return error_response(401, "a valid admin token is required", {"WWW-Authenticate": "Bearer"})


def csv_download(
    filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]
) -> Response:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        # a leading =, +, - or @ would be a formula in a spreadsheet: quote it as text
        writer.writerow([_cell(value) for value in row])
    disposition = f'attachment; filename="{filename}"'
    return Response(
        out.getvalue(), mimetype="text/csv", headers={"Content-Disposition": disposition}
    )


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    # Judged after NFKC: a spreadsheet may read a fullwidth or small sign (U+FF1D, U+FE62)
    if isinstance(value, str) and unicodedata.normalize("NFKC", value)[:1] in FORMULA_STARTS:
        return "'" + value
    return value
