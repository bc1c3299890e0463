import {
  age, granted, may, phaseColours, mayAnywhere, modeLabel, phaseOf, queues, reviewOverdue, watchSessions, when,
  type Me, type Session,
} from '@tower-dev/breakglass-portal';
import { api, transport } from '../api';
import { h, link } from '../dom';

export const sessionURL = (s: Session, page?: string) =>
  `/console/sessions/${encodeURIComponent(s.cluster)}/${encodeURIComponent(s.namespace)}/${encodeURIComponent(s.name)}${page ? '/' + page : ''}`;

export function phaseBadge(s: Session) {
  const p = phaseOf(s);
  const c = phaseColours[p];
  return h('span', { class: 'phase', style: `color: ${c.color}; background: ${c.background}` }, p);
}

function table(caption: string, rows: Session[], page: string, empty: string, due = false) {
  if (rows.length === 0) return h('section', {}, h('h2', { class: 'queue-title' }, caption), h('p', { class: 'empty' }, empty));
  const cols = ['Session', 'Where', 'Mode', 'Requester', 'Reason', 'Phase', due ? 'Review due' : 'Asked'];
  return h('section', {},
    h('h2', { class: 'queue-title' }, caption),
    h('table', {},
      h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map(s => h('tr', {},
        h('td', {}, link(sessionURL(s, page), s.name), s.spec.glassBroken ? h('span', { class: 'tag glass' }, 'glass broken') : null),
        h('td', {}, `${s.cluster} / ${s.namespace} / ${s.spec.targetPod}`),
        h('td', {}, modeLabel(s.spec.mode) + (s.spec.processAccess ? ' + processes' : '')),
        h('td', {}, s.spec.requester),
        h('td', { class: 'reason' }, s.spec.reason),
        h('td', {}, phaseBadge(s)),
        due
          ? h('td', { class: reviewOverdue(s) ? 'overdue' : null }, when(s.status.review?.dueAt), reviewOverdue(s) ? h('strong', {}, ' overdue') : null)
          : h('td', {}, age(s.created)),
      )))));
}

// current renders a list page now and again whenever a session changes;
// what it returns stops that when the person leaves the page.
async function current(main: HTMLElement, render: () => Promise<HTMLElement[]>) {
  main.replaceChildren(...(await render()));
  return watchSessions(transport, async () => {
    try {
      main.replaceChildren(...(await render()));
    } catch {
      // The next change, or a reload, shows it.
    }
  });
}

export function homePage(main: HTMLElement, me: Me) {
  return current(main, async () => {
    const q = queues(me, await api.list());
    return [
      h('h1', {}, 'Sessions'),
      // Only the queues this person works: an approver's, a reviewer's.
      mayAnywhere(me, 'approve') ? table('Waiting for your decision', q.toDecide, 'approve', 'No request waits for you.') : null,
      mayAnywhere(me, 'review') ? table('Reviews due', q.reviews, 'review', 'No review is due.', true) : null,
      mayAnywhere(me, 'approve') ? table('Active sessions you may watch', q.watchable, '', 'Nobody else is in a session you may watch.') : null,
      mayAnywhere(me, 'request', 'breakGlass') || q.mine.length ? table('Your sessions', q.mine, '', 'You have not asked for a session.') : null,
    ].filter((x): x is HTMLElement => Boolean(x));
  });
}

function recordingsTable(rows: Session[]) {
  if (rows.length === 0) return h('p', { class: 'empty' }, 'No session has ended yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Session', 'Where', 'Granted', 'Requester', 'Reason', 'Ended', 'Recording'].map(c => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map(s => h('tr', {},
      h('td', {}, link(sessionURL(s), s.name), s.status.approval?.processAccess ? h('span', { class: 'tag sensitive' }, 'sensitive') : null),
      h('td', {}, `${s.cluster} / ${s.namespace} / ${s.spec.targetPod}`),
      h('td', { class: 'granted' }, granted(s)),
      h('td', {}, s.spec.requester),
      h('td', { class: 'reason' }, s.spec.reason),
      h('td', {}, age(s.status.end?.at)),
      h('td', { class: 'playable' }, !s.status.evidence?.manifestSHA256 ? 'being finalized'
        : may(s, 'play') ? link(sessionURL(s), 'play and check') : 'not yours to view'),
    ))));
}

export function recordingsPage(main: HTMLElement) {
  return current(main, async () => {
    const ended = (await api.list()).filter(s => phaseOf(s) === 'Ended' && s.status.startedAt);
    return [h('h1', {}, 'Recordings'),
      h('p', {}, 'Every session that ran was recorded byte for byte. Recordings of sessions with process access are sensitive: only people allowed to view sensitive recordings play them.'),
      h('section', {}, h('h2', {}, 'Ended sessions'), recordingsTable(ended))];
  });
}
