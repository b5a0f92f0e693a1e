// The correction console's page: live views and state over one WebSocket, the
// operator's takeover and commands at 50 Hz while in control, e-stop, labels.
import { Gamepads, Keyboard, TAKEOVER_KEY, combine } from "./input.js";
import { drawPlot, renderDevices, renderKeys, renderState } from "./view.js";

const COMMAND_PERIOD_MS = 20;
const $ = (id) => document.getElementById(id);
const stats = { fps: {}, frames: {}, commandsSent: 0, state: null };
window.consoleStats = stats; // read by the browser tests and the latency benchmark

async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
                                body: JSON.stringify(body ?? {}) });
  const reply = await r.json().catch(() => ({ ok: false, error: `HTTP ${r.status}` }));
  $("reply").textContent = reply.ok ? "" : reply.error;
  return reply;
}

function buildCameras(names) {
  const holder = $("cameras");
  const views = {};
  names.forEach((name) => {
    const fig = document.createElement("figure");
    fig.className = "camera";
    fig.innerHTML = `<img alt="${name} camera" data-camera="${name}"><figcaption><span>${name}</span>` +
                    `<span class="fps">– fps</span></figcaption>`;
    holder.appendChild(fig);
    views[name] = { img: fig.querySelector("img"), fps: fig.querySelector(".fps"), url: null, times: [] };
    stats.fps[name] = 0;
    stats.frames[name] = 0;
  });
  return views;
}

function showFrame(views, names, data) {
  const header = new DataView(data, 0, 9);
  const name = names[header.getUint8(0)];
  const view = views[name];
  if (!view) return;
  const url = URL.createObjectURL(new Blob([data.slice(9)], { type: "image/jpeg" }));
  view.img.onload = () => { if (view.url) URL.revokeObjectURL(view.url); view.url = url; };
  view.img.src = url;
  const now = performance.now();
  view.times.push(now);
  while (view.times.length && now - view.times[0] > 1000) view.times.shift();
  stats.fps[name] = view.times.length;
  stats.frames[name] += 1;
  view.fps.textContent = `${view.times.length} fps`;
}

