// The web console end to end: a real controller, real workloads, headless Chromium, driven
// only through the console's data-testid hooks and the REST API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Controller, launchBrowser, signIn, workloadYaml } from './harness.mjs';

const INJECTION = '<img src=x onerror=alert(1)>';
let c;
let browser;
let editor;
let viewer;

before(async () => {
  c = new Controller();
  await c.start();
  editor = c.token('risk', 'editor', 'eddie');
  viewer = c.token('risk', 'viewer', 'vera');
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await c?.stop();
});

test('the console is served with a strict policy and a token that is never in a URL', async () => {
  const res = await fetch(c.url + '/ui/');
  assert.equal(res.status, 200);
  const csp = res.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe/);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const page = await signIn(browser, c.url, editor);
  await page.getByTestId('workload-rows').waitFor();
  const urls = page.requestUrls;
  assert.ok(urls.some((u) => u.includes('/api/v1/')), urls.join('\n'));
  for (const u of urls) assert.ok(!u.includes(editor), `token in URL ${u}`);
  assert.ok(!page.url().includes(editor));
  assert.deepEqual(page.cspErrors, []);
  await page.close();
});

test('a submitted workload turns SUCCEEDED node by node, live', async () => {
  const page = await signIn(browser, c.url, editor);
  const yaml = workloadYaml('live', 'risk', [
    { name: 'prep', run: 'sleep 2; echo prepared' },
    { name: 'train', run: 'sleep 2; echo trained', dependsOn: ['prep'] },
    { name: 'report', run: 'sleep 1; echo reported', dependsOn: ['train'] },
  ]);
  const id = await c.submit(editor, yaml);
  // The list shows it without a reload.
  await page.getByTestId(`workload-row-${id}`).waitFor({ timeout: 20000 });
  await page.getByTestId(`workload-row-${id}`).getByRole('link').first().click();
  const report = page.getByTestId('dag-node-report');
  await report.waitFor();
  const first = await report.getAttribute('data-phase');
  assert.notEqual(first, 'SUCCEEDED', 'the run had not ended when the page opened');
  // No reload from here on: the stream moves every node.
  for (const step of ['prep', 'train', 'report']) {
    await page.waitForSelector(`[data-testid="dag-node-${step}"][data-phase="SUCCEEDED"]`, { timeout: 60000 });
    assert.match(await page.getByTestId(`dag-node-${step}`).textContent(), new RegExp(`✓ ${step}`));
  }
  await page.waitForSelector('[data-testid="run-phase"][data-phase="SUCCEEDED"]', { timeout: 30000 });
  await page.getByTestId('timeline-bar-train').waitFor();
  // The run's cost (priced by the state directory's price table) arrives with its status.
  await page.waitForFunction(
    () => /cost [0-9.]+ USD \(3 attempts\)/.test(document.querySelector('[data-testid="run-facts"]')?.textContent || ''),
    null,
    { timeout: 30000 },
  );
  assert.match(await page.getByTestId('step-row-train').textContent(), /SUCCEEDED/);
  assert.match(await page.getByTestId('events-view').textContent(), /Succeeded/);
  assert.match(await page.getByTestId('lineage-view').textContent(), /prep|report/);
  await page.close();
});

test("a step's logs open, and a log line with HTML in it stays text", async () => {
  const yaml = workloadYaml('logs', 'risk', [
    { name: 'noisy', run: `for i in $(seq 1 200); do echo "line $i"; done; echo '${INJECTION}'; echo done` },
  ]);
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['SUCCEEDED']);
  const page = await signIn(browser, c.url, viewer);
  await page.goto(`${c.url}/ui/#/run/${id}`);
  await page.getByTestId('step-row-noisy').getByRole('link').click();
  const log = page.getByTestId('log-view');
  await page.waitForFunction(() => document.querySelector('[data-testid="log-view"]')?.textContent.includes('done'));
  const text = await log.textContent();
  assert.ok(text.includes('line 200'), text.slice(-200));
  assert.ok(text.includes(INJECTION), 'the line shows as its characters');
  assert.equal(await log.locator('img').count(), 0, 'no element was made from a log line');
  assert.equal(await page.locator('img').count(), 0);
  await page.waitForTimeout(300);
  assert.deepEqual(page.dialogs, [], 'no script ran');
  await page.close();
});

