// The console's entry: sign-in, the signed-in subject, and the pages by location hash
// (#/workloads, #/run/<id>, #/cluster). Each page gets an AbortSignal that ends its requests
// and streams when another page opens.
import { api, token, setOnUnauthenticated } from './api.js';
import { el, clear, errorBox } from './dom.js';
import { workloadsPage } from './workloads.js';
import { runPage } from './run.js';
import { clusterPage } from './cluster.js';
import { session } from './session.js';

let page = null;

function signIn(main, message) {
  const input = el('input', {
    type: 'password',
    id: 'token',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'rsl_…',
    testid: 'login-token',
  });
  const form = el(
    'form',
    { class: 'card signin' },
    el('h1', { text: 'Sign in' }),
    el('p', {
      class: 'muted',
      text: 'Paste an API token (seedctl token create). It is kept for this browser tab only.',
    }),
    el('label', { for: 'token', text: 'Token' }),
    input,
    el('button', { type: 'submit', testid: 'login-submit', text: 'Sign in' }),
  );
  if (message) form.append(errorBox({ code: 'UNAUTHENTICATED', message }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    token.set(t);
    session.who = null;
    if (!location.hash || location.hash === '#/signin') location.hash = '#/workloads';
    route();
  });
  main.append(form);
  input.focus();
}

function showWho() {
  const who = document.getElementById('who');
  const out = document.getElementById('signout');
  clear(who);
  if (session.who) {
    who.append(
      el('span', { text: session.who.subject }),
      ' · ',
      el('span', { class: 'role', testid: 'who-role', text: session.who.role }),
      ' · ',
      el('span', { class: 'muted', text: (session.who.namespaces || []).join(', ') }),
    );
  }
  out.classList.toggle('hidden', !session.who);
}

async function route() {
  page?.abort();
  page = new AbortController();
  const signal = page.signal;
  const main = document.getElementById('main');
  clear(main);
  if (!token.get()) {
    session.who = null;
    showWho();
    return signIn(main);
  }
  if (!session.who) {
    try {
      session.who = await api('/api/v1/whoami', { signal });
    } catch (e) {
      if (signal.aborted) return;
      if (e.status === 401) {
        token.clear();
        showWho();
        return signIn(main, 'That token was not accepted: ' + e.message);
      }
      main.append(errorBox(e));
      return;
    }
  }
  showWho();
  const hash = location.hash || '#/workloads';
  const run = hash.match(/^#\/run\/([^/?]+)/);
  for (const a of document.querySelectorAll('header nav a')) a.classList.remove('active');
  if (run) return runPage(main, decodeURIComponent(run[1]), signal);
  if (hash.startsWith('#/cluster')) {
    document.getElementById('nav-cluster').classList.add('active');
    return clusterPage(main, signal);
  }
  document.getElementById('nav-workloads').classList.add('active');
  return workloadsPage(main, signal, session.who, new URLSearchParams(hash.split('?')[1] || ''));
}

setOnUnauthenticated(() => {
  token.clear();
  session.who = null;
  setTimeout(route, 0);
});
document.getElementById('signout').addEventListener('click', () => {
  token.clear();
  session.who = null;
  route();
});
window.addEventListener('hashchange', route);
route();
