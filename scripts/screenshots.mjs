// Screenshots of the web console for docs/console/ (README, docs/console.md), taken from a
// real run: a fresh rsl-controller, a small pipeline with a retried step and a skipped one,
// headless Chromium (playwright-core from tests/node_modules, scripts/ci.d/ui.sh).
//
//   RSL_BIN_DIR=build/bin node scripts/screenshots.mjs [OUT_DIR]   (default docs/console)
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Controller, launchBrowser, signIn, workloadYaml } from '../tests/ui/harness.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2] || path.join(root, 'docs', 'console');
mkdirSync(out, { recursive: true });

const c = new Controller();
await c.start();
const admin = c.token('*', 'admin', 'ada');
const editor = c.token('risk', 'editor', 'eddie');
const browser = await launchBrowser();
try {
  const yaml = workloadYaml('fraud-model', 'risk', [
    { name: 'ingest', run: 'for i in 1 2 3; do echo "read part $i"; sleep 0.3; done; echo rows > $RSL_OUTPUT/rows.txt' },
    { name: 'features', run: 'echo 1/2 > $RSL_PROGRESS_FILE; sleep 0.5; echo 2/2 > $RSL_PROGRESS_FILE; echo built', dependsOn: ['ingest'] },
    { name: 'train', run: "python3 -c 'b = bytearray(200 * 1024 * 1024); print(len(b))'", dependsOn: ['features'], extra: '      resources: {memory: 64Mi}\n' },
    { name: 'evaluate', run: 'echo auc 0.95', dependsOn: ['features'] },
    { name: 'publish', run: 'echo published', dependsOn: ['evaluate'] },
  ]);
  const ok = workloadYaml('nightly-etl', 'risk', [
    { name: 'extract', run: 'echo extract; sleep 0.5' },
    { name: 'transform', run: 'echo transform; sleep 0.5', dependsOn: ['extract'] },
    { name: 'load', run: 'echo load', dependsOn: ['transform'] },
  ]);
  await c.submit(editor, ok);
  const id = await c.submit(editor, yaml);
  await c.waitPhase(editor, id, ['FAILED', 'SUCCEEDED']);

  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  await page.goto(c.url + '/ui/');
  await page.getByTestId('login-token').waitFor();
  await page.screenshot({ path: path.join(out, 'signin.png') });
  await page.close();

  const p = await signIn(browser, c.url, editor);
  await p.setViewportSize({ width: 1360, height: 900 });
  await p.getByTestId(`workload-row-${id}`).waitFor();
  await p.screenshot({ path: path.join(out, 'workloads.png') });
  await p.goto(`${c.url}/ui/#/run/${id}`);
  await p.getByTestId('step-row-train').waitFor();
  await p.getByTestId('dag-node-train').click();
  await p.waitForTimeout(800);
  await p.screenshot({ path: path.join(out, 'run.png'), fullPage: true });
  await p.close();

  const a = await signIn(browser, c.url, admin);
  await a.setViewportSize({ width: 1360, height: 700 });
  await a.goto(`${c.url}/ui/#/cluster`);
  await a.getByTestId('nodes-view').waitFor();
  await a.screenshot({ path: path.join(out, 'cluster.png') });
  await a.close();
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
  await c.stop();
}
