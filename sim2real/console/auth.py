"""Who may use the console: the holder of a one-time token, from the console's own pages.

The token is printed once, in the URL (as Jupyter does). Opening that URL sets it as an
``HttpOnly``, ``SameSite=Strict`` cookie, so the page's scripts never see it and no other
site's page can send it. Scripts may present it as ``Authorization: Bearer TOKEN``.
A WebSocket must also come from the console's own origin (browsers always say which
page opened it), which stops another site's page from driving the robot.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

COOKIE = "sim2real_console"


def new_token() -> str:
    """256 bits from the OS's CSPRNG, URL-safe."""
    return secrets.token_urlsafe(32)


def presented_token(query: Mapping[str, str], headers: Mapping[str, str], cookies: Mapping[str, str]) -> str:
    """The token a request carries: the URL's ``token``, a Bearer header or the cookie."""
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return query.get("token") or cookies.get(COOKIE, "")


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
