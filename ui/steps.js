// The run page's per-step panels: the step table and the timeline of attempts, both
// virtualized (only the rows on screen exist).
import { el } from './dom.js';
import { binary, bytes, duration, mark, phaseClass } from './format.js';
import { VirtualRows } from './virtual.js';

//! Why a step failed or did not run, in words: "OOMKilled (limit 64Mi): ...", "timeout: ...",
//! "skipped: when was false".
export function reason(s) {
  const msg = s.message || '';
  switch (s.failureCode) {
    case 'STEP_OOM_KILLED':
      return `OOMKilled (limit ${binary(s.memoryLimitBytes) || 'none'})${msg ? ': ' + msg : ''}`;
    case 'STEP_TIMED_OUT':
    case 'WORKLOAD_TIMED_OUT':
      return 'timeout: ' + msg;
    default:
      break;
  }
  if (s.phase === 'SKIPPED') return 'skipped: ' + (msg || 'its when condition was false');
  if (s.failureCode) return `${s.failureCode}${msg ? ': ' + msg : ''}`;
  if (s.phase === 'FAILED' || s.phase === 'CANCELLED' || s.phase === 'REJECTED') return msg;
  return '';
}

function wall(s, now) {
  if (s.wallMs) return s.wallMs;
  if (s.startedAtMs) return (s.finishedAtMs || now) - s.startedAtMs;
  return 0;
}

// Millicores as a share of the step's CPU limit ("78%"), or in cores without one.
function cpuShare(millicores, s) {
  if (!s.cpuLimitMillis) return `${(millicores / 1000).toFixed(2)} cores`;
  return `${Math.round((100 * millicores) / s.cpuLimitMillis)}%`;
}

//! CPU against the limit: "78% (avg 40%) of 2" — the peak (the highest rate between two of
//! the controller's usage samples, 1 s apart) and the attempt's average (cpu time / wall time).
export function cpuText(s) {
  const avg = s.cpuMs && s.wallMs ? cpuShare((1000 * s.cpuMs) / s.wallMs, s) : '';
  const peak = s.peakCpuMillicores ? cpuShare(s.peakCpuMillicores, s) : '';
  const of = s.cpuLimitMillis ? ` of ${s.cpuLimitMillis / 1000}` : '';
  if (peak && avg) return `${peak} (avg ${avg})${of}`;
  if (peak || avg) return (peak || `avg ${avg}`) + of;
  return '';
}

export function memText(s) {
  if (!s.peakMemoryBytes) return '';
  if (!s.memoryLimitBytes) return bytes(s.peakMemoryBytes);
  const pct = Math.round((100 * s.peakMemoryBytes) / s.memoryLimitBytes);
  return `${bytes(s.peakMemoryBytes)} / ${binary(s.memoryLimitBytes)} (${pct}%)`;
}

const COLUMNS = ['Step', 'Phase', 'Duration', 'CPU peak (avg)', 'Memory peak / limit', 'GPUs', 'Output', 'Exit', 'Attempts', 'Node', 'Reason'];

//! The step table. `run` is the page's model: {steps, gpus(name), outputBytes(name)}.
export function stepTable(run, onSelect) {
  const build = (i) => {
    const s = run.steps[i];
    const now = Date.now();
    const exit = s.signal ? `signal ${s.signal}` : s.attempts ? String(s.exitCode ?? '') : '';
    const out = run.outputBytes(s.name);
    const cells = [
      el('a', { href: '#', text: s.name, onclick: (e) => (e.preventDefault(), onSelect(s.name)) }),
      el('span', { class: 'phase ' + phaseClass(s.phase), text: `${mark(s.phase)} ${s.phase}` }),
      duration(wall(s, now)),
      cpuText(s),
      memText(s),
      run.gpus(s.name),
      out == null ? '' : bytes(out),
      exit,
      String(s.attempts ?? 0),
      s.node || '',
      reason(s),
    ];
    return el(
      'div',
      { class: 'srow', role: 'row', testid: `step-row-${s.name}`, dataset: { phase: s.phase } },
      cells.map((c, k) => el('span', { role: 'cell', class: 'c' + k, title: typeof c === 'string' ? c : null }, c)),
    );
  };
  const rows = new VirtualRows({ rowH: 28, count: () => run.steps.length, build, testid: 'step-table', cls: 'steps' });
  const head = el('div', { class: 'srow shead', role: 'row' }, COLUMNS.map((h, k) => el('span', { role: 'columnheader', class: 'c' + k, text: h })));
  return { root: el('div', { class: 'steptable', role: 'table' }, head, rows.scroller), rows };
}

