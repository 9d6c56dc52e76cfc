"""A publisher for domain tests where no socket listens (``webapp.domain.visits``)."""

from __future__ import annotations

from typing import Any


class RecordingPublisher:
    """Stands in for the room relay where no socket listens: keeps what was told."""

    def __init__(self) -> None:
        self.changed_rooms: list[str] = []
        self.frames: list[tuple[str, dict[str, Any]]] = []

    def changed(self, room: str) -> None:
        self.changed_rooms.append(room)

    def publish(self, room: str, frame: Any) -> None:
        self.frames.append((room, dict(frame)))
