// The run's DAG: a node per step, an edge per dependsOn, laid out by level (a step's column is
// one past its deepest dependency) and drawn for what is on screen only, so 10,000 steps pan
// and zoom as smoothly as ten. Nodes are positioned elements (text, phase colour and a mark,
// data-testid="dag-node-<step>" data-phase="<PHASE>"); edges are drawn on a canvas the size
// of the viewport. Panning is the browser's own scrolling (also by dragging); zoom scales the
// layout (buttons, or Ctrl + wheel).
import { el, clear } from './dom.js';
import { mark, phaseClass } from './format.js';

const NODE_W = 170;
const NODE_H = 30;
const COL_W = 220;
const ROW_H = 44;
const PAD = 16;
const OVERSCAN = 200; // px drawn beyond the viewport, so a quick pan shows no holes

//! Levels and positions: steps [{name, dependsOn}] -> {nodes, byName, columns}.
export function layout(steps) {
  const byName = new Map();
  steps.forEach((s, i) => byName.set(s.name, { name: s.name, deps: s.dependsOn || [], kids: [], index: i, level: 0, row: 0, phase: s.phase || 'PENDING' }));
  for (const n of byName.values()) for (const d of n.deps) byName.get(d)?.kids.push(n);
  // Steps are in pipeline order and dependencies may come later in the list: iterate to a
  // fixed point with an explicit stack (no recursion: a 10,000-step chain is 10,000 deep).
  const level = new Map();
  for (const n of byName.values()) {
    if (level.has(n.name)) continue;
    const stack = [n];
    const onStack = new Set([n.name]);
    while (stack.length) {
      const top = stack[stack.length - 1];
      let pending = false;
      let lv = 0;
      for (const d of top.deps) {
        const dn = byName.get(d);
        if (!dn) continue;
        if (!level.has(d)) {
          if (!onStack.has(d)) {
            stack.push(dn);
            onStack.add(d);
            pending = true;
          }
        } else {
          lv = Math.max(lv, level.get(d) + 1);
        }
      }
      if (pending) continue;
      level.set(top.name, lv);
      top.level = lv;
      onStack.delete(top.name);
      stack.pop();
    }
  }
  const columns = [];
  for (const n of byName.values()) {
    (columns[n.level] ||= []).push(n);
  }
  for (const col of columns) {
    if (!col) continue;
    col.sort((a, b) => a.index - b.index);
    col.forEach((n, r) => (n.row = r));
  }
  const rows = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
  return { nodes: [...byName.values()], byName, columns, width: columns.length, height: rows };
}

export class DagView {
  //! `onSelect(stepName)` when a node is clicked.
  constructor(steps, onSelect) {
    this.g = layout(steps);
    this.zoom = 1;
    this.onSelect = onSelect;
    this.rendered = new Map(); // name -> element
    this.scroller = el('div', { class: 'dag-scroll', testid: 'dag-view', tabindex: 0 });
    this.canvas = el('canvas', { class: 'dag-edges' });
    this.plane = el('div', { class: 'dag-plane' });
    this.scroller.append(this.canvas, this.plane);
    this.frame = 0;
    const zoomBy = (f) => this.setZoom(this.zoom * f);
    this.root = el(
      'div',
      { class: 'dag' },
      el(
        'div',
        { class: 'toolbar' },
        el('button', { type: 'button', text: '−', title: 'zoom out', onclick: () => zoomBy(1 / 1.25) }),
        el('button', { type: 'button', text: '+', title: 'zoom in', onclick: () => zoomBy(1.25) }),
        el('button', { type: 'button', text: 'fit', title: 'whole graph', onclick: () => this.fit() }),
        el('span', { class: 'muted small', text: `${this.g.nodes.length} steps, ${this.g.width} levels` }),
      ),
      this.scroller,
    );
    this.scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
    this.scroller.addEventListener(
      'wheel',
      (e) => {
        if (!e.ctrlKey) return;
        e.preventDefault();
        zoomBy(e.deltaY < 0 ? 1.1 : 1 / 1.1);
      },
      { passive: false },
    );
    this.dragPan();
    new ResizeObserver(() => this.schedule()).observe(this.scroller);
    this.resize();
  }

  dragPan() {
    let start = null;
    this.scroller.addEventListener('pointerdown', (e) => {
      if (e.target.closest('.dag-node')) return;
      start = { x: e.clientX, y: e.clientY, l: this.scroller.scrollLeft, t: this.scroller.scrollTop };
      this.scroller.setPointerCapture(e.pointerId);
    });
    this.scroller.addEventListener('pointermove', (e) => {
      if (!start) return;
      this.scroller.scrollLeft = start.l - (e.clientX - start.x);
      this.scroller.scrollTop = start.t - (e.clientY - start.y);
    });
    const stop = () => (start = null);
    this.scroller.addEventListener('pointerup', stop);
    this.scroller.addEventListener('pointercancel', stop);
  }

  setZoom(z) {
    const old = this.zoom;
    this.zoom = Math.min(2, Math.max(0.05, z));
    const s = this.scroller;
    const cx = (s.scrollLeft + s.clientWidth / 2) / old;
    const cy = (s.scrollTop + s.clientHeight / 2) / old;
    this.resize();
    s.scrollLeft = cx * this.zoom - s.clientWidth / 2;
    s.scrollTop = cy * this.zoom - s.clientHeight / 2;
    for (const e of this.rendered.values()) e.remove();
    this.rendered.clear();
    this.schedule();
  }

