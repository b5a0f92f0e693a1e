// The operator's input devices: the keyboard and gamepads (the browser's Gamepad API).
// Both give the same thing: whether the person asks for control (the takeover key or
// button held) and the axes as fractions of each axis' limit in [-1, 1].

export const TAKEOVER_KEY = "Space";
export const GAMEPAD_TAKEOVER_BUTTON = 5; // RB on the standard mapping
const DEADZONE = 0.12;

export class Keyboard {
  constructor(axes) {
    this.axes = axes; // [{name, keys: [positive, negative]}]
    this.held = new Set();
  }
  down(code) { this.held.add(code); }
  up(code) { this.held.delete(code); }
  clear() { this.held.clear(); }
  get takeover() { return this.held.has(TAKEOVER_KEY); }
  values() {
    return this.axes.map((a) => (this.held.has(a.keys[0]) ? 1 : 0) - (this.held.has(a.keys[1]) ? 1 : 0));
  }
  active() { return this.axes.some((a) => this.held.has(a.keys[0]) || this.held.has(a.keys[1])); }
}

// Standard gamepad mapping: left stick forward/back and left/right drive the first two
// axes, right stick forward/back and left/right the next two, triggers (RT - LT) the fifth.
function stickValues(pad, count) {
  const a = pad.axes;
  const dz = (v) => (Math.abs(v) < DEADZONE ? 0 : Math.max(-1, Math.min(1, v)));
  const triggers = (pad.buttons[7]?.value ?? 0) - (pad.buttons[6]?.value ?? 0);
  const all = [-(a[1] ?? 0), -(a[0] ?? 0), -(a[3] ?? 0), -(a[2] ?? 0), triggers].map(dz);
  return all.slice(0, count).concat(new Array(Math.max(0, count - all.length)).fill(0));
}

export class Gamepads {
  constructor(axisCount) { this.axisCount = axisCount; }
  list() {
    return Array.from(navigator.getGamepads ? navigator.getGamepads() : []).filter((p) => p && p.connected);
  }
  first() { return this.list()[0] ?? null; }
  get takeover() {
    const pad = this.first();
    return !!pad && !!pad.buttons[GAMEPAD_TAKEOVER_BUTTON]?.pressed;
  }
  values() {
    const pad = this.first();
    return pad ? stickValues(pad, this.axisCount) : new Array(this.axisCount).fill(0);
  }
}

// The larger magnitude per axis wins: a key press and a stick never add up past the limit.
export function combine(a, b) {
  return a.map((v, i) => (Math.abs(b[i]) > Math.abs(v) ? b[i] : v));
}
