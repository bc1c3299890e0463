import { api, can, isRequester, mayAnywhere, mayPlay, onSessions } from '../api.js';
import { age, h, link } from '../dom.js';

export const sessionURL = (s, page) =>
  `/console/sessions/${encodeURIComponent(s.cluster)}/${encodeURIComponent(s.namespace)}/${encodeURIComponent(s.name)}${page ? '/' + page : ''}`;

export function phaseBadge(phase) {
  return h('span', { class: `phase phase-${(phase || 'unknown').toLowerCase()}` }, phase || 'Unknown');
}

function table(caption, rows, page, empty) {
  if (rows.length === 0) return h('section', {}, h('h2', {}, caption), h('p', { class: 'empty' }, empty));
  return h('section', {},
    h('h2', {}, caption),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Session', 'Where', 'Mode', 'Requester', 'Reason', 'Phase', 'Asked'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((s) => h('tr', {},
        h('td', {}, link(sessionURL(s, typeof page === 'function' ? page(s) : page), s.name), s.spec.glassBroken ? h('span', { class: 'tag glass' }, 'glass broken') : null),
        h('td', {}, `${s.cluster} / ${s.namespace} / ${s.spec.targetPod}`),
        h('td', {}, s.spec.mode + (s.spec.processAccess ? ' + processes' : '')),
        h('td', {}, s.spec.requester),
        h('td', { class: 'reason' }, s.spec.reason),
        h('td', {}, phaseBadge(s.status.phase)),
        h('td', {}, age(s.created)),
      )))));
}

const reviewDue = (s) => (s.status.phase === 'Ended' || s.status.phase === 'Denied') && s.status.review?.dueAt && !s.status.review?.by;

// current renders a list page now and again whenever a session changes;
// what it returns stops that when the person leaves the page.
async function current(main, render) {
  main.replaceChildren(...(await render()));
  return onSessions(async () => {
    try {
      main.replaceChildren(...(await render()));
    } catch {
      // The next change, or a reload, shows it.
    }
  });
}

export function homePage(main, me) {
  return current(main, () => homeContent(me));
}

async function homeContent(me) {
  const all = await api.list();
  const mine = all.filter((s) => isRequester(me, s));
  const toDecide = all.filter((s) => s.status.phase === 'Pending' && !isRequester(me, s) && can(me, 'approve', s.cluster, s.namespace));
  const reviews = all.filter((s) => reviewDue(s) && !isRequester(me, s) && can(me, 'review', s.cluster, s.namespace));
  const overdue = reviews.filter((s) => Date.parse(s.status.review.dueAt) < Date.now());
  const watch = all.filter((s) => s.status.phase === 'Active' && !isRequester(me, s) && can(me, 'approve', s.cluster, s.namespace));
  return [
    h('h1', {}, 'Sessions'),
    // Only the queues this person works: an approver's, a reviewer's.
    mayAnywhere(me, 'approve') ? table('Waiting for your decision', toDecide, 'approve', 'No request waits for you.') : null,
    mayAnywhere(me, 'review') ? table('Overdue reviews', overdue, 'review', 'No review is overdue.') : null,
    mayAnywhere(me, 'review') ? table('Reviews due', reviews.filter((s) => !overdue.includes(s)), 'review', 'No review is due.') : null,
    mayAnywhere(me, 'approve') ? table('Active sessions you may watch', watch, '', 'Nobody else is in a session you may watch.') : null,
    mayAnywhere(me, 'request', 'breakGlass') || mine.length ? table('Your sessions', mine, '', 'You have not asked for a session.') : null,
  ].filter(Boolean);
}

// granted is what the approver allowed, which may be less than was asked.
const granted = (s) => {
  const a = s.status.approval;
  if (!a) return s.spec.mode;
  return a.mode + (a.processAccess ? ' + processes' : '') + (a.keepPod ? ', pod kept' : '');
};

function recordingsTable(me, rows) {
  if (rows.length === 0) return h('p', { class: 'empty' }, 'No session has ended yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Session', 'Where', 'Granted', 'Requester', 'Reason', 'Ended', 'Recording'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((s) => h('tr', {},
      h('td', {}, link(sessionURL(s, ''), s.name), s.status.approval?.processAccess ? h('span', { class: 'tag sensitive' }, 'sensitive') : null),
      h('td', {}, `${s.cluster} / ${s.namespace} / ${s.spec.targetPod}`),
      h('td', { class: 'granted' }, granted(s)),
      h('td', {}, s.spec.requester),
      h('td', { class: 'reason' }, s.spec.reason),
      h('td', {}, age(s.status.end?.at)),
      h('td', { class: 'playable' }, !s.status.evidence?.manifestSHA256 ? 'being finalized'
        : mayPlay(me, s) ? link(sessionURL(s, ''), 'play and check') : 'not yours to view'),
    ))));
}

export function recordingsPage(main, me) {
  return current(main, async () => {
    const ended = (await api.list()).filter((s) => s.status.phase === 'Ended' && s.status.startedAt);
    return [h('h1', {}, 'Recordings'),
      h('p', {}, 'Every session that ran was recorded byte for byte. Recordings of sessions with process access are sensitive: only people allowed to view sensitive recordings play them.'),
      h('section', {}, h('h2', {}, 'Ended sessions'), recordingsTable(me, ended))];
  });
}