//! Attempts of each step from the run's events: [{start, end, outcome}], and the waits
//! between them (retry backoff).
export function attemptsFrom(events) {
  const by = new Map();
  for (const e of events) addAttemptEvent(by, e);
  return by;
}

const ENDS = new Set(['Succeeded', 'Failed', 'OOMKilled', 'TimedOut', 'Cancelled', 'Rescheduled']);

export function addAttemptEvent(by, e) {
  if (!e.step) return;
  let list = by.get(e.step);
  if (!list) by.set(e.step, (list = []));
  const open = list.length && list[list.length - 1].end == null ? list[list.length - 1] : null;
  if (e.reason === 'Started') {
    if (open && open.wait) open.end = e.timeMs;
    list.push({ start: e.timeMs, end: null, outcome: 'RUNNING' });
  } else if (ENDS.has(e.reason) && open && !open.wait) {
    open.end = e.timeMs;
    open.outcome = e.reason;
  } else if (e.reason === 'Retrying') {
    if (open && !open.wait) {
      open.end = e.timeMs;
      open.outcome = 'Failed';
    }
    list.push({ start: e.timeMs, end: null, wait: true, outcome: 'backoff' });
  }
}

const OUTCOME = { Succeeded: 'SUCCEEDED', Failed: 'FAILED', OOMKilled: 'FAILED', TimedOut: 'TIMED_OUT', Cancelled: 'CANCELLED', Rescheduled: 'RETRYING', RUNNING: 'RUNNING' };

//! The Gantt chart: a row per step, a bar per attempt (coloured by how it ended), hatched
//! backoff waits, gaps as they were. `run` adds {attempts: Map, span(): [t0, t1]}.
export function timeline(run, onSelect) {
  const build = (i) => {
    const s = run.steps[i];
    const [t0, t1] = run.span();
    const pct = (t) => `${(100 * (t - t0)) / Math.max(1, t1 - t0)}%`;
    const bars = el('div', { class: 'tl-bars', testid: `timeline-bar-${s.name}`, dataset: { phase: s.phase } });
    let parts = run.attempts.get(s.name) || [];
    if (!parts.length && s.startedAtMs) parts = [{ start: s.startedAtMs, end: s.finishedAtMs || null, outcome: s.phase }];
    parts.forEach((a, k) => {
      const end = a.end ?? (s.finishedAtMs || Date.now());
      const phase = a.wait ? 'backoff' : OUTCOME[a.outcome] || a.outcome;
      const b = el('div', {
        class: 'tl-bar ' + (a.wait ? 'tl-wait' : phaseClass(phase)),
        title: `${s.name} ${a.wait ? 'backoff' : 'attempt ' + (parts.slice(0, k + 1).filter((p) => !p.wait).length)}: ${duration(end - a.start) || '0s'} ${a.wait ? '' : a.outcome}`,
      });
      b.style.left = pct(a.start);
      b.style.width = `max(2px, calc(${pct(end)} - ${pct(a.start)}))`;
      bars.append(b);
    });
    return el(
      'div',
      { class: 'tl-row' },
      el('a', { href: '#', class: 'tl-name', text: `${mark(s.phase)} ${s.name}`, onclick: (e) => (e.preventDefault(), onSelect(s.name)) }),
      bars,
    );
  };
  const rows = new VirtualRows({ rowH: 22, count: () => run.steps.length, build, testid: 'timeline', cls: 'timeline' });
  return { root: rows.scroller, rows };
}