  fit() {
    const s = this.scroller;
    const w = this.g.width * COL_W + 2 * PAD;
    const h = this.g.height * ROW_H + 2 * PAD;
    this.setZoom(Math.min(1, s.clientWidth / w, s.clientHeight / h));
  }

  resize() {
    this.plane.style.width = `${(this.g.width * COL_W + 2 * PAD) * this.zoom}px`;
    this.plane.style.height = `${(this.g.height * ROW_H + 2 * PAD) * this.zoom}px`;
    this.schedule();
  }

  x(n) {
    return (PAD + n.level * COL_W) * this.zoom;
  }
  y(n) {
    return (PAD + n.row * ROW_H) * this.zoom;
  }

  //! Marks step `name` with `phase` (live updates).
  setPhase(name, phase) {
    const n = this.g.byName.get(name);
    if (!n || n.phase === phase) return;
    n.phase = phase;
    const e = this.rendered.get(name);
    if (e) this.paint(e, n);
    this.schedule();
  }

  paint(e, n) {
    e.className = 'dag-node ' + phaseClass(n.phase) + (this.zoom < 0.35 ? ' tiny' : '');
    e.dataset.phase = n.phase;
    e.textContent = `${mark(n.phase)} ${n.name}`;
    e.title = `${n.name}: ${n.phase}`;
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  // The nodes within the viewport (plus OVERSCAN): the columns in range, then the rows.
  visible() {
    const s = this.scroller;
    const z = this.zoom;
    const x0 = s.scrollLeft - OVERSCAN;
    const x1 = s.scrollLeft + s.clientWidth + OVERSCAN;
    const y0 = s.scrollTop - OVERSCAN;
    const y1 = s.scrollTop + s.clientHeight + OVERSCAN;
    const c0 = Math.max(0, Math.floor((x0 / z - PAD - NODE_W) / COL_W));
    const c1 = Math.min(this.g.columns.length - 1, Math.ceil((x1 / z - PAD) / COL_W));
    const r0 = Math.max(0, Math.floor((y0 / z - PAD - NODE_H) / ROW_H));
    const r1 = Math.ceil((y1 / z - PAD) / ROW_H);
    const out = [];
    for (let c = c0; c <= c1; c++) {
      const col = this.g.columns[c];
      if (!col) continue;
      for (let r = r0; r <= Math.min(r1, col.length - 1); r++) out.push(col[r]);
    }
    return { out, x0, x1, y0, y1 };
  }

  draw() {
    const { out, x0, x1, y0, y1 } = this.visible();
    const keep = new Set(out.map((n) => n.name));
    for (const [name, e] of this.rendered) {
      if (!keep.has(name)) {
        e.remove();
        this.rendered.delete(name);
      }
    }
    const z = this.zoom;
    for (const n of out) {
      if (this.rendered.has(n.name)) continue;
      const e = el('div', { testid: `dag-node-${n.name}`, role: 'button', tabindex: 0 });
      e.style.left = `${this.x(n)}px`;
      e.style.top = `${this.y(n)}px`;
      e.style.width = `${NODE_W * z}px`;
      e.style.height = `${NODE_H * z}px`;
      e.style.fontSize = `${Math.max(6, 12 * z)}px`;
      this.paint(e, n);
      e.addEventListener('click', () => this.onSelect?.(n.name));
      this.plane.append(e);
      this.rendered.set(n.name, e);
    }
    this.drawEdges(out, x0, x1, y0, y1);
  }

  // Edges into and out of the visible nodes (a long edge crossing the screen with both ends
  // off it is left out: a level layout has few).
  drawEdges(visibleNodes, x0, x1, y0, y1) {
    const s = this.scroller;
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = s.clientWidth;
    const h = s.clientHeight;
    if (c.width !== w * dpr || c.height !== h * dpr) {
      c.width = w * dpr;
      c.height = h * dpr;
      c.style.width = `${w}px`;
      c.style.height = `${h}px`;
    }
    c.style.left = `${s.scrollLeft}px`;
    c.style.top = `${s.scrollTop}px`;
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, -s.scrollLeft * dpr, -s.scrollTop * dpr);
    ctx.clearRect(s.scrollLeft, s.scrollTop, w, h);
    ctx.strokeStyle = '#8a94a6';
    ctx.lineWidth = Math.max(0.5, this.zoom);
    ctx.beginPath();
    const z = this.zoom;
    const seen = new Set();
    const edge = (from, to) => {
      const key = from.name + '\u0000' + to.name;
      if (seen.has(key)) return;
      seen.add(key);
      const ax = this.x(from) + NODE_W * z;
      const ay = this.y(from) + (NODE_H * z) / 2;
      const bx = this.x(to);
      const by = this.y(to) + (NODE_H * z) / 2;
      if (Math.max(ax, bx) < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) < y0 || Math.min(ay, by) > y1) return;
      const mx = (ax + bx) / 2;
      ctx.moveTo(ax, ay);
      ctx.bezierCurveTo(mx, ay, mx, by, bx, by);
    };
    for (const n of visibleNodes) {
      for (const d of n.deps) {
        const dn = this.g.byName.get(d);
        if (dn) edge(dn, n);
      }
      for (const k of n.kids) edge(n, k);
    }
    ctx.stroke();
  }

  //! Scrolls step `name` into the middle of the view.
  reveal(name) {
    const n = this.g.byName.get(name);
    if (!n) return;
    const s = this.scroller;
    s.scrollLeft = this.x(n) - s.clientWidth / 2;
    s.scrollTop = this.y(n) - s.clientHeight / 2;
    this.schedule();
  }

  destroy() {
    clear(this.plane);
  }
}
