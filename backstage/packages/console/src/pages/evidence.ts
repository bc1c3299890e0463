import {
  checkEvidence, evidenceFacts, isRequester, may, offers, reviewDue, reviewOverdue, sessionFields, verifyCommands, when, withheld,
  type Me, type Session,
} from '@tower-dev/breakglass-portal';
import { play } from '@tower-dev/breakglass-terminal';
import { api } from '../api';
import { errorText, h, notice } from '../dom';
import type { Act } from './session';
import { typedSection } from './typed';

// evidenceSection plays an ended session's recording and checks, in the
// browser, that the manifest is the one its Session records (and the log
// holds, where one took it) and that the recording is the one the
// manifest names.
export function evidenceSection(s: Session) {
  const ev = s.status.evidence;
  if (!ev?.manifestSHA256) {
    return h('section', { id: 'recording' }, h('h2', {}, 'Recording'), notice('info', 'The recording is being finalized: it shows here in a moment.'));
  }
  const checks = h('ul', { class: 'checks' });
  const stage = h('div', { class: 'player', 'aria-label': 'Recording' });
  const sensitive = s.status.approval?.processAccess;
  const section = h('section', { id: 'recording', 'aria-labelledby': 'recording-title' },
    h('h2', { id: 'recording-title' }, 'Recording'),
    sensitive ? h('p', { class: 'tag sensitive' }, 'Sensitive: the session had process access') : null,
    h('dl', { class: 'facts' }, evidenceFacts(s).flatMap(f => [h('dt', {}, f.label), h('dd', { id: f.id, class: f.id === 'manifest-sha256' ? 'hash' : null }, f.value)])));
  if (!may(s, 'play')) {
    section.append(notice('error', withheld(s)));
    return section;
  }
  const hint = verifyCommands(s);
  section.append(checks, stage,
    h('p', {}, 'Download: ', h('a', { href: api.recordingPath(s, 'manifest'), download: 'manifest.json' }, 'manifest'), ' · ',
      h('a', { href: api.recordingPath(s, 'cast'), download: 'recording.cast' }, 'recording'), ' · ',
      h('a', { href: api.recordingPath(s, 'transcript'), download: 'transcript.raw' }, 'transcript')),
    h('details', { id: 'verify-hint' }, h('summary', {}, 'Verify it yourself, without this console'), h('p', {}, hint.intro), h('pre', {}, hint.commands)));
  (async () => {
    try {
      const got = await checkEvidence(api, s);
      checks.append(...got.checks.map(c => h('li', { class: c.ok ? 'ok' : 'bad' }, (c.ok ? '✓ ' : '✗ ') + c.text)));
      stage.id = 'player';
      section.append(typedSection(s, got.cast, play(stage, got.cast)));
    } catch (e) {
      stage.replaceChildren(notice('error', errorText(e)));
    }
  })();
  return section;
}

// reviewSection shows a session's review: due (and when), done, or the
// form for someone the relay lets review it (never its requester).
export function reviewSection(s: Session, act: Act, focus: string, me?: Me) {
  const r = s.status.review;
  if (!r) return null;
  const section = h('section', { id: 'review', 'aria-labelledby': 'review-title' }, h('h2', { id: 'review-title' }, 'Review'));
  if (r.by) {
    section.append(h('p', { id: 'reviewed' }, `Reviewed by ${r.by}: “${r.comment}”`));
    return section;
  }
  if (reviewDue(s) && r.dueAt) {
    section.append(notice(reviewOverdue(s) ? 'error' : 'info', `A review is due by ${when(r.dueAt)}${reviewOverdue(s) ? ': overdue' : ''}.`));
  }
  if (may(s, 'review')) {
    const comment = h('textarea', { id: 'review-comment', rows: 3, maxlength: 1024, required: true, 'aria-describedby': 'review-comment-help' });
    section.append(h('form', { onsubmit: (e: Event) => { e.preventDefault(); void act(() => api.review(s, comment.value)); } },
      h('div', { class: 'field' }, h('label', { for: 'review-comment' }, sessionFields.review.label), comment,
        h('p', { class: 'help', id: 'review-comment-help' }, sessionFields.review.help)),
      h('button', { type: 'submit', class: 'primary', id: 'review-button' }, offers.review.label)));
    if (focus === 'review') setTimeout(() => { section.scrollIntoView(); comment.focus(); }, 0);
  } else if (isRequester(me, s)) {
    section.append(h('p', {}, 'You asked for this session: someone else reviews it.'));
  }
  return section;
}