test('a step log of 1,000,000 lines opens at its tail without being read whole', async () => {
  const yaml = workloadYaml('huge-log', 'risk', [{ name: 'chatty', run: 'seq 1 1000000 | sed s/^/row-/' }]);
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['SUCCEEDED']);
  const page = await signIn(browser, c.url, viewer);
  let logBytes = 0;
  page.on('response', async (r) => {
    if (r.url().includes('/watch?logStep=')) logBytes += Number(r.headers()['content-length'] || 0);
  });
  const start = Date.now();
  await page.goto(`${c.url}/ui/#/run/${id}`);
  await page.waitForFunction(() => document.querySelector('[data-testid="log-view"]')?.textContent.includes('row-1000000'));
  const seconds = (Date.now() - start) / 1000;
  const lines = await page.getByTestId('log-view').locator('.line').count();
  console.log(`[ui] 1,000,000-line log: tail shown in ${seconds.toFixed(2)} s, ${lines} lines in the page`);
  assert.ok(lines < 20000, `${lines} lines in the page`);
  const text = await page.getByTestId('log-view').textContent();
  assert.ok(!text.includes('row-1\n') && !text.includes('row-100\n'), 'the head was not loaded');
  // The API itself: a tail read is small whatever the log's size.
  const tail = await c.call(viewer, 'GET', `/api/v1/workloads/${id}/logs?step=chatty&tailBytes=100`);
  assert.equal(tail.status, 200);
  assert.ok(tail.text.endsWith('row-1000000\n'), tail.text);
  assert.ok(tail.text.length <= 100, `${tail.text.length} bytes`);
  assert.match(tail.text, /^row-[0-9]+\n/, 'starts at a line start');
  await page.close();
});

test('a step killed for memory shows OOMKilled with its limit', async () => {
  const yaml = workloadYaml(
    'oom',
    'risk',
    [{ name: 'hog', run: "python3 -c 'import time; b = bytearray(512 * 1024 * 1024); time.sleep(1)'" }],
    '{cpu: "1", memory: 64Mi}',
  );
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['FAILED']);
  const page = await signIn(browser, c.url, viewer);
  await page.goto(`${c.url}/ui/#/run/${id}`);
  const row = page.getByTestId('step-row-hog');
  await row.waitFor();
  const text = await row.textContent();
  assert.match(text, /OOMKilled \(limit 64Mi\)/);
  assert.equal(await page.getByTestId('dag-node-hog').getAttribute('data-phase'), 'FAILED');
  await page.close();
});

test('a step that burns CPU for a while shows its CPU peak against its limit, above its average', async () => {
  const burn = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 3: pass\ntime.sleep(3)'";
  const yaml = workloadYaml('burn', 'risk', [{ name: 'burn', run: burn }], '{cpu: "1", memory: 256Mi}');
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['SUCCEEDED']);
  const w = await c.call(viewer, 'GET', `/api/v1/workloads/${id}`);
  const step = w.json.status.steps[0];
  assert.ok(step.peakCpuMillicores > 0, JSON.stringify(step));
  const page = await signIn(browser, c.url, viewer);
  await page.goto(`${c.url}/ui/#/run/${id}`);
  const row = page.getByTestId('step-row-burn');
  await row.waitFor();
  const text = await row.textContent();
  const m = text.match(/([0-9]+)% \(avg ([0-9]+)%\) of 1/);
  assert.ok(m, text);
  assert.ok(Number(m[1]) > Number(m[2]), `peak ${m[1]}% is above the average ${m[2]}%`);
  assert.equal(Number(m[1]), Math.round(step.peakCpuMillicores / 10));
  await page.close();
});

