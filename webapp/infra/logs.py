"""One look for every line the app's processes log: gunicorn's own
(``[2026-11-29 02:16:36 +0000] [10255] [INFO] Listening at: ...``), then who speaks, so
that `make run`'s output (gunicorn, its workers, the mailer, the webhook worker) reads
as one log."""

from __future__ import annotations

import logging

DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"  # gunicorn's


def configure(who: str = "%(name)s") -> None:
    """Logs INFO and above to stderr in the shared format, each line naming ``who``
    speaks (a worker process's name, else the logger's)."""
    logging.basicConfig(
        level=logging.INFO,
        format=f"[%(asctime)s] [%(process)d] [%(levelname)s] {who} %(message)s",
        datefmt=DATE_FORMAT,
    )
