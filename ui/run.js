// A run's page: what it is and how it went, one page: header, DAG, timeline, step table,
// events, logs, lineage, model card, spec and versions. It loads the describe document once,
// then applies the workload's event stream (steps, status, events) as they come.
import { api, keepWatching } from './api.js';
import { canWrite } from './session.js';
import { append, el, clear, section, errorBox } from './dom.js';
import { duration, mark, money, phaseClass, time, TERMINAL } from './format.js';
import { DagView } from './dag.js';
import { addAttemptEvent, attemptsFrom, stepTable, timeline } from './steps.js';
import { eventsPanel, lineagePanel, logsPanel, modelCard, specPanel, versionsPanel } from './panels.js';
import { servingPanel } from './serving.js';

function specSteps(spec) {
  const p = spec?.pipeline;
  return Array.isArray(p) ? p : p?.steps || [];
}

function gpuCount(g) {
  if (g == null) return '';
  if (typeof g === 'object') return g.count != null ? String(g.count) : '';
  return String(g);
}

export async function runPage(main, id, signal) {
  let obj;
  try {
    // Every step and event (limit=0, eventLimit=0): the DAG, the timeline and the attempts
    // are drawn from all of them (the API's default is a page).
    obj = await api(`/api/v1/workloads/${encodeURIComponent(id)}/describe?limit=0&eventLimit=0`, { signal });
  } catch (e) {
    if (!signal.aborted) main.append(errorBox(e));
    return;
  }
  const started = performance.now();
  const m = obj.metadata;
  const declared = new Map(specSteps(obj.spec).map((s) => [s.name, s]));
  const run = {
    status: obj.status,
    steps: obj.status.steps || [],
    index: new Map(),
    attempts: attemptsFrom(obj.events || []),
    lastSeq: Math.max(0, ...(obj.events || []).map((e) => e.seq || 0)),
    outputs: new Map(),
    gpus: (name) => gpuCount(declared.get(name)?.resources?.gpu ?? obj.spec?.resources?.gpu),
    outputBytes: (name) => run.outputs.get(name),
    span: () => {
      const st = run.status;
      let t0 = st.startedAtMs || Infinity;
      for (const s of run.steps) if (s.startedAtMs) t0 = Math.min(t0, s.startedAtMs);
      if (!isFinite(t0)) t0 = st.createdAtMs || Date.now();
      return [t0, Math.max(t0 + 1000, st.finishedAtMs || Date.now())];
    },
  };
  run.steps.forEach((s, i) => run.index.set(s.name, i));

  // --- header ---------------------------------------------------------------------------
  const phase = el('span', { class: 'phase', testid: 'run-phase' });
  const facts = el('div', { class: 'facts', testid: 'run-facts' });
  const live = el('span', { class: 'live', testid: 'live-state' });
  const actions = el('div', { class: 'actions' });
  const header = el('section', { class: 'card runhead' }, el('h1', {}, el('span', { text: m.name }), ' ', phase), el('div', { class: 'muted mono', text: m.id }), facts, el('div', { class: 'toolbar' }, live, actions));
  const writable = canWrite(m.namespace);
  const paintHeader = () => {
    const st = run.status;
    phase.className = 'phase ' + phaseClass(st.phase);
    phase.dataset.phase = st.phase;
    phase.textContent = `${mark(st.phase)} ${st.phase}`;
    clear(facts);
    const done = run.steps.filter((s) => s.phase === 'SUCCEEDED' || s.phase === 'SKIPPED').length;
    const end = st.finishedAtMs || (st.startedAtMs ? Date.now() : 0);
    const fact = (k, v) => v && facts.append(el('span', { class: 'fact' }, el('b', { text: k + ' ' }), el('span', { text: v })));
    fact('namespace', m.namespace);
    fact('version', 'v' + m.version);
    fact('steps', `${done}/${run.steps.length}`);
    fact('started', time(st.startedAtMs));
    fact('duration', st.startedAtMs ? duration(end - st.startedAtMs) : '');
    fact('by', m.createdBy);
    fact('cost', money(st.cost));
    fact('labels', Object.entries(m.labels || {}).map(([k, v]) => `${k}=${v}`).join(' '));
    if (st.failureMessage) facts.append(el('div', { class: 'error', text: `${st.failureCode || ''} ${st.failureMessage}` }));
    clear(actions);
    if (writable && !TERMINAL.has(st.phase)) {
      const cancel = el('button', { type: 'button', class: 'danger', testid: 'cancel-button', text: 'Cancel run' });
      cancel.addEventListener('click', async () => {
        cancel.disabled = true;
        try {
          await api(`/api/v1/workloads/${encodeURIComponent(m.id)}/cancel`, { method: 'POST', body: '' });
        } catch (e) {
          actions.append(errorBox(e));
        }
      });
      actions.append(cancel);
    }
  };
  paintHeader();

  // --- panels -----------------------------------------------------------------------------
  let logs = null;
  const select = (name) => {
    const i = run.index.get(name);
    if (i != null) table.rows.reveal(i);
    dag.reveal(name);
    logs?.open(name);
  };
  const dag = new DagView(
    run.steps.map((s) => ({ name: s.name, phase: s.phase, dependsOn: declared.get(s.name)?.dependsOn || [] })),
    select,
  );
  const gantt = timeline(run, select);
  const table = stepTable(run, select);
  const events = eventsPanel();
  events.add((obj.events || []).slice(-1000));
  logs = logsPanel(m.id, run.steps.map((s) => s.name), signal);
  // A workload with a serving step gets the serving section (endpoint, replicas, utilization).
  const serves = [...declared.values()].some((s) => s.serving) || !!obj.status.serving;
  const serving = serves ? servingPanel() : null;
  serving?.update(obj.status.serving);
  serving?.addEvents(obj.events || []);
  const lineageBox = el('div', {}, el('p', { class: 'muted', text: 'loading…' }));
  const modelBox = el('div');
  append(
    main,
    header,
    section('DAG', dag.root),
    section('Timeline', gantt.root),
    section('Steps', table.root),
    serving && section('Serving', serving.root),
    section('Events', events.root),
    section('Logs', logs.root),
    section('Lineage', lineageBox),
    section('Model card', modelBox),
    section('Spec', specPanel(obj)),
    section('Versions', versionsPanel(obj, writable, signal)),
  );
  requestAnimationFrame(() => {
    document.body.dataset.runReadyMs = String(Math.round(performance.now() - started));
    main.dataset.ready = 'true';
  });

  const loadLineage = async () => {
    try {
      const lineage = await api(`/api/v1/workloads/${encodeURIComponent(m.id)}/lineage`, { signal });
      for (const o of lineage.outputs || []) {
        if (o.step && o.bytes >= 0) run.outputs.set(o.step, (run.outputs.get(o.step) || 0) + o.bytes);
      }
      clear(lineageBox).append(lineagePanel(lineage));
      clear(modelBox).append(modelCard(obj.spec, lineage, m));
      table.rows.refresh();
    } catch (e) {
      if (!signal.aborted) clear(lineageBox).append(errorBox(e));
    }
  };
  loadLineage();

  // --- live -------------------------------------------------------------------------------
  const setStep = (s) => {
    let i = run.index.get(s.name);
    if (i == null) {
      i = run.steps.length;
      run.steps.push(s);
      run.index.set(s.name, i);
    } else {
      run.steps[i] = s;
    }
    dag.setPhase(s.name, s.phase);
    table.rows.update(i);
    gantt.rows.update(i);
  };
  keepWatching(
    `/api/v1/workloads/${encodeURIComponent(m.id)}/watch`,
    (type, data) => {
      if (type === 'workload') {
        run.status = { ...data.status };
        for (const s of data.status.steps || []) setStep(s);
        paintHeader();
        serving?.update(data.status.serving);
      } else if (type === 'status') {
        run.status = { ...run.status, ...data };
        if (!('serving' in data)) delete run.status.serving;
        paintHeader();
        serving?.update(run.status.serving);
        if (TERMINAL.has(data.phase)) loadLineage();
      } else if (type === 'step') {
        setStep(data);
        paintHeader();
      } else if (type === 'event') {
        if ((data.seq || 0) <= run.lastSeq) return;
        run.lastSeq = data.seq;
        events.add([data]);
        serving?.addEvents([data]);
        addAttemptEvent(run.attempts, data);
        const i = run.index.get(data.step);
        if (i != null) gantt.rows.update(i);
      }
    },
    signal,
    (state) => (live.textContent = state === 'live' ? '● live' : state === 'reconnecting' ? '○ reconnecting…' : 'final'),
  ).catch((e) => signal.aborted || header.append(errorBox(e)));
}