test('the cluster page shows which step runs on which node', async () => {
  const admin = c.token('*', 'admin', 'ada');
  const id = await c.submit(editor, workloadYaml('napper', 'risk', [{ name: 'nap', run: 'sleep 60' }]));
  await c.waitPhase(editor, id, ['RUNNING']);
  const page = await signIn(browser, c.url, admin);
  await page.goto(`${c.url}/ui/#/cluster`);
  await page.getByTestId('nodes-view').waitFor();
  // The step may take a moment to reach its node after the run turns RUNNING: reload until then.
  let cell = null;
  for (let i = 0; i < 50 && !cell; i++) {
    const found = page.locator(`[data-testid^="node-step-"][data-testid$="-${id}-nap"]`);
    if (await found.count()) cell = found.first();
    else {
      await page.waitForTimeout(200);
      await page.reload();
      await page.getByTestId('nodes-view').waitFor();
    }
  }
  assert.ok(cell, 'the running step is listed under a node');
  assert.match(await cell.textContent(), /^risk\/napper nap \(attempt 1, RUNNING/);
  assert.equal(await cell.getByRole('link').getAttribute('href'), `#/run/${id}`);
  const cancel = await c.call(editor, 'POST', `/api/v1/workloads/${id}/cancel`, '{}');
  assert.equal(cancel.status, 200, cancel.text);
  await page.close();
});

test('a serving workload shows its endpoint, replicas, utilization over time and scale events, live', async () => {
  // A real serving step: replicas of a Python HTTP server behind a real HAProxy.
  const server = path.join(c.root, 'server.py');
  writeFileSync(
    server,
    [
      'import http.server, os, time',
      'port = int(os.environ["RSL_PORT"])',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    protocol_version = "HTTP/1.1"',
      '    def do_GET(self):',
      '        if self.path == "/burn":',
      '            t = time.process_time()',
      '            while time.process_time() - t < 0.01:',
      '                pass',
      '        self.send_response(200)',
      '        self.send_header("Content-Length", "2")',
      '        self.end_headers()',
      '        self.wfile.write(b"ok")',
      '    def log_message(self, *a):',
      '        pass',
      'http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()',
      '',
    ].join('\n'),
  );
  chmodSync(server, 0o644);
  const yaml =
    'apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: svc\n  namespace: risk\n' +
    'spec:\n  resources: {cpu: 500m, memory: 256Mi}\n  pipeline:\n' +
    `    - name: serve\n      serving: true\n      command: [/usr/bin/python3, ${server}]\n` +
    '      resources:\n        autoscaling: {targetUtilization: 50, minReplicas: 1, maxReplicas: 2, scaleDownDelay: 4s}\n';
  const id = await c.submit(editor, yaml);
  const page = await signIn(browser, c.url, viewer);
  await page.goto(`${c.url}/ui/#/run/${id}`);
  await page.getByTestId('serving-view').waitFor();
  // The endpoint arrives live once the first replica is ready.
  await page.waitForFunction(() => /^http:\/\/127\.0\.0\.1:[0-9]+$/.test(document.querySelector('[data-testid="serving-endpoint"]')?.textContent || ''), null, {
    timeout: 60000,
  });
  const endpoint = await page.getByTestId('serving-endpoint').textContent();
  // Load until the autoscaler scales up, then the page shows 2/2 and the ScaledUp event.
  let stop = false;
  const clients = [0, 1, 2].map(async () => {
    while (!stop) await fetch(endpoint + '/burn').then((r) => r.text()).catch(() => {});
  });
  try {
    await page.waitForFunction(() => (document.querySelector('[data-testid="serving-scale-events"]')?.textContent || '').includes('ScaledUp'), null, { timeout: 90000 });
    await page.waitForFunction(() => /^2\/2 ready\/desired/.test(document.querySelector('[data-testid="serving-replicas"]')?.textContent || ''), null, { timeout: 60000 });
  } finally {
    stop = true;
    await Promise.all(clients);
  }
  assert.match(await page.getByTestId('serving-scale-events').textContent(), /ScaledUp.*1 -> 2/);
  const chart = page.getByTestId('serving-chart');
  assert.ok(Number(await chart.getAttribute('data-samples')) >= 2, 'the chart has the evaluations so far');
  assert.equal(await chart.locator('polyline').count(), 3);
  // The API's shape the page drew from.
  const w = await c.call(viewer, 'GET', `/api/v1/workloads/${id}`);
  const h = w.json.status.serving.history;
  assert.ok(h.length >= 2 && h.some((p) => p.desiredReplicas === 2 && p.utilization > 0), JSON.stringify(h));
  assert.deepEqual(page.cspErrors, []);
  const cancel = await c.call(editor, 'POST', `/api/v1/workloads/${id}/cancel`, '{}');
  assert.equal(cancel.status, 200, cancel.text);
  await c.waitPhase(editor, id, ['CANCELLED']);
  await page.close();
});

test('an editor rolls back; a viewer has no rollback button and the API refuses it', async () => {
  const yaml = workloadYaml('versions', 'risk', [{ name: 'one', run: 'echo v1' }]);
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['SUCCEEDED']);

  const asViewer = await signIn(browser, c.url, viewer);
  await asViewer.goto(`${c.url}/ui/#/run/${id}`);
  await asViewer.getByTestId('versions-view').waitFor();
  await asViewer.getByTestId('step-row-one').waitFor();
  assert.equal(await asViewer.getByTestId('rollback-button').count(), 0);
  const forced = await c.call(viewer, 'POST', `/api/v1/workloads/${id}/rollback`, '');
  assert.equal(forced.status, 403);
  await asViewer.close();

  const asEditor = await signIn(browser, c.url, editor);
  await asEditor.goto(`${c.url}/ui/#/run/${id}`);
  await asEditor.getByTestId('rollback-button').click();
  await asEditor.waitForFunction((old) => location.hash.startsWith('#/run/') && !location.hash.includes(old), id);
  const newId = decodeURIComponent(new URL(asEditor.url()).hash.slice('#/run/'.length));
  assert.notEqual(newId, id);
  const r = await c.call(editor, 'GET', `/api/v1/workloads/${newId}`);
  assert.equal(r.json.metadata.rollbackOf, id);
  assert.equal(r.json.metadata.version, 2);
  await asEditor.waitForSelector('[data-testid="dag-node-one"]');
  await asEditor.close();
});
