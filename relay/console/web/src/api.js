// The relay's API, on the page's own origin. The session cookie goes with
// every call (the page never sees a token); a 401 renews it once through
// the refresh cookie, then sends the person through sign-in, back to
// where they were.
export class APIError extends Error {
  constructor(status, reason, message) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

async function call(method, path, body, retried) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (resp.status === 401 && !retried) {
    const renewed = await fetch('/auth/refresh', { method: 'POST', credentials: 'same-origin' });
    if (renewed.ok) return call(method, path, body, true);
    signIn();
    throw new APIError(401, 'Unauthenticated', 'Your sign-in expired: signing in again.');
  }
  return resp;
}

export function signIn() {
  location.assign('/auth/login?next=' + encodeURIComponent(location.pathname + location.search));
}

async function json(method, path, body) {
  const resp = await call(method, path, body);
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const e = data.error || {};
    throw new APIError(resp.status, e.reason || 'Error', e.message || resp.statusText);
  }
  return data;
}

const sessions = '/api/v1/clusters';
export const sessionPath = (c, ns, n) =>
  `${sessions}/${encodeURIComponent(c)}/namespaces/${encodeURIComponent(ns)}/sessions/${encodeURIComponent(n)}`;

export const api = {
  me: () => json('GET', '/api/v1/me'),
  list: () => json('GET', '/api/v1/sessions').then((d) => d.sessions),
  get: (c, ns, n) => json('GET', sessionPath(c, ns, n)),
  request: (c, ns, req) =>
    json('POST', `${sessions}/${encodeURIComponent(c)}/namespaces/${encodeURIComponent(ns)}/sessions`, req),
  approve: (c, ns, n, d) => json('POST', sessionPath(c, ns, n) + '/approve', d),
  deny: (c, ns, n, reason) => json('POST', sessionPath(c, ns, n) + '/deny', { reason }),
  start: (c, ns, n) => json('POST', sessionPath(c, ns, n) + '/start'),
  end: (c, ns, n, reason) => json('POST', sessionPath(c, ns, n) + '/end', reason ? { reason } : {}),
  extend: (c, ns, n, duration, reason) => json('POST', sessionPath(c, ns, n) + '/extensions', { duration, reason }),
  approveExtension: (c, ns, n, comment) => json('POST', sessionPath(c, ns, n) + '/extensions/approve', comment ? { comment } : {}),
  denyExtension: (c, ns, n, reason) => json('POST', sessionPath(c, ns, n) + '/extensions/deny', reason ? { reason } : {}),
  review: (c, ns, n, comment) => json('POST', sessionPath(c, ns, n) + '/review', { comment }),
  commands: (c, ns, n) => json('GET', sessionPath(c, ns, n) + '/recording/commands'),
  searchRecording: (c, ns, n, q, stream) =>
    json('GET', sessionPath(c, ns, n) + '/recording/search?q=' + encodeURIComponent(q) + '&stream=' + encodeURIComponent(stream)),
  // recording answers the file's bytes and the anchored manifest hash.
  recording: async (c, ns, n, file) => {
    const resp = await call('GET', sessionPath(c, ns, n) + '/recording?file=' + file);
    if (!resp.ok) {
      const e = (await resp.json().catch(() => ({}))).error || {};
      throw new APIError(resp.status, e.reason || 'Error', e.message || resp.statusText);
    }
    return { bytes: new Uint8Array(await resp.arrayBuffer()), manifestSHA256: resp.headers.get('X-Manifest-SHA256') };
  },
};

// onSessions calls changed when a session the person may see changes (at
// most every 300 ms) and when the relay's event stream opens again after a
// break, in which changes may have been missed. It returns what stops it.
export function onSessions(changed) {
  let es;
  let timer = null;
  let stopped = false;
  let opened = 0;
  let pending = null; // the one change waiting, or null for several or unknown ones
  const soon = (e) => {
    if (stopped) return;
    if (timer) { pending = null; return; }
    pending = e?.data ? JSON.parse(e.data) : null;
    timer = setTimeout(() => { timer = null; if (!stopped) changed(pending); }, 300);
  };
  const open = () => {
    es = new EventSource('/api/v1/events');
    es.addEventListener('session', soon);
    es.onopen = () => { if (opened++ > 0) soon(); };
    es.onerror = async () => {
      // The browser reconnects by itself, unless the relay refused the
      // stream (its cookie ran out): renew it through any call, then open
      // the stream again.
      if (stopped || es.readyState !== EventSource.CLOSED) return;
      try { await api.me(); } catch { return; }
      setTimeout(() => { if (!stopped) { opened++; open(); } }, 2000);
    };
  };
  open();
  return () => { stopped = true; clearTimeout(timer); es.close(); };
}

// can says whether me may do action in cluster/ns: what the page offers.
export function can(me, action, cluster, ns) {
  const c = me.clusters.find((x) => x.name === cluster);
  if (!c) return false;
  return c.allowed.some((a) => a.actions.includes(action) && (a.namespaces.includes('*') || a.namespaces.includes(ns)));
}

// mayAnywhere says whether me may do one of actions somewhere: what the
// page shows at all (a link, a queue).
export function mayAnywhere(me, ...actions) {
  return me.clusters.some((c) => c.allowed.some((a) => actions.some((x) => a.actions.includes(x))));
}

// mayPlay mirrors the relay's rule for a recording: the requester, approvers
// and reviewers; a sensitive one (process access) also needs viewSensitive.
export function mayPlay(me, s) {
  return (!s.status.approval?.processAccess || can(me, 'viewSensitive', s.cluster, s.namespace)) &&
    (isRequester(me, s) || can(me, 'approve', s.cluster, s.namespace) || can(me, 'review', s.cluster, s.namespace));
}

export function isRequester(me, s) {
  return s.spec.requesterID ? s.spec.requesterID === me.id : s.spec.requester === me.name;
}
