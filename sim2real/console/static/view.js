// Drawing the console's state: tables, the control badge, the success bar, the plot.
const $ = (id) => document.getElementById(id);

const fmt = (v) => {
  if (v === null || v === undefined) return "–";
  if (Array.isArray(v)) return v.map((x) => (typeof x === "number" ? x.toFixed(3) : String(x))).join("  ");
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
  return String(v);
};

// Rows are made once per key and then only their text changes: the page redraws 20
// times a second next to two live videos, and rebuilding tables made Chromium's layout
// the heaviest thing on a 2-core robot computer.
function rows(table, entries) {
  const keys = entries.map(([k]) => k).join("\u0000");
  if (table.dataset.keys !== keys) {
    table.replaceChildren(...entries.map(([k]) => {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      const td = document.createElement("td");
      th.textContent = k;
      td.className = "num";
      tr.append(th, td);
      return tr;
    }));
    table.dataset.keys = keys;
  }
  entries.forEach(([, v], i) => {
    const td = table.rows[i].cells[1];
    const text = fmt(v);
    if (td.textContent !== text) td.textContent = text;
  });
}

const setText = (el, text) => { if (el.textContent !== text) el.textContent = text; };

export function renderKeys(table, axes) {
  const keyName = (code) => (code || "").replace(/^Key/, "").replace(/^Digit/, "");
  table.replaceChildren(...axes.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.axis = a.name;
    tr.innerHTML = `<th>${a.name}</th><td><kbd>${keyName(a.keys[0])}</kbd> + / <kbd>${keyName(a.keys[1])}</kbd> −</td>` +
                   `<td class="num">±${a.limit} ${a.unit}</td>`;
    return tr;
  }));
}

// How long the mode has lasted, as a person reads it: 8 s, 3 min 12 s, 2 h 05 min.
export function age(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

export function renderState(msg) {
  const c = msg.control;
  const s = msg.safety || {};
  const estop = c.estop || s.estop || "";
  // A latched e-stop outranks whoever would command: nothing moves until its reset.
  const mode = estop ? "estop" : c.mode;
  const badge = $("control");
  if (badge.dataset.mode !== mode) { badge.className = `badge ${mode}`; badge.dataset.mode = mode; }
  setText(badge, estop ? "E-STOP" : `${c.mode.toUpperCase()} ${age(c.seconds)}`);
  const since = new Date(c.since * 1000).toLocaleTimeString();
  const title = estop ? `e-stop latched: ${estop}` : `${c.mode} since ${since}`;
  if (badge.title !== title) badge.title = title;
  setText($("role"), msg.you.operator ? "you are the operator" : (c.owner ? "read-only (another operator)" : "read-only"));
  setText($("hold-reason"), estop ? `E-STOP: ${estop}` : (c.mode === "hold" ? `HOLD: ${c.hold_reason}` : ""));
  rows($("state"), Object.entries(msg.state || {}));
  rows($("safety"), [["e-stop", s.estop || "clear"], ["acting", (s.acting || []).join(", ") || "none"],
                     ["watchdog", s.watchdog || "ok"], ["mode", s.mode || (s.paused ? "paused" : "running")]]);
  const latched = !!s.estop;
  $("estop").classList.toggle("latched", latched);
  $("estop").dataset.latched = String(latched);
  $("estop-reset").hidden = !latched;
  const p = msg.success_probability;
  $("success-bar").style.width = `${Math.round(100 * (p ?? 0))}%`;
  $("success-source").textContent = p === null || p === undefined ? "" : `${(100 * p).toFixed(0)} % (${msg.success_source})`;
  const e = msg.episodes || {};
  rows($("episodes"), [["episode", e.episode], ["steps", e.steps], ["return", e.return],
                       ["success rate", e.success_rate], ["operator share", e.operator_share]]);
  const log = $("events");
  const events = msg.events || [];
  const last = events.length ? String(events[events.length - 1][0]) : "";
  if (log.dataset.last !== last) {
    log.dataset.last = last;
    log.replaceChildren(...events.slice().reverse().map(([t, m]) => {
      const li = document.createElement("li");
      li.textContent = `${new Date(t * 1000).toLocaleTimeString()} ${m}`;
      return li;
    }));
  }
}

export function renderDevices(table, keyboard, gamepads, axes, serverDevices) {
  const keyValues = keyboard.values();
  const entries = [["keyboard", [...keyboard.held].join(" ") || "no keys held"],
                   ["keyboard axes", keyValues]];
  const pads = gamepads.list();
  if (!pads.length) entries.push(["gamepad", "none connected (press a button to wake it)"]);
  pads.forEach((p, i) => {
    entries.push([`gamepad ${i}`, p.id]);
    entries.push([`  axes`, Array.from(p.axes)]);
    entries.push([`  buttons`, p.buttons.map((b, k) => (b.pressed ? k : null)).filter((k) => k !== null).join(" ") || "none"]);
  });
  Object.entries(serverDevices || {}).forEach(([name, d]) => {
    entries.push([`${name} (on the robot's computer)`, d.axes]);
    entries.push([`  buttons`, d.buttons.map((b, k) => (b ? k : null)).filter((k) => k !== null).join(" ") || "none"]);
  });
  rows(table, entries);
  document.querySelectorAll("#keys tr").forEach((tr, i) => tr.classList.toggle("pressed", keyValues[i] !== 0));
}

export function drawPlot(canvas, history) {
  const key = history && history.length ? `${history.length}:${history[history.length - 1].episode}` : "0";
  if (canvas.dataset.key === key) return; // redrawn when an episode ends, not 20 times a second
  canvas.dataset.key = key;
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = "#333";
  [0.25, 0.5, 0.75].forEach((y) => { ctx.beginPath(); ctx.moveTo(0, h * y); ctx.lineTo(w, h * y); ctx.stroke(); });
  if (!history || history.length < 1) return;
  const n = history.length;
  const x = (i) => (n === 1 ? w / 2 : (i / (n - 1)) * (w - 10) + 5);
  const series = (values, color) => {
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    values.forEach((v, i) => (i ? ctx.lineTo(x(i), h - v * (h - 10) - 5) : ctx.moveTo(x(i), h - v * (h - 10) - 5)));
    ctx.stroke();
  };
  const rate = history.map((_, i) => {
    const window = history.slice(Math.max(0, i - 19), i + 1);
    return window.reduce((s, r) => s + r.success, 0) / window.length;
  });
  series(rate, "#2e9d5b");
  series(history.map((r) => r.operator_share), "#e08e0b");
}
