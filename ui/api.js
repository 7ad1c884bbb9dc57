// The REST API and its server-sent event streams, with the signed-in token. The token lives in
// sessionStorage (this tab's session only) and goes in the Authorization header, never in a
// URL: EventSource cannot send headers, so streams are read with fetch().

const KEY = 'rsl.token';

export const token = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

//! An API error: the HTTP status and the JSON error body's code, message and hint.
export class ApiError extends Error {
  constructor(status, body, text) {
    const b = body && typeof body === 'object' ? body : {};
    super(b.message || text || `HTTP ${status}`);
    this.status = status;
    this.code = b.code || `HTTP_${status}`;
    this.hint = b.hint || '';
  }
}

let onUnauthenticated = () => {};
//! Called when the API answers 401 (the token was revoked or is wrong).
export function setOnUnauthenticated(f) {
  onUnauthenticated = f;
}

function headers(extra = {}) {
  return { Authorization: 'Bearer ' + token.get(), ...extra };
}

async function check(res) {
  if (res.ok) return res;
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  if (res.status === 401) onUnauthenticated();
  throw new ApiError(res.status, body, text);
}

const common = { cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };

//! GET (or another method with a body) `path`; the parsed JSON, or the text.
export async function api(path, { method = 'GET', body, type, signal } = {}) {
  const res = await check(
    await fetch(path, {
      ...common,
      method,
      body,
      signal,
      headers: headers(type ? { 'Content-Type': type } : {}),
    }),
  );
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

//! Reads a text stream (a followed log), calling onText with each piece.
export async function readText(path, onText, signal) {
  const res = await check(await fetch(path, { ...common, signal, headers: headers() }));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

//! Reads a server-sent event stream: onEvent(type, data) per event; returns when it ends.
export async function watch(path, onEvent, signal) {
  const res = await check(
    await fetch(path, { ...common, signal, headers: headers({ Accept: 'text/event-stream' }) }),
  );
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let type = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) type = line.slice(7);
        else if (line.startsWith('data: ')) data += (data ? '\n' : '') + line.slice(6);
      }
      if (data) onEvent(type, JSON.parse(data));
    }
  }
}

//! watch() again after a dropped connection (1 s, backing off to 10 s) until an `end` event,
//! a refusal (4xx) or the signal aborts. onState('live' | 'reconnecting' | 'ended').
export async function keepWatching(path, onEvent, signal, onState = () => {}) {
  let wait = 1000;
  let ended = false;
  while (!signal.aborted && !ended) {
    try {
      onState('live');
      await watch(
        path,
        (type, data) => {
          if (type === 'end') ended = true;
          onEvent(type, data);
          wait = 1000;
        },
        signal,
      );
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status < 500) {
        onState('ended');
        throw e;
      }
    }
    if (ended || signal.aborted) break;
    onState('reconnecting');
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 10000);
  }
  onState('ended');
}
