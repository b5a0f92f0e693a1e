"""The correction console's web server: FastAPI + uvicorn, one static page, one WebSocket.

HTTP (every route needs the token, see :mod:`.auth`):

* ``GET /`` the page (``?token=...`` sets the cookie), ``GET /static/*`` its files;
* ``GET /api/describe``: the robot, its operator axes and keys, the cameras;
* ``POST /api/estop`` (``{"reason": ...}``), ``POST /api/estop/reset``
  (``{"confirm": true}``), ``POST /api/label`` (``{"label": "success" | "failure" |
  "rerecord"}``), ``POST /api/reset_episode``.

WebSocket ``/ws``: the server sends the state (JSON, 20 Hz) and each new camera frame
(binary: camera index, uint8; capture time, float64 epoch s; JPEG); the page sends
``takeover``, ``giveback``, ``command`` (``axes`` as fractions of each axis' limit),
``visibility`` and ``release``. The session that takes over first is the operator;
others are read-only until it lets go.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import struct
import threading
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import uvicorn
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response

from sim2real.console.auth import COOKIE, origin_ok, presented_token, token_ok
from sim2real.policies.teleop.target import LABELS, ConsoleTarget

STATIC = Path(__file__).with_name("static")
STATE_PERIOD = 0.05
"""s between state messages (20 Hz)."""
FRAME_HEADER = struct.Struct("<Bd")
UNAUTHORIZED = "401 Unauthorized: open the URL with the token that `sim2real console` printed\n"


class JpegCache:
    """One JPEG per new frame, whichever client asks first (frames may already be JPEG)."""

    def __init__(self, quality: int = 80) -> None:
        self.quality = quality
        self._cache: dict[str, tuple[int, bytes]] = {}

    def get(self, camera: str, seq: int, frame: np.ndarray | bytes) -> bytes:
        hit = self._cache.get(camera)
        if hit is not None and hit[0] == seq:
            return hit[1]
        data = frame if isinstance(frame, bytes) else _encode(frame, self.quality)
        self._cache[camera] = (seq, data)
        return data


def _encode(rgb: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return buf.tobytes()


def create_app(target: ConsoleTarget, token: str) -> FastAPI:
    """The console's ASGI app for ``target``, guarded by ``token``."""
    app = FastAPI(title="sim2real correction console", docs_url=None, redoc_url=None, openapi_url=None)
    jpegs = JpegCache()
    sessions = itertools.count(1)

    def authorized(request: Request) -> bool:
        presented = presented_token(request.query_params, request.headers, request.cookies)
        return token_ok(presented, token) and origin_ok(request.headers.get("origin"), request.headers.get("host"))

    @app.middleware("http")
    async def require_token(request: Request, call_next: Any) -> Response:
        if not authorized(request):
            return PlainTextResponse(UNAUTHORIZED, status_code=401)
        response: Response = await call_next(request)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = ("default-src 'self'; img-src 'self' blob:; "
                                                       "connect-src 'self'; frame-ancestors 'none'")
        return response

    @app.get("/")
    async def page(request: Request) -> Response:
        response = FileResponse(STATIC / "index.html")
        if request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/static/{name}")
    async def static(name: str) -> Response:
        path = STATIC / name
        if "/" in name or name.startswith(".") or not path.is_file():
            return PlainTextResponse("404 Not Found\n", status_code=404)
        return FileResponse(path)

    @app.get("/api/describe")
    async def describe() -> JSONResponse:
        return JSONResponse(target.describe())

    @app.post("/api/estop")
    async def estop(request: Request) -> JSONResponse:
        body = await _json(request)
        return _result(target.estop(str(body.get("reason") or "console e-stop button")))

    @app.post("/api/estop/reset")
    async def estop_reset(request: Request) -> JSONResponse:
        if (await _json(request)).get("confirm") is not True:
            return JSONResponse({"ok": False, "error": "resetting the e-stop needs {\"confirm\": true}"}, 400)
        return _result(target.reset_estop())

    @app.post("/api/label")
    async def label(request: Request) -> JSONResponse:
        kind = (await _json(request)).get("label")
        if kind not in LABELS:
            return JSONResponse({"ok": False, "error": f"label must be one of {list(LABELS)}"}, 400)
        return _result(target.label(str(kind)))

    @app.post("/api/reset_episode")
    async def reset_episode() -> JSONResponse:
        return _result(target.reset_episode())

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        presented = presented_token(ws.query_params, ws.headers, ws.cookies)
        if not token_ok(presented, token) or not origin_ok(ws.headers.get("origin"), ws.headers.get("host")):
            await ws.close(code=4403, reason="forbidden: token or origin")
            return
        await ws.accept()
        session = f"s{next(sessions)}"
        sender = asyncio.create_task(_push(ws, target, session, jpegs))
        try:
            while True:
                text = await ws.receive_text()
                received = time.time()
                reply = _handle(target, session, text)
                if reply and reply != "rate limited":  # counted; the page's 50 Hz may jitter into it
                    await ws.send_text(json.dumps({"type": "reply", "error": reply}))
                elif text.startswith('{"type":"ping"'):  # the page's link latency and clock offset
                    await ws.send_text(json.dumps({"type": "pong", "t": json.loads(text).get("t"),
                                                   "server": received}))
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            sender.cancel()
            with target.lock:
                target.control.disconnected(session, time.monotonic())
            target.commanded()  # a hold goes out now

    return app


