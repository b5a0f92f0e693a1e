"""The correction console's web server: FastAPI + uvicorn, one static page, one WebSocket.

HTTP (every route needs a session or the token, see :mod:`.auth`):

* ``GET /?token=...`` exchanges the token for a session cookie and redirects to ``/``;
  ``GET /`` the page, ``GET /static/*`` its files;
* ``GET /api/describe``: the robot, its operator axes and keys, the cameras;
* ``POST /api/estop`` (``{"reason": ...}``), ``POST /api/estop/reset``
  (``{"confirm": true}``), ``POST /api/label`` (``{"label": "success" | "failure" |
  "rerecord"}``), ``POST /api/reset_episode``.

WebSocket ``/ws``: the server sends the state (JSON, 20 Hz) and each new camera frame
(binary: camera index, uint8; capture time, float64 epoch s; JPEG); the page sends
``takeover`` (with the ``axes`` already held), ``giveback``, ``command`` (``axes`` as
fractions of each axis' limit), ``visibility``, ``release`` and ``ping``. The session
that takes over first is the operator; others are read-only until it gives back. A
message that is not strict, shallow JSON (:mod:`.protocol`) gets a reason and changes
nothing; the connection stays. When the browser session expires the socket closes
(4401), which holds a takeover like any lost connection.

The routes that call into the robot (e-stop, reset, labels) run in a worker thread: a
ROS service call waits up to seconds, and the event loop keeps streaming meanwhile.

The event loop is the console's receiver, and it runs at real-time priority where the
system permits it (:data:`~sim2real.hardware.realtime.OPERATOR_PRIORITY`): a receiver
starved by a busy machine reads a held key as released, and the dead man then holds the
robot while the person still commands it. Encoding camera frames, the one bulk job of
the web server, runs in a worker at normal priority.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import struct
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response

from sim2real.console.auth import COOKIE, SESSION_TTL, Sessions, bearer_token, origin_ok, token_ok
from sim2real.console.frames import JpegCache
from sim2real.console.protocol import Refused, dumps, finite_number, parse_message
from sim2real.hardware.realtime import OPERATOR_PRIORITY, RealtimeStatus, normal_scheduling, realtime_thread
from sim2real.policies.teleop.target import LABELS, ConsoleTarget

STATIC = Path(__file__).with_name("static")
STATE_PERIOD = 0.05
"""s between state messages (20 Hz)."""
FRAME_HEADER = struct.Struct("<Bd")
UNAUTHORIZED = "401 Unauthorized: open the URL with the token that the console printed (sessions expire)\n"


def create_app(target: ConsoleTarget, token: str, session_ttl: float = SESSION_TTL) -> FastAPI:
    """The console's ASGI app for ``target``, guarded by ``token``; browser sessions last
    ``session_ttl`` seconds."""
    app = FastAPI(title="sim2real correction console", docs_url=None, redoc_url=None, openapi_url=None)
    jpegs = JpegCache()
    # One encoder at normal priority for every page (the cache encodes each frame once).
    encoder = app.state.encoder = concurrent.futures.ThreadPoolExecutor(1, "console-jpeg",
                                                                        initializer=normal_scheduling)
    ids = itertools.count(1)
    sessions = Sessions(session_ttl)

    def authorized(request: Request | WebSocket, query_token: bool = False) -> bool:
        if not origin_ok(request.headers.get("origin"), request.headers.get("host")):
            return False
        presented = bearer_token(request.headers) or (request.query_params.get("token", "") if query_token else "")
        if presented:
            return token_ok(presented, token)
        return sessions.valid(request.cookies.get(COOKIE, ""), time.monotonic())

    @app.middleware("http")
    async def require_token(request: Request, call_next: Any) -> Response:
        if request.url.path == "/" and "token" in request.query_params:
            response: Response = _exchange(request.query_params.get("token", ""), token, sessions)
        elif not authorized(request):
            response = PlainTextResponse(UNAUTHORIZED, status_code=401)
        else:
            response = await call_next(request)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Content-Security-Policy"] = ("default-src 'self'; img-src 'self' blob:; "
                                                       "connect-src 'self'; frame-ancestors 'none'")
        return response

    @app.get("/")
    async def page() -> Response:
        return FileResponse(STATIC / "index.html")

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

    # Each of these may wait on the robot (a ROS service call): off the event loop.
    @app.post("/api/estop")
    async def estop(request: Request) -> JSONResponse:
        reason = (await _json(request)).get("reason")
        reason = reason[:200] if isinstance(reason, str) and reason else "console e-stop button"
        return _result(await asyncio.to_thread(target.estop, reason))

    @app.post("/api/estop/reset")
    async def estop_reset(request: Request) -> JSONResponse:
        if (await _json(request)).get("confirm") is not True:
            return JSONResponse({"ok": False, "error": "resetting the e-stop needs {\"confirm\": true}"}, 400)
        return _result(await asyncio.to_thread(target.reset_estop))

    @app.post("/api/label")
    async def label(request: Request) -> JSONResponse:
        kind = (await _json(request)).get("label")
        if kind not in LABELS:
            return JSONResponse({"ok": False, "error": f"label must be one of {list(LABELS)}"}, 400)
        return _result(await asyncio.to_thread(target.label, str(kind)))

    @app.post("/api/reset_episode")
    async def reset_episode() -> JSONResponse:
        return _result(await asyncio.to_thread(target.reset_episode))

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        if not authorized(ws, query_token=True):
            await ws.close(code=4403, reason="forbidden: token, session or origin")
            return
        await ws.accept()
        cookie = "" if bearer_token(ws.headers) or ws.query_params.get("token") else ws.cookies.get(COOKIE, "")
        session = f"s{next(ids)}"
        expired = (lambda: not sessions.valid(cookie, time.monotonic())) if cookie else (lambda: False)
        sender = asyncio.create_task(_push(ws, target, session, jpegs, encoder, expired))
        try:
            await _receive(ws, target, session)
        except (WebSocketDisconnect, RuntimeError, OSError):  # gone (uvicorn's ClientDisconnected is an OSError)
            pass
        finally:
            sender.cancel()
            with target.lock:
                target.control.disconnected(session, time.monotonic())
            target.commanded()  # a hold goes out now

    return app


def _exchange(presented: str, token: str, sessions: Sessions) -> Response:
    """``/?token=``: a session cookie for the right token, and the bare ``/`` (the token
    leaves the address bar and the history); 401 otherwise."""
    if not token_ok(presented, token):
        return PlainTextResponse(UNAUTHORIZED, status_code=401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, sessions.open(time.monotonic()), max_age=int(sessions.ttl), httponly=True,
                        samesite="strict", path="/")
    return response


async def _receive(ws: WebSocket, target: ConsoleTarget, session: str) -> None:
    """The page's messages until it goes: each handled, or refused with a reason."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        reply = answer(target, session, text) if text is not None else \
            dumps({"type": "reply", "error": "binary messages are not accepted"})
        if reply:
            await ws.send_text(reply)


