// The run page's serving section (a workload with a serving step): the endpoint, replicas
// ready / desired, utilization over time (the controller's recent autoscaler evaluations,
// status.serving.history) and the scale events. Fed by the run's event stream: each `status`
// carries status.serving, each `event` may be a scale event.
import { el, clear } from './dom.js';
import { time } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 600; // the chart's user units; it scales to the section's width
const H = 120;
const SCALE_REASONS = new Set(['ScaledUp', 'ScaledDown', 'ServingReady', 'ServingNotReady', 'ReplicaRestarted']);
const MAX_SCALE_EVENTS = 200;

function svg(tag, attrs = {}) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  return n;
}

function pct(v) {
  return `${Math.round(100 * (v || 0))}%`;
}

//! Utilization (a line, % of the replicas' request) and ready / desired replicas (steps) over
//! the history's time span. Text only through textContent.
export function servingChart(history) {
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'serving-chart', role: 'img', 'data-testid': 'serving-chart' });
  const title = svg('title');
  root.append(title);
  if (!history.length) {
    title.textContent = 'no evaluation yet';
    return root;
  }
  const t0 = history[0].timeMs;
  const t1 = Math.max(t0 + 1, history[history.length - 1].timeMs);
  const maxUtil = Math.max(1, ...history.map((h) => h.utilization || 0));
  const maxReplicas = Math.max(1, ...history.map((h) => Math.max(h.desiredReplicas || 0, h.readyReplicas || 0)));
  const x = (t) => ((t - t0) / (t1 - t0)) * (W - 4) + 2;
  const yUtil = (u) => H - 4 - (u / maxUtil) * (H - 8);
  const yRep = (r) => H - 4 - (r / maxReplicas) * (H - 8);
  const line = (pts, cls) => root.append(svg('polyline', { points: pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' '), class: cls }));
  const steps = (key) => {
    const pts = [];
    history.forEach((h, i) => {
      if (i > 0) pts.push([x(h.timeMs), yRep(history[i - 1][key] || 0)]);
      pts.push([x(h.timeMs), yRep(h[key] || 0)]);
    });
    return pts;
  };
  line(steps('desiredReplicas'), 'desired');
  line(steps('readyReplicas'), 'ready');
  line(history.map((h) => [x(h.timeMs), yUtil(h.utilization || 0)]), 'util');
  const last = history[history.length - 1];
  title.textContent = `utilization ${pct(last.utilization)} (scale max ${pct(maxUtil)}), ${last.readyReplicas}/${last.desiredReplicas} replicas, ${time(t0)} – ${time(t1)}`;
  root.dataset.samples = String(history.length);
  return root;
}

//! The section. update(serving) with status.serving (null when the step does not serve now);
//! addEvents(events) with run events, keeping the scale ones.
export function servingPanel() {
  const facts = el('div', { class: 'facts', testid: 'serving-facts' });
  const chartBox = el('div', { class: 'chartbox' });
  const legend = el(
    'div',
    { class: 'legend muted' },
    el('span', { class: 'key util', text: '— utilization (% of request)' }),
    el('span', { class: 'key ready', text: '— ready replicas' }),
    el('span', { class: 'key desired', text: '— desired replicas' }),
  );
  const scaleList = el('ul', { class: 'events', testid: 'serving-scale-events' });
  const root = el('div', { testid: 'serving-view' }, facts, chartBox, legend, el('h3', { text: 'Scale events' }), scaleList);
  let scaleCount = 0;
  const fact = (k, v, testid) => facts.append(el('span', { class: 'fact' }, el('b', { text: k + ' ' }), el('span', { text: v, testid })));
  return {
    root,
    update(serving) {
      clear(facts);
      if (!serving) {
        fact('serving', 'not serving now');
        return;
      }
      fact('step', serving.step || '');
      fact('endpoint', serving.endpoint || '', 'serving-endpoint');
      fact('replicas', `${serving.readyReplicas ?? 0}/${serving.desiredReplicas ?? 0} ready/desired (${serving.replicas ?? 0} running)`, 'serving-replicas');
      fact('utilization', pct(serving.utilization), 'serving-utilization');
      fact('requests', `${serving.requestsTotal ?? 0} (${serving.requestErrorsTotal ?? 0} errors)`);
      if (serving.lastScaleTime) fact('last scale', serving.lastScaleTime);
      clear(chartBox).append(servingChart(serving.history || []));
    },
    addEvents(events) {
      for (const e of events) {
        if (!SCALE_REASONS.has(e.reason)) continue;
        scaleList.append(el('li', { class: e.type === 'Warning' ? 'warn' : '' }, el('span', { class: 'mono', text: time(e.timeMs) + ' ' }), el('b', { text: e.reason + ' ' }), el('span', { text: e.message || '' })));
        if (++scaleCount > MAX_SCALE_EVENTS) {
          scaleList.firstChild.remove();
          scaleCount--;
        }
      }
    },
  };
}
