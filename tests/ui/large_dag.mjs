// A run of N steps (100 per level, each depending on one or two steps of the level before)
// and the seconds its page takes to become interactive in the console: shared by the `ui`
// test (a bound) and bench/ui_large_dag.mjs (the numbers).
import { signIn, workloadYaml } from './harness.mjs';

const WIDTH = 100;

export function largeYaml(n) {
  const steps = [];
  for (let i = 0; i < n; i++) {
    const deps = [];
    if (i >= WIDTH) deps.push(`s${i - WIDTH}`);
    if (i >= WIDTH && i % WIDTH > 0) deps.push(`s${i - WIDTH - 1}`);
    steps.push({ name: `s${i}`, run: 'true', dependsOn: deps });
  }
  return workloadYaml(`large-${n}`, 'risk', steps);
}

//! Submits an N-step run, cancels it (only its page is measured, not running it), and opens
//! its page: {ready, interactive} in seconds from navigation, and the submit time.
export async function measureLargeRun(c, token, browser, n) {
  const t0 = Date.now();
  const id = await c.submit(token, largeYaml(n));
  const submitted = (Date.now() - t0) / 1000;
  await c.call(token, 'POST', `/api/v1/workloads/${id}/cancel`, '');
  await c.waitPhase(token, id, ['CANCELLED', 'FAILED', 'SUCCEEDED'], 300000);
  const page = await signIn(browser, c.url, token);
  await page.goto('about:blank');
  const start = Date.now();
  await page.goto(`${c.url}/ui/#/run/${id}`);
  await page.waitForSelector('main[data-ready="true"]', { timeout: 120000 });
  const ready = (Date.now() - start) / 1000;
  // Interactive: a click on a node is answered (its logs open) and the graph pans.
  await page.getByTestId('dag-node-s0').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="log-step"]')?.value === 's0');
  await page.getByTestId('dag-view').evaluate((e) => (e.scrollLeft = e.scrollWidth / 2));
  await page.waitForSelector(`[data-testid="dag-node-s${Math.floor(n / 2)}"], [data-testid^="dag-node-s"]`);
  const interactive = (Date.now() - start) / 1000;
  const nodesInPage = await page.locator('[data-testid^="dag-node-"]').count();
  await page.close();
  return { id, n, submitted, ready, interactive, nodesInPage };
}
