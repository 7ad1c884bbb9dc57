// The workloads page: every workload the token may see, filtered by namespace, phase, label
// and name, a page at a time (the API's limit/continue), updated live from the list stream.
import { api, keepWatching } from './api.js';
import { el, clear, section, errorBox } from './dom.js';
import { age, duration, mark, phaseClass } from './format.js';

const PAGE = 50;
const PHASES = ['', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'REJECTED'];

function query(f, extra = {}) {
  const q = new URLSearchParams();
  if (f.namespace === '*') q.set('allNamespaces', 'true');
  else if (f.namespace) q.set('namespace', f.namespace);
  for (const k of ['phase', 'label', 'name']) if (f[k]) q.set(k, f[k]);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q.toString();
}

function stepsOf(st) {
  const total = st.stepCount ?? 0;
  const done = (st.stepsSucceeded ?? 0) + (st.stepsSkipped ?? 0);
  return { total, done, text: total ? `${done}/${total}` : '' };
}

function row(w, now) {
  const m = w.metadata || {};
  const st = w.status || {};
  const steps = stepsOf(st);
  const pct = steps.total ? Math.round((100 * steps.done) / steps.total) : 0;
  const end = st.finishedAtMs || (st.startedAtMs ? now : 0);
  const bar = el('progress', { max: 100, value: pct, title: pct + '%' });
  const labels = Object.entries(m.labels || {}).map(([k, v]) => el('span', { class: 'label', text: `${k}=${v}` }));
  return el(
    'tr',
    { testid: `workload-row-${m.id}`, dataset: { phase: st.phase || '' } },
    el('td', {}, el('a', { href: `#/run/${encodeURIComponent(m.id)}`, text: m.name || m.id }), el('div', { class: 'muted small', text: m.id })),
    el('td', { text: m.namespace }),
    el('td', { class: 'phase ' + phaseClass(st.phase), text: `${mark(st.phase)} ${st.phase || ''}` }),
    el('td', { class: 'num', text: steps.text }),
    el('td', {}, bar, el('span', { class: 'small', text: ` ${pct}%` })),
    el('td', { class: 'num', text: age(m.createdAtMs, now) }),
    el('td', { class: 'num', text: st.startedAtMs ? duration(end - st.startedAtMs) : '' }),
    el('td', {}, labels),
    el('td', { class: 'num', text: 'v' + (m.version ?? '') }),
  );
}

function matches(w, f) {
  const m = w.metadata || {};
  if (f.phase && w.status?.phase !== f.phase) return false;
  if (f.name && m.name !== f.name) return false;
  if (f.label) {
    const [k, v] = f.label.split('=');
    if ((m.labels || {})[k] !== v) return false;
  }
  return true;
}

