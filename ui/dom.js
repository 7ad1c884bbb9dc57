// Building the page: every piece of data goes in as text (textContent / text nodes), never
// parsed as HTML, so a step name or a log line like <img src=x onerror=alert(1)> shows as
// those characters. Styles are classes from console.css; positions use the CSSOM (allowed by
// the Content-Security-Policy, unlike style attributes).

//! el('td', {class: 'num', testid: 'step-row-x', text: '12'}, child, ...): a new element.
//! Props: class, text, testid (data-testid), dataset, on<event> (listeners), other attributes.
export function el(tag, props = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = String(v);
    else if (k === 'testid') n.setAttribute('data-testid', v);
    else if (k === 'dataset') Object.assign(n.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  append(n, ...children);
  return n;
}

//! Appends nodes, or strings as text nodes.
export function append(parent, ...children) {
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return parent;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

//! A titled section of a page.
export function section(title, ...children) {
  return el('section', { class: 'card' }, el('h2', { text: title }), ...children);
}

//! An error message box (from an ApiError or any Error).
export function errorBox(err) {
  const box = el('div', { class: 'error', role: 'alert' });
  append(box, el('strong', { text: err.code || 'ERROR' }), ' ', err.message || String(err));
  if (err.hint) append(box, el('div', { class: 'hint', text: 'hint: ' + err.hint }));
  return box;
}
