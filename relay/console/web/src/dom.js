// h builds elements from text only (never HTML strings), so nothing a
// person typed, such as a session's reason, can become markup.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// link is an in-page link: the router follows it without a reload.
export function link(href, ...children) {
  return h('a', { href, 'data-route': true }, ...children);
}

export function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

// countdown says how long until iso, as m:ss.
// minutes says a Go duration ("30m0s", "1h15m0s") in words.
export function minutes(d) {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(d || '');
  if (!m || !d) return d || '';
  const total = Number(m[1] || 0) * 60 + Number(m[2] || 0) + Math.round(Number(m[3] || 0) / 60);
  return `${total} minute${total === 1 ? '' : 's'}`;
}

// endedWhy says why a session ended, in words.
export const endedWhy = {
  user: 'the requester', approver: 'an approver', hardStop: 'its hard stop', idle: 'its idle limit',
  disconnect: 'its disconnect limit (no terminal open)', swept: 'the sweeper', failedStart: 'a failed start',
};

export function countdown(iso) {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (s <= 0) return 'now';
  const m = Math.floor(s / 60);
  return `${m}m ${String(s % 60).padStart(2, '0')}s`;
}

// status is a live region: what the page says after an action is read out.
export function notice(kind, text) {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}
