// The cluster page: nodes, their capabilities and GPUs (probed or declared), and what runs
// where (each node's running attempts, from GET /api/v1/nodes). Cluster-wide state is for
// admins; others are told so by the API's 403.
import { api } from './api.js';
import { el, section, errorBox } from './dom.js';
import { bytes, duration } from './format.js';

function text(v) {
  if (v == null) return '';
  if (Array.isArray(v)) return v.map(text).join(', ');
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}=${text(x)}`).join(' ');
  return String(v);
}

export async function clusterPage(main, signal) {
  const box = section('Cluster');
  main.append(box);
  let nodes;
  try {
    nodes = await api('/api/v1/nodes', { signal });
  } catch (e) {
    if (!signal.aborted) box.append(errorBox(e));
    return;
  }
  const items = nodes.items || [];
  const cols = ['Node', 'State', 'CPU used / total', 'Memory used / total', 'GPUs', 'Running', 'Capabilities', 'Labels'];
  // What runs on a node: a line per live attempt, linking to its run.
  const runningCell = (name, list) =>
    el(
      'td',
      { testid: `node-running-${name}` },
      (list || []).map((a) =>
        el(
          'div',
          { class: 'running', testid: `node-step-${name}-${a.workloadId}-${a.step}` },
          el('a', { href: `#/run/${encodeURIComponent(a.workloadId)}`, text: `${a.namespace}/${a.workload}` }),
          el('span', { text: ` ${a.step} (attempt ${a.attempt}, ${a.phase}${a.startedAtMs ? ', ' + duration(Date.now() - a.startedAtMs) : ''})` }),
        ),
      ),
    );
  box.append(
    el(
      'table',
      { class: 'grid', testid: 'nodes-view' },
      el('thead', {}, el('tr', {}, cols.map((h) => el('th', { text: h })))),
      el(
        'tbody',
        {},
        items.map((n) => {
          const st = n.status || {};
          const gpus = (st.gpus || []).map((g) => `${g.model} ${bytes(g.memoryBytes)} (${g.probed ? 'probed' : 'declared'})`);
          return el(
            'tr',
            { testid: `node-row-${n.metadata?.name}` },
            el('td', { text: n.metadata?.name || '' }),
            el('td', { text: st.state || '' }),
            el('td', { text: `${(st.usedCpuMillis || 0) / 1000} / ${(st.cpuMillis || 0) / 1000}` }),
            el('td', { text: `${bytes(st.usedMemoryBytes || 0)} / ${bytes(st.memoryBytes || 0)}` }),
            el('td', { text: gpus.length ? `${st.usedGpus || 0} used of ${gpus.length}: ${gpus.join(', ')}` : '' }),
            runningCell(n.metadata?.name, st.running),
            el('td', { text: text(st.capabilities) }),
            el('td', { text: text(n.metadata?.labels) }),
          );
        }),
      ),
    ),
  );
  try {
    const cs = await api('/api/v1/cluster/status', { signal });
    box.append(el('h3', { text: 'Status' }), el('pre', { class: 'yaml', text: JSON.stringify(cs, null, 2) }));
  } catch (e) {
    if (!signal.aborted) box.append(errorBox(e));
  }
}