def answer(target: ConsoleTarget, session: str, text: str) -> str:
    """One text message from a page: what to send back (JSON), or nothing."""
    received = time.time()
    try:
        msg = parse_message(text)
    except Refused as exc:
        return dumps({"type": "reply", "error": str(exc)})
    if msg.get("type") == "ping":  # the page's link latency and clock offset
        t = msg.get("t")
        if not finite_number(t):
            return dumps({"type": "reply", "error": "a ping needs a finite number t"})
        return dumps({"type": "pong", "t": t, "server": received})
    error = _handle(target, session, msg)
    if error and error != "rate limited":  # counted; the page's 50 Hz may jitter into it
        return dumps({"type": "reply", "error": error})
    return ""


def _handle(target: ConsoleTarget, session: str, msg: dict[str, Any]) -> str:
    """One parsed message from a page; the reason when it was refused."""
    kind, now, control = msg.get("type"), time.monotonic(), target.control
    with target.lock:
        if kind == "command":
            reply = control.command(session, msg.get("axes"), now)
            if not reply:
                target.commanded()
            return reply
        if kind == "takeover":
            reply = control.take_over(session, now, msg.get("axes"))
            target.commanded()
            return reply
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
    return f"unknown message type {str(kind)[:40]!r}"


async def _push(ws: WebSocket, target: ConsoleTarget, session: str, jpegs: JpegCache, encoder: Any,
                expired: Any) -> None:
    """The state at 20 Hz and every new frame of every camera, to one page, until its
    session expires."""
    sent: dict[str, int] = {}
    cameras = target.camera_names()
    next_state = 0.0
    while True:
        now = time.monotonic()
        if now >= next_state:
            if expired():
                await ws.close(code=4401, reason="session expired: open the printed URL again")
                return
            next_state = now + STATE_PERIOD
            with target.lock:
                snap = target.snapshot()
                snap["you"] = {"session": session, "operator": target.control.owner == session}
                snap["events"] = [[round(t, 3), m] for t, m in list(target.events)[-8:]]
                snap["devices"] = dict(target.devices)
            await ws.send_text(dumps({"type": "state", **snap}))
        for index, cam in enumerate(cameras):
            latest = target.frames.latest(cam)
            if latest is not None and latest[0] != sent.get(cam):
                seq, stamp, frame = latest
                sent[cam] = seq
                jpeg = jpegs.get(cam, seq, frame) if isinstance(frame, bytes) else \
                    await asyncio.get_running_loop().run_in_executor(encoder, jpegs.get, cam, seq, frame)
                await ws.send_bytes(FRAME_HEADER.pack(index, stamp) + jpeg)
        await asyncio.sleep(0.01)  # 100 checks/s: a 15 Hz frame waits 5 ms on average


async def _json(request: Request) -> dict[str, Any]:
    try:
        return parse_message((await request.body()).decode("utf-8", errors="replace"))
    except Refused:
        return {}


def _result(error: str) -> JSONResponse:
    return JSONResponse({"ok": not error, "error": error}, status_code=200 if not error else 409)


class ConsoleServer:
    """uvicorn serving the console in a background thread.

    Args:
        host: Address to bind; 127.0.0.1 unless the operator explicitly asks for more.
        port: 0 picks a free port (see :attr:`port` once started).
        session_ttl: Seconds a browser session lasts (then the printed URL again).
    """

    def __init__(self, target: ConsoleTarget, token: str, host: str = "127.0.0.1", port: int = 0,
                 session_ttl: float = SESSION_TTL) -> None:
        self.target, self.token, self.host = target, token, host
        self.app = create_app(target, token, session_ttl)
        config = uvicorn.Config(self.app, host=host, port=port, log_level="warning",
                                ws_max_size=1 << 16, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="console-http", daemon=True)
        self.realtime: RealtimeStatus | None = None
        """How the receiving thread is scheduled (once started)."""
        self.inputs: list[Any] = []
        """Inputs on this machine (a SpaceMouse) stopped with the server."""

    def _serve(self) -> None:
        with realtime_thread("console web server", OPERATOR_PRIORITY, cpu=None) as status:
            self.realtime = status
            self.server.run()

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
        self.app.state.encoder.shutdown(wait=False, cancel_futures=True)
