// How numbers, times and phases are shown.

//! 137000 -> "2m17s"; 950 -> "950ms"; 0/undefined -> "".
export function duration(ms) {
  if (!ms || ms < 0) return '';
  if (ms < 1000) return Math.round(ms) + 'ms';
  let s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}

//! 12400000000 -> "12.4 GB" (decimal units, as docs/user-guide.md).
export function bytes(n) {
  if (n == null || n < 0) return '';
  if (n < 1000) return n + ' B';
  const units = ['kB', 'MB', 'GB', 'TB', 'PB'];
  let v = n;
  let i = -1;
  do {
    v /= 1000;
    i++;
  } while (v >= 1000 && i < units.length - 1);
  return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + units[i];
}

//! Binary sizes for limits as they are written in specs: 268435456 -> "256Mi".
export function binary(n) {
  if (!n) return '';
  const units = ['Ki', 'Mi', 'Gi', 'Ti'];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1 && v % 1024 === 0) {
    v /= 1024;
    i++;
  }
  return i < 0 ? n + ' B' : v + units[i];
}

//! Age of a time in ms since the epoch: "3m", "2h", "5d".
export function age(ms, now = Date.now()) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

export function time(ms) {
  return ms ? new Date(ms).toLocaleString() : '';
}

//! The mark shown beside a phase's colour, so it reads without colour too.
const MARKS = {
  SUCCEEDED: '✓',
  FAILED: '✗',
  RUNNING: '▶',
  RETRYING: '↻',
  PENDING: '…',
  SKIPPED: '⤼',
  TIMED_OUT: '⧗',
  CANCELLED: '⊘',
  REJECTED: '⊘',
};
export function mark(phase) {
  return MARKS[phase] || '?';
}
export function phaseClass(phase) {
  return 'ph-' + String(phase || 'UNKNOWN').toLowerCase();
}

export const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'REJECTED']);

//! A run's cost (status.cost) in its currency: "12.35 USD", "0.000412 USD" below a cent, with
//! its attempts; "" without one.
export function money(cost) {
  if (!cost || typeof cost.total !== 'number') return '';
  const v = cost.total;
  const amount = v === 0 || v >= 0.01 ? v.toFixed(2) : v.toFixed(6);
  return `${amount} ${cost.currency || 'USD'} (${cost.attempts} attempt${cost.attempts === 1 ? '' : 's'})`;
}
