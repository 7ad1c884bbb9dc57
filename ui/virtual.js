// A list of fixed-height rows of which only those on screen exist in the page: the step
// table and the timeline of a 10,000-step run cost what a screenful costs.
import { el } from './dom.js';

const OVERSCAN = 8; // rows built above and below the viewport

export class VirtualRows {
  //! `count()` rows of `rowH` px; `build(i)` makes row i (positioned by this class);
  //! `key(i)` names it, so update(key) can rebuild one row in place.
  constructor({ rowH, count, build, key, testid, cls = '' }) {
    Object.assign(this, { rowH, count, build, key });
    this.rendered = new Map(); // index -> element
    this.scroller = el('div', { class: 'vscroll ' + cls, testid });
    this.plane = el('div', { class: 'vplane', role: 'rowgroup' });
    this.scroller.append(this.plane);
    this.frame = 0;
    this.scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.scroller);
    this.refresh();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  //! Rebuilds every row (the count or the data changed).
  refresh() {
    this.plane.style.height = `${this.count() * this.rowH}px`;
    for (const e of this.rendered.values()) e.remove();
    this.rendered.clear();
    this.schedule();
  }

  //! Rebuilds row `i` if it is on screen.
  update(i) {
    const old = this.rendered.get(i);
    if (!old) return;
    const e = this.place(this.build(i), i);
    old.replaceWith(e);
    this.rendered.set(i, e);
  }

  place(e, i) {
    e.style.top = `${i * this.rowH}px`;
    e.style.height = `${this.rowH}px`;
    e.classList.add('vrow');
    return e;
  }

  draw() {
    const n = this.count();
    const top = this.scroller.scrollTop;
    const h = this.scroller.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / this.rowH) - OVERSCAN);
    const last = Math.min(n - 1, Math.ceil((top + h) / this.rowH) + OVERSCAN);
    for (const [i, e] of this.rendered) {
      if (i < first || i > last) {
        e.remove();
        this.rendered.delete(i);
      }
    }
    for (let i = first; i <= last; i++) {
      if (this.rendered.has(i)) continue;
      const e = this.place(this.build(i), i);
      this.plane.append(e);
      this.rendered.set(i, e);
    }
  }

  //! Scrolls row i into view.
  reveal(i) {
    this.scroller.scrollTop = Math.max(0, i * this.rowH - this.scroller.clientHeight / 2);
    this.schedule();
  }
}
