// The console's end-to-end tests' harness: a real rsl-controller (on an ephemeral port, with
// a fresh state directory), tokens made with the real seedctl, workloads submitted through
// the REST API, and a headless Chromium driven by playwright-core (scripts/ci.d/ui.sh installs
// it into tests/node_modules; the browser is Debian's /usr/bin/chromium).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, chmodSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'package.json'));

export const BIN = process.env.RSL_BIN_DIR || path.join(here, '..', '..', 'build-asan', 'bin');

export function chromiumPath() {
  return process.env.RSL_CHROMIUM || '/usr/bin/chromium';
}

export async function launchBrowser() {
  const { chromium } = require('playwright-core');
  // Tests run as root: Chromium's sandbox needs an unprivileged user, so it is off here.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
}

export class Controller {
  constructor() {
    const base = process.env.TEST_TMPDIR || '/tmp/';
    mkdirSync(base, { recursive: true });
    this.root = mkdtempSync(path.join(base, 'rsl-ui-'));
    // Steps run as other users: their directories must be traversable.
    chmodSync(this.root, 0o755);
    this.state = path.join(this.root, 'state');
    this.logPath = path.join(this.root, 'controller.log');
  }

  async start() {
    const { openSync } = await import('node:fs');
    const log = openSync(this.logPath, 'a');
    this.proc = spawn(path.join(BIN, 'rsl-controller'), ['--listen', '127.0.0.1:0', '--state-dir', this.state], {
      stdio: ['ignore', log, log],
    });
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      const m = this.log().match(/listening on (http:\/\/127\.0\.0\.1:[0-9]+)/);
      if (m) {
        this.url = m[1];
        return;
      }
      if (this.proc.exitCode != null) break;
      await sleep(100);
    }
    throw new Error('rsl-controller did not start:\n' + this.log());
  }

  log() {
    try {
      return readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  token(ns, role, subject) {
    const out = execFileSync(path.join(BIN, 'seedctl'), ['token', 'create', '--state-dir', this.state, '--namespace', ns, '--role', role, '--subject', subject], { encoding: 'utf8' });
    return out.trim().split('\n').pop().trim();
  }

  async call(token, method, p, body) {
    const res = await fetch(this.url + p, { method, body, headers: { Authorization: 'Bearer ' + token } });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, json, text };
  }

  async submit(token, yaml) {
    const r = await this.call(token, 'POST', '/api/v1/workloads', yaml);
    if (r.status !== 201) throw new Error(`submit: ${r.status} ${r.text}`);
    return r.json.metadata.id;
  }

  async waitPhase(token, id, phases, ms = 120000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const r = await this.call(token, 'GET', `/api/v1/workloads/${id}`);
      const phase = r.json?.status?.phase;
      if (phases.includes(phase)) return phase;
      if (Date.now() > deadline) throw new Error(`${id} still ${phase}`);
      await sleep(200);
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode == null) {
      this.proc.kill('SIGTERM');
      await new Promise((r) => this.proc.once('exit', r));
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

//! Signs in on a fresh page of `browser` with `token`; returns the page.
export async function signIn(browser, url, token) {
  const page = await browser.newPage();
  page.dialogs = [];
  page.on('dialog', (d) => {
    page.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.requestUrls = [];
  page.on('request', (r) => page.requestUrls.push(r.url()));
  page.cspErrors = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) page.cspErrors.push(m.text());
  });
  await page.goto(url + '/ui/');
  await page.getByTestId('login-token').fill(token);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('who-role').waitFor();
  return page;
}

//! A workload YAML: steps [{name, command (sh -c text), dependsOn, extra}] in namespace ns.
export function workloadYaml(name, ns, steps, resources = '{cpu: "1", memory: 256Mi}') {
  let y = `apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n  labels: {team: ui}\nspec:\n  resources: ${resources}\n  pipeline:\n`;
  for (const s of steps) {
    y += `    - name: ${s.name}\n      command: ["sh", "-c", ${JSON.stringify(s.run)}]\n`;
    if (s.dependsOn?.length) y += `      dependsOn: [${s.dependsOn.join(', ')}]\n`;
    if (s.extra) y += s.extra;
  }
  return y;
}