def _handle(target: ConsoleTarget, session: str, text: str) -> str:
    """One message from a page; the reason when it was refused."""
    try:
        msg = json.loads(text)
    except ValueError:
        return "not JSON"
    if not isinstance(msg, dict):
        return "not a JSON object"
    kind, now, control = msg.get("type"), time.monotonic(), target.control
    with target.lock:
        if kind == "command":
            axes = msg.get("axes")
            reply = control.command(session, axes if isinstance(axes, list) else [], now)
            if not reply:
                target.commanded()
            return reply
        if kind == "takeover":
            return control.take_over(session, now)
        if kind == "giveback":
            return control.give_back(session, now)
        if kind == "release":
            control.release(session, now)
            return ""
        if kind == "visibility":
            if msg.get("visible") is not True:
                control.hidden(session, now)
                target.commanded()
            return ""
        if kind == "ping":
            return ""  # answered by the receive loop (a pong carries the server's clock)
    return f"unknown message type {kind!r}"


async def _push(ws: WebSocket, target: ConsoleTarget, session: str, jpegs: JpegCache) -> None:
    """The state at 20 Hz and every new frame of every camera, to one page."""
    sent: dict[str, int] = {}
    cameras = target.camera_names()
    next_state = 0.0
    while True:
        now = time.monotonic()
        if now >= next_state:
            next_state = now + STATE_PERIOD
            with target.lock:
                snap = target.snapshot()
                snap["you"] = {"session": session, "operator": target.control.owner == session}
                snap["events"] = [[round(t, 3), m] for t, m in list(target.events)[-8:]]
                snap["devices"] = dict(target.devices)
            await ws.send_text(json.dumps({"type": "state", **snap}, default=_json_default))
        for index, cam in enumerate(cameras):
            latest = target.frames.latest(cam)
            if latest is not None and latest[0] != sent.get(cam):
                seq, stamp, frame = latest
                sent[cam] = seq
                await ws.send_bytes(FRAME_HEADER.pack(index, stamp) + jpegs.get(cam, seq, frame))
        await asyncio.sleep(0.01)  # 100 checks/s: a 15 Hz frame waits 5 ms on average


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _result(error: str) -> JSONResponse:
    return JSONResponse({"ok": not error, "error": error}, status_code=200 if not error else 409)


class ConsoleServer:
    """uvicorn serving the console in a background thread.

    Args:
        host: Address to bind; 127.0.0.1 unless the operator explicitly asks for more.
        port: 0 picks a free port (see :attr:`port` once started).
    """

    def __init__(self, target: ConsoleTarget, token: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.target, self.token, self.host = target, token, host
        config = uvicorn.Config(create_app(target, token), host=host, port=port, log_level="warning",
                                ws_max_size=1 << 16, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name="console-http", daemon=True)
        self.inputs: list[Any] = []
        """Inputs on this machine (a SpaceMouse) stopped with the server."""

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the console's web server did not start on {self.host}")
            time.sleep(0.02)

    @property
    def port(self) -> int:
        for server in self.server.servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        raise RuntimeError("the console's web server is not listening")

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}/?token={self.token}"

    def stop(self) -> None:
        for device in self.inputs:
            device.stop()
        self.server.should_exit = True
        self._thread.join(timeout=5)
