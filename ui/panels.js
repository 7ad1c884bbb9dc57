// The run page's text panels: events, logs (opened at the tail, followed live), lineage, the
// model card, the spec as YAML and the versions with a diff and the rollback button.
import { api, keepWatching } from './api.js';
import { el, clear, errorBox } from './dom.js';
import { bytes, time } from './format.js';
import { diffLines, toYaml } from './yaml.js';

const MAX_EVENTS = 1000; // shown; the API has them all
const MAX_LOG_LINES = 5000; // kept in the page while following
const TAIL_BYTES = 65536; // a log opens at its last 64 KiB

export function eventsPanel() {
  const body = el('tbody');
  const root = el(
    'div',
    { class: 'events scrollbox', testid: 'events-view' },
    el('table', { class: 'grid compact' }, el('thead', {}, el('tr', {}, ['Time', 'Step', 'Type', 'Reason', 'Message'].map((h) => el('th', { text: h })))), body),
  );
  let count = 0;
  const add = (events) => {
    const stick = root.scrollTop + root.clientHeight >= root.scrollHeight - 4;
    const frag = document.createDocumentFragment();
    for (const e of events) {
      frag.append(
        el(
          'tr',
          { class: e.type === 'Warning' ? 'warn' : '' },
          el('td', { class: 'nowrap', text: time(e.timeMs) }),
          el('td', { text: e.step || '' }),
          el('td', { text: e.type || '' }),
          el('td', { text: e.reason || '' }),
          el('td', { text: e.message || '' }),
        ),
      );
      count++;
    }
    body.append(frag);
    while (count > MAX_EVENTS) {
      body.firstChild.remove();
      count--;
    }
    if (stick) root.scrollTop = root.scrollHeight;
  };
  return { root, add };
}

//! Logs of one step at a time (all its attempts, "--- attempt N ---" between them), from the
//! tail, followed live through the workload's event stream.
export function logsPanel(id, stepNames, signal) {
  const select = el('select', { testid: 'log-step' });
  for (const n of stepNames) select.append(el('option', { value: n, text: n }));
  const follow = el('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const state = el('span', { class: 'muted small' });
  const pre = el('pre', { class: 'log', testid: 'log-view', tabindex: 0 });
  let ctl = null;
  let lines = 0;
  let partial = '';
  const write = (text) => {
    const parts = (partial + text).split('\n');
    partial = parts.pop();
    const frag = document.createDocumentFragment();
    for (const line of parts) frag.append(el('div', { class: 'line', text: line }));
    pre.append(frag);
    lines += parts.length;
    while (lines > MAX_LOG_LINES) {
      pre.firstChild.remove();
      lines--;
    }
    if (follow.checked) pre.scrollTop = pre.scrollHeight;
  };
  const open = (step) => {
    ctl?.abort();
    ctl = new AbortController();
    signal.addEventListener('abort', () => ctl.abort(), { once: true });
    clear(pre);
    lines = 0;
    partial = '';
    select.value = step;
    const q = new URLSearchParams({ logStep: step, tailBytes: TAIL_BYTES });
    keepWatching(
      `/api/v1/workloads/${encodeURIComponent(id)}/watch?${q}`,
      (type, data) => {
        if (type === 'log' && data.step === step) write(data.text);
        if (type === 'end' && partial) write('\n');
      },
      ctl.signal,
      (s) => (state.textContent = s === 'live' ? '● following' : s === 'reconnecting' ? '○ reconnecting…' : 'ended'),
    ).catch((e) => ctl.signal.aborted || pre.append(errorBox(e)));
  };
  select.addEventListener('change', () => open(select.value));
  const root = el(
    'div',
    {},
    el('div', { class: 'toolbar' }, el('label', { text: 'Step ' }, select), el('label', {}, follow, ' follow'), state, el('span', { class: 'muted small', text: `opens at the last ${TAIL_BYTES / 1024} KiB` })),
    pre,
  );
  if (stepNames.length) open(stepNames[0]);
  return { root, open };
}

export function lineagePanel(lineage) {
  const root = el('div', { testid: 'lineage-view' });
  root.append(el('pre', { class: 'lineage', text: lineage.text || '' }));
  const outs = lineage.outputs || [];
  if (outs.length) {
    root.append(
      el(
        'table',
        { class: 'grid compact' },
        el('thead', {}, el('tr', {}, ['Step', 'Kind', 'URI', 'Size', 'Digest'].map((h) => el('th', { text: h })))),
        el('tbody', {}, outs.map((o) => el('tr', {}, el('td', { text: o.step || '' }), el('td', { text: o.kind || '' }), el('td', { text: o.uri || '' }), el('td', { text: o.bytes >= 0 ? bytes(o.bytes) : '?' }), el('td', { class: 'mono', text: o.digest || '' })))),
      ),
    );
  }
  return root;
}

//! The model card: model artifacts produced (fingerprint = digest) against what the spec pins,
//! its environment (dependencies), signature and provenance.
export function modelCard(spec, lineage, meta) {
  const root = el('div', { testid: 'model-card' });
  const models = (lineage.outputs || []).filter((o) => /model/i.test(o.kind || '') || /model/i.test(o.uri || ''));
  const rows = [];
  const dl = (k, v) => v != null && v !== '' && rows.push(el('dt', { text: k }), el('dd', { text: typeof v === 'object' ? JSON.stringify(v) : String(v) }));
  for (const m of models) {
    dl('produced', `${m.uri} (${m.bytes >= 0 ? bytes(m.bytes) : '?'})`);
    dl('fingerprint (produced)', m.digest);
  }
  const steps = Array.isArray(spec?.pipeline) ? spec.pipeline : spec?.pipeline?.steps || [];
  for (const s of steps) {
    dl(`${s.name}: environment`, s.environment || s.image);
    dl(`${s.name}: fingerprint (pinned)`, s.model?.fingerprint || s.fingerprint);
    dl(`${s.name}: signature`, s.signature || s.model?.signature);
  }
  dl('spec digest', meta.digest);
  dl('created by', meta.createdBy);
  dl('version', meta.version);
  if (!rows.length) root.append(el('p', { class: 'muted', text: 'No model artifacts recorded for this run.' }));
  else root.append(el('dl', { class: 'kv' }, rows));
  return root;
}

//! The document a user wrote, canonical: apiVersion, kind, metadata, spec (secrets are
//! references; their values are never in it).
export function specYaml(obj) {
  const m = obj.metadata || {};
  return toYaml({
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: m.name, namespace: m.namespace, labels: m.labels || {} },
    spec: obj.spec || {},
  });
}