export async function workloadsPage(main, signal, who, params) {
  const f = {
    namespace: params.get('namespace') ?? (who.namespaces.length > 1 || who.role === 'admin' ? '*' : who.defaultNamespace),
    phase: params.get('phase') || '',
    label: params.get('label') || '',
    name: params.get('name') || '',
    // Keyset paging: `continue` is the API's token of this page, `back` the tokens of the pages
    // between the first and this one (so "Newer" works after a reload too).
    cont: params.get('continue') || '',
    back: (params.get('back') || '').split(',').filter(Boolean),
  };
  const nsSelect = el('select', { id: 'f-namespace', testid: 'filter-namespace' });
  const nss = who.namespaces.includes('*') || who.role === 'admin' ? ['*'] : ['*', ...who.namespaces];
  for (const ns of nss) nsSelect.append(el('option', { value: ns, text: ns === '*' ? 'all namespaces' : ns }));
  if (!nss.includes(f.namespace)) nsSelect.append(el('option', { value: f.namespace, text: f.namespace }));
  nsSelect.value = f.namespace;
  const phaseSelect = el('select', { id: 'f-phase', testid: 'filter-phase' });
  for (const p of PHASES) phaseSelect.append(el('option', { value: p, text: p || 'any phase' }));
  phaseSelect.value = f.phase;
  const label = el('input', { id: 'f-label', placeholder: 'label key=value', value: f.label, testid: 'filter-label' });
  const name = el('input', { id: 'f-name', placeholder: 'name', value: f.name, testid: 'filter-name' });
  const apply = (cont = '', back = []) => {
    const paging = cont ? { continue: cont, ...(back.length ? { back: back.join(',') } : {}) } : {};
    const q = query({ namespace: nsSelect.value, phase: phaseSelect.value, label: label.value.trim(), name: name.value.trim() }, paging);
    location.hash = '#/workloads?' + q;
  };
  const filters = el(
    'form',
    { class: 'filters' },
    nsSelect,
    phaseSelect,
    label,
    name,
    el('button', { type: 'submit', text: 'Filter' }),
  );
  filters.addEventListener('submit', (e) => {
    e.preventDefault();
    apply();
  });
  nsSelect.addEventListener('change', () => apply());
  phaseSelect.addEventListener('change', () => apply());

  const live = el('span', { class: 'live', text: 'connecting…', testid: 'live-state' });
  const tbody = el('tbody', { testid: 'workload-rows' });
  const pager = el('div', { class: 'pager' });
  const table = el(
    'table',
    { class: 'grid' },
    el('thead', {}, el('tr', {}, ['Workload', 'Namespace', 'Phase', 'Steps', 'Progress', 'Age', 'Duration', 'Labels', 'Version'].map((h) => el('th', { text: h })))),
    tbody,
  );
  main.append(section('Workloads', filters, el('div', { class: 'toolbar' }, live), table, pager));

  const rows = new Map();
  const render = (items) => {
    clear(tbody);
    rows.clear();
    const now = Date.now();
    for (const w of items) {
      const r = row(w, now);
      rows.set(w.metadata.id, r);
      tbody.append(r);
    }
    if (!items.length) tbody.append(el('tr', {}, el('td', { colspan: 9, class: 'muted', text: 'No workloads match.' })));
  };
  const load = async () => {
    const page = await api('/api/v1/workloads?' + query(f, { limit: PAGE, ...(f.cont ? { continue: f.cont } : {}) }), { signal });
    const items = page.items || [];
    render(items);
    clear(pager);
    const total = page.metadata?.total ?? items.length;
    const from = (f.back.length + (f.cont ? 1 : 0)) * PAGE;
    pager.append(el('span', { class: 'muted', testid: 'page-range', text: `${items.length ? from + 1 : 0}–${from + items.length} of ${total}` }));
    if (f.cont) {
      const newer = () => (f.back.length ? apply(f.back[f.back.length - 1], f.back.slice(0, -1)) : apply());
      pager.append(el('button', { type: 'button', testid: 'page-prev', text: '← Newer', onclick: newer }));
    }
    const next = page.metadata?.continue;
    if (next) pager.append(el('button', { type: 'button', testid: 'page-next', text: 'Older →', onclick: () => apply(next, f.cont ? [...f.back, f.cont] : []) }));
  };

  const watchQuery = query({ namespace: f.namespace, name: f.name });
  keepWatching(
    '/api/v1/watch/workloads?' + watchQuery,
    (type, data) => {
      if (type === 'ready') {
        load().catch((e) => signal.aborted || main.append(errorBox(e)));
      } else if (type === 'workload') {
        const id = data.metadata?.id;
        const old = rows.get(id);
        if (!matches(data, f)) {
          old?.remove();
          rows.delete(id);
          return;
        }
        const r = row(data, Date.now());
        if (old) old.replaceWith(r);
        else if (!f.cont) tbody.prepend(r);
        else return;
        rows.set(id, r);
      }
    },
    signal,
    (state) => {
      live.textContent = state === 'live' ? '● live' : state === 'reconnecting' ? '○ reconnecting…' : '';
    },
  ).catch((e) => signal.aborted || main.append(errorBox(e)));
}
