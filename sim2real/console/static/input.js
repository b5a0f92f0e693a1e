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

// Standard gamepad mapping, by what each axis means: left stick forward/back x,
// left/right y; right stick forward/back z, left/right yaw; the d-pad roll (left/right)
// and pitch (up/down); triggers (RT - LT) the gripper.
function stickValues(pad, names) {
  const a = pad.axes;
  const dz = (v) => (Math.abs(v) < DEADZONE ? 0 : Math.max(-1, Math.min(1, v)));
  const triggers = (pad.buttons[7]?.value ?? 0) - (pad.buttons[6]?.value ?? 0);
  const pressed = (i) => (pad.buttons[i]?.pressed ? 1 : 0);
  const byName = { vx: -(a[1] ?? 0), vy: -(a[0] ?? 0), vz: -(a[3] ?? 0), wz: -(a[2] ?? 0),
                   yaw_rate: -(a[2] ?? 0), wx: pressed(15) - pressed(14), wy: pressed(12) - pressed(13),
                   gripper: triggers };
  return names.map((n) => dz(byName[n] ?? 0));
}

export class Gamepads {
  constructor(names) { this.names = names; }
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
    return pad ? stickValues(pad, this.names) : new Array(this.names.length).fill(0);
  }
}

// The larger magnitude per axis wins: a key press and a stick never add up past the limit.
export function combine(a, b) {
  return a.map((v, i) => (Math.abs(b[i]) > Math.abs(v) ? b[i] : v));
}