export function specPanel(obj) {
  return el('pre', { class: 'yaml', testid: 'spec-view', text: specYaml(obj) });
}

//! Every version of this workload (same name and namespace), a diff between any two, and the
//! rollback button (only for a token that may write here; the API refuses others anyway).
export function versionsPanel(obj, writable, signal) {
  const m = obj.metadata;
  const root = el('div', { testid: 'versions-view' });
  const a = el('select', { testid: 'diff-a' });
  const b = el('select', { testid: 'diff-b' });
  const out = el('pre', { class: 'diff', testid: 'diff-view' });
  const status = el('div');
  const body = el('tbody');
  root.append(
    el('table', { class: 'grid compact' }, el('thead', {}, el('tr', {}, ['Version', 'Id', 'Phase', 'Created', 'By', 'Note'].map((h) => el('th', { text: h })))), body),
    el('div', { class: 'toolbar' }, 'Diff ', a, ' → ', b, el('button', { type: 'button', text: 'Show diff', testid: 'diff-button', onclick: () => showDiff() })),
    out,
    status,
  );
  if (writable) {
    const btn = el('button', { type: 'button', class: 'danger', testid: 'rollback-button', text: `Roll back to version ${m.version}` });
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const w = await api(`/api/v1/workloads/${encodeURIComponent(m.id)}/rollback`, { method: 'POST', body: '' });
        location.hash = `#/run/${encodeURIComponent(w.metadata.id)}`;
      } catch (e) {
        status.append(errorBox(e));
        btn.disabled = false;
      }
    });
    root.append(btn);
  }
  const specs = new Map();
  const specOf = async (id) => {
    if (!specs.has(id)) specs.set(id, specYaml(await api(`/api/v1/workloads/${encodeURIComponent(id)}/describe`, { signal })));
    return specs.get(id);
  };
  specs.set(m.id, specYaml(obj));
  const showDiff = async () => {
    clear(out);
    try {
      const [x, y] = await Promise.all([specOf(a.value), specOf(b.value)]);
      for (const d of diffLines(x, y)) out.append(el('div', { class: d.op === '+' ? 'add' : d.op === '-' ? 'del' : 'same', text: `${d.op} ${d.text}` }));
    } catch (e) {
      out.append(errorBox(e));
    }
  };
  const q = new URLSearchParams({ namespace: m.namespace, name: m.name });
  api('/api/v1/workloads?' + q, { signal })
    .then((list) => {
      const items = (list.items || []).slice().sort((p, r) => (r.metadata.version || 0) - (p.metadata.version || 0));
      for (const w of items) {
        const v = w.metadata;
        body.append(
          el(
            'tr',
            { class: v.id === m.id ? 'current' : '' },
            el('td', { text: 'v' + v.version }),
            el('td', {}, el('a', { href: `#/run/${encodeURIComponent(v.id)}`, text: v.id })),
            el('td', { text: w.status?.phase || '' }),
            el('td', { text: time(v.createdAtMs) }),
            el('td', { text: v.createdBy || '' }),
            el('td', { text: v.rollbackOf ? 'rollback of ' + v.rollbackOf : '' }),
          ),
        );
        a.append(el('option', { value: v.id, text: `v${v.version} ${v.id}` }));
        b.append(el('option', { value: v.id, text: `v${v.version} ${v.id}` }));
      }
      b.value = m.id;
      const older = items.find((w) => (w.metadata.version || 0) < m.version);
      a.value = older ? older.metadata.id : m.id;
    })
    .catch((e) => signal.aborted || status.append(errorBox(e)));
  return root;
}