async function main() {
  const describe = await (await fetch("/api/describe")).json();
  $("robot").textContent = describe.robot;
  $("attachment").textContent = `${describe.attachment} · ${describe.channel}`;
  $("labels").hidden = !describe.labels;
  $("reset-episode").hidden = !describe.resets;
  const views = buildCameras(describe.cameras);
  const keyboard = new Keyboard(describe.axes);
  const gamepads = new Gamepads(describe.axes.map((a) => a.name));
  renderKeys($("keys"), describe.axes);
  let toggled = false;
  let ticks = 0;
  let lastAxes = "";
  let sinceSent = 0;
  let engaged = false; // a takeover this page asked for and has not ended
  let ws = null;

  const send = (msg) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify(msg));
    if (msg.axes) stats.lastCommandEpochMs = performance.timeOrigin + performance.now();
  };

  // Losing sight of the page (tab hidden, window unfocused) drops every held key and
  // suspends the takeover: the server holds the robot until the person re-engages.
  const suspend = () => {
    keyboard.clear();
    toggled = false;
    $("takeover").classList.remove("active");
    if (engaged) send({ type: "visibility", visible: false });
    engaged = false;
  };
  document.addEventListener("visibilitychange", () => { if (document.hidden) suspend(); });
  window.addEventListener("blur", suspend);
  window.addEventListener("pagehide", suspend);

  window.addEventListener("keydown", (e) => {
    // When the key went down, on the epoch clock (the latency benchmark's start).
    if (!e.repeat) stats.lastKeyDown = { code: e.code, epochMs: performance.timeOrigin + e.timeStamp };
    if (e.code === "Escape") { post("/api/estop", { reason: "console e-stop (Escape)" }); return; }
    const labels = { Digit1: "success", Digit2: "failure", Digit3: "rerecord" };
    if (labels[e.code] && describe.labels && !e.repeat) { post("/api/label", { label: labels[e.code] }); return; }
    if (e.code === "Digit4" && describe.resets && !e.repeat) { post("/api/reset_episode"); return; }
    keyboard.down(e.code);
    if (e.code === TAKEOVER_KEY || describe.axes.some((a) => a.keys.includes(e.code))) {
      e.preventDefault();
      if (!e.repeat) {
        tick(); // a press reaches the robot now, not at the next 20 ms tick
        stats.lastKeyDown.sentEpochMs = stats.lastCommandEpochMs;
      }
    }
  });
  window.addEventListener("keyup", (e) => { keyboard.up(e.code); tick(); });

  $("takeover").addEventListener("click", () => {
    toggled = !toggled;
    $("takeover").classList.toggle("active", toggled);
  });
  $("estop").addEventListener("click", () => post("/api/estop", { reason: "console e-stop button" }));
  $("estop-reset").addEventListener("click", () => $("confirm-reset").showModal());
  $("confirm-reset").addEventListener("close", () => {
    if ($("confirm-reset").returnValue === "ok") post("/api/estop/reset", { confirm: true });
  });
  document.querySelectorAll("#labels button").forEach((b) =>
    b.addEventListener("click", () => post("/api/label", { label: b.dataset.label })));
  $("reset-episode").addEventListener("click", () => post("/api/reset_episode"));

  function tick() {
    const want = toggled || keyboard.takeover || gamepads.takeover;
    const axes = combine(keyboard.values(), gamepads.values());
    const key = axes.join(",");
    if (want && !engaged) { // the takeover carries the keys already held: they count from its first command
      send({ type: "takeover", axes });
      stats.commandsSent += 1;
      lastAxes = key;
      sinceSent = 0;
    } else if (want && (key !== lastAxes || ++sinceSent >= 2)) {
      // On every change at once, else at 25 Hz: the dead man (200 ms) needs a steady stream.
      send({ type: "command", axes });
      stats.commandsSent += 1;
      lastAxes = key;
      sinceSent = 0;
    }
    if (!want && engaged) send({ type: "giveback" });
    engaged = want;
    if (++ticks % 10 === 0) renderDevices($("devices"), keyboard, gamepads, describe.axes, stats.state?.devices); // 5 Hz is plenty to read
  }

  const connect = () => {
    ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
    ws.binaryType = "arraybuffer";
    ws.onopen = () => { $("connection").textContent = "connected"; $("connection").className = "pill ok"; };
    ws.onclose = (event) => {
      engaged = false;
      $("connection").className = "pill bad";
      if (event.code === 4401 || event.code === 4403) { // the session expired: only the printed URL helps
        $("connection").textContent = "session expired: open the printed URL again";
        return;
      }
      $("connection").textContent = "disconnected: retrying";
      setTimeout(connect, 1000);
    };
    ws.onmessage = (event) => {
      if (typeof event.data !== "string") { showFrame(views, describe.cameras, event.data); return; }
      const msg = JSON.parse(event.data);
      if (msg.type === "reply") { $("reply").textContent = msg.error; return; }
      if (msg.type === "pong") { // round trip of the link, and the server clock's offset (NTP's rule)
        const now = performance.timeOrigin + performance.now();
        stats.link = { rttMs: now - msg.t, offsetMs: msg.server * 1000 - (msg.t + now) / 2 };
        $("link").textContent = `link ${stats.link.rttMs.toFixed(0)} ms`;
        return;
      }
      if (msg.type === "state") {
        stats.state = msg;
        renderState(msg);
        drawPlot($("plot"), msg.episodes.history);
      }
    };
  };
  connect();
  setInterval(tick, COMMAND_PERIOD_MS);
  setInterval(() => send({ type: "ping", t: performance.timeOrigin + performance.now() }), 1000);
}

main();
