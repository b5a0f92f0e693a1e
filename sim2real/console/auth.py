"""Who may use the console: the holder of the printed token, from the console's own pages.

The token is printed once, in the URL (as Jupyter does). Opening that URL exchanges it
for a **session**: a fresh random id in an ``HttpOnly``, ``SameSite=Strict`` cookie that
expires (``session_ttl``, 12 h unless told), and a redirect to the bare ``/``, so the
token leaves the address bar and the history keeps no URL with it. The page's scripts
never see the token nor the session id, and no other site's page can send them. Scripts
present the token itself as ``Authorization: Bearer TOKEN`` (or ``/ws?token=``, never
in a browser's address bar). A WebSocket must also come from the console's own origin
(browsers always say which page opened it), which stops another site's page from
driving the robot.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

COOKIE = "sim2real_console"
SESSION_TTL = 12 * 3600.0
"""s a browser session lasts; then the page asks for the printed URL again."""
MAX_SESSIONS = 256
"""Sessions kept at most (the oldest go first): opening the URL in a loop cannot grow memory."""


def new_token() -> str:
    """256 bits from the OS's CSPRNG, URL-safe."""
    return secrets.token_urlsafe(32)


def bearer_token(headers: Mapping[str, str]) -> str:
    """The token of an ``Authorization: Bearer TOKEN`` header, or empty."""
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else ""


def token_ok(presented: str, token: str) -> bool:
    """Constant-time comparison (no timing oracle on the token)."""
    return bool(presented) and hmac.compare_digest(presented.encode(), token.encode())


def origin_ok(origin: str | None, host: str | None) -> bool:
    """A browser's request from the console's own origin. Non-browser clients send no
    Origin and are judged by their token alone."""
    if origin is None:
        return True
    if not host:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == host


class Sessions:
    """Browser sessions: random ids, each valid until its expiry (monotonic seconds).
    Thread-safe (the web server's loop and its worker threads)."""

    def __init__(self, ttl: float = SESSION_TTL) -> None:
        if not ttl > 0:
            raise ValueError(f"session_ttl must be > 0 s, got {ttl}")
        self.ttl = ttl
        self._lock = threading.Lock()
        self._expiry: dict[str, float] = {}

    def open(self, now: float) -> str:
        """A new session's id, valid for ``ttl`` from ``now``."""
        sid = secrets.token_urlsafe(32)
        with self._lock:
            for old in [s for s, t in self._expiry.items() if t <= now]:
                del self._expiry[old]
            while len(self._expiry) >= MAX_SESSIONS:
                del self._expiry[min(self._expiry, key=self._expiry.__getitem__)]
            self._expiry[sid] = now + self.ttl
        return sid

    def valid(self, sid: str, now: float) -> bool:
        if not sid:
            return False
        with self._lock:
            for known, expiry in self._expiry.items():  # constant time per id: no oracle on the ids
                if hmac.compare_digest(known.encode(), sid.encode()):
                    return now < expiry
        return False
