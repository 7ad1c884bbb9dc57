// The spec as YAML (from the API's canonical JSON: keys in the canonical order it has), and a
// line diff of two texts, for the versions panel.

const PLAIN = /^[A-Za-z_./][A-Za-z0-9_./ -]*$/;
const RESERVED = /^(true|false|yes|no|on|off|null|~|y|n)$/i;

function scalar(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  if (s !== '' && PLAIN.test(s) && !RESERVED.test(s) && !s.endsWith(' ') && !/: |#/.test(s)) return s;
  return JSON.stringify(s);
}

//! YAML text of a JSON value (block style; empty collections as [] / {}).
export function toYaml(value, indent = '') {
  const lines = [];
  const emit = (v, pad, prefix) => {
    if (Array.isArray(v)) {
      if (!v.length) return lines.push(prefix + '[]');
      if (prefix.trim()) lines.push(prefix.replace(/ $/, ''));
      for (const item of v) {
        if (item && typeof item === 'object' && !Array.isArray(item) && Object.keys(item).length) {
          const keys = Object.keys(item);
          keys.forEach((k, i) => {
            const p = (i === 0 ? pad + '- ' : pad + '  ') + scalar(k) + ': ';
            emit(item[k], pad + '    ', p);
          });
        } else {
          emit(item, pad + '  ', pad + '- ');
        }
      }
      return;
    }
    if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      if (!keys.length) return lines.push(prefix + '{}');
      if (prefix.trim()) lines.push(prefix.replace(/ $/, ''));
      for (const k of keys) emit(v[k], pad + '  ', pad + scalar(k) + ': ');
      return;
    }
    lines.push(prefix + scalar(v));
  };
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const k of Object.keys(value)) emit(value[k], indent + '  ', indent + scalar(k) + ': ');
  } else {
    emit(value, indent, indent);
  }
  return lines.join('\n') + '\n';
}

//! Lines of `a` and `b` as [{op: ' ' | '-' | '+', text}] (longest common subsequence; specs
//! are short, and very long inputs fall back to removed-then-added).
export function diffLines(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  if (x.length * y.length > 4e6) {
    return [...x.map((t) => ({ op: '-', text: t })), ...y.map((t) => ({ op: '+', text: t }))];
  }
  const m = x.length;
  const n = y.length;
  const lcs = Array.from({ length: m + 1 }, () => new Uint32Array(n + 1));
  for (let i = m - 1; i >= 0; i--) {
    for (let j = n - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < m && j < n) {
    if (x[i] === y[j]) {
      out.push({ op: ' ', text: x[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: '-', text: x[i++] });
    } else {
      out.push({ op: '+', text: y[j++] });
    }
  }
  while (i < m) out.push({ op: '-', text: x[i++] });
  while (j < n) out.push({ op: '+', text: y[j++] });
  return out;
}
