// Seconds from navigation until a large run's page in the web console is interactive (its
// step table and DAG drawn, a click on a node answered, the graph panned), for runs of 1,000
// and 10,000 steps, in headless Chromium against a real rsl-controller. The run is cancelled
// right after submission: the page is measured, not the run.
//
//   node bench/ui_large_dag.mjs            (RSL_BIN_DIR: the binaries, default build/bin;
//                                           STEPS: "1000,10000")
// Last line: `seconds to interactive 10000 steps <s>`.
import { Controller, launchBrowser } from '../tests/ui/harness.mjs';
import { measureLargeRun } from '../tests/ui/large_dag.mjs';

const sizes = (process.env.STEPS || '1000,10000').split(',').map(Number);
const c = new Controller();
await c.start();
const token = c.token('risk', 'editor', 'bench');
const browser = await launchBrowser();
let last = null;
try {
  for (const n of sizes) {
    const r = await measureLargeRun(c, token, browser, n);
    console.log(
      `${n} steps: page ready ${r.ready.toFixed(2)} s, interactive ${r.interactive.toFixed(2)} s, ` +
        `${r.nodesInPage} DAG nodes in the page (submission took ${r.submitted.toFixed(2)} s)`,
    );
    last = r;
  }
} finally {
  await browser.close();
  await c.stop();
}
console.log(`seconds to interactive ${last.n} steps ${last.interactive.toFixed(2)}`);
