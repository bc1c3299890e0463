import { api, can, isRequester, mayPlay, sessionPath } from '../api.js';
import { h, notice } from '../dom.js';
import { play, sha256 } from '@tower-dev/breakglass-terminal';
import { typedSection } from './typed.js';

const decoder = new TextDecoder();

// evidenceSection plays an ended session's recording and checks, in the
// browser, that the manifest is the one anchored (its SHA-256 is the
// Session's) and that the recording is the one the manifest names.
export function evidenceSection(me, s) {
  const ev = s.status.evidence || {};
  if (!ev.manifestSHA256) {
    return h('section', { id: 'recording' }, h('h2', {}, 'Recording'), notice('info', 'The recording is being finalized: it shows here in a moment.'));
  }
  const files = sessionPath(s.cluster, s.namespace, s.name) + '/recording?file=';
  const checks = h('ul', { class: 'checks' });
  const stage = h('div', { class: 'player', 'aria-label': 'Recording' });
  const rekor = ev.logIndex !== undefined && ev.logIndex !== null
    ? `entry ${ev.entryID || '?'} at index ${ev.logIndex}`
    : ev.anchorPending ? 'pending: the log has not taken it yet' : 'not anchored (no transparency log configured)';
  const sensitive = s.status.approval?.processAccess;
  const section = h('section', { id: 'recording', 'aria-labelledby': 'recording-title' },
    h('h2', { id: 'recording-title' }, 'Recording'),
    sensitive ? h('p', { class: 'tag sensitive' }, 'Sensitive: the session had process access') : null,
    h('dl', { class: 'facts' },
      h('dt', {}, 'Manifest SHA-256 (anchored)'), h('dd', { class: 'hash', id: 'manifest-sha256' }, ev.manifestSHA256 || '—'),
      h('dt', {}, 'Rekor'), h('dd', { id: 'rekor-entry' }, rekor)));
  if (!mayPlay(me, s)) {
    section.append(notice('error', sensitive
      ? 'This recording is sensitive: you may not view sensitive recordings here, so it is neither played nor offered for download.'
      : 'Only the requester, approvers and reviewers play this recording.'));
    return section;
  }
  section.append(checks, stage,
    h('p', {}, 'Download: ', h('a', { href: files + 'manifest', download: 'manifest.json' }, 'manifest'), ' · ',
      h('a', { href: files + 'cast', download: 'recording.cast' }, 'recording'), ' · ',
      h('a', { href: files + 'transcript', download: 'transcript.raw' }, 'transcript')),
    verifyHint(s));
  (async () => {
    const item = (ok, text) => checks.append(h('li', { class: ok ? 'ok' : 'bad' }, (ok ? '✓ ' : '✗ ') + text));
    try {
      const manifest = await api.recording(s.cluster, s.namespace, s.name, 'manifest');
      const mSum = await sha256(manifest.bytes);
      item(mSum === ev.manifestSHA256, mSum === ev.manifestSHA256
        ? 'The manifest\'s SHA-256, computed in your browser, is the anchored one.'
        : `The manifest's SHA-256 is ${mSum}, not the anchored ${ev.manifestSHA256}.`);
      const want = JSON.parse(decoder.decode(manifest.bytes)).files?.['recording.cast']?.sha256;
      const cast = await api.recording(s.cluster, s.namespace, s.name, 'cast');
      const cSum = await sha256(cast.bytes);
      item(cSum === want, cSum === want ? 'The recording\'s SHA-256 is the one the manifest names.' : `The recording's SHA-256 is ${cSum}, not the manifest's ${want}.`);
      stage.id = 'player';
      const castText = decoder.decode(cast.bytes);
      section.append(typedSection(s, castText, play(stage, castText)));
    } catch (e) {
      stage.replaceChildren(notice('error', e.message));
    }
  })();
  return section;
}

// verifyHint is the command that checks this recording without the
// console, for what this relay did with it: a recording anchored in a
// transparency log was signed by the relay and is checked against its key
// and the log's; one that was not carries no signature, and only its files
// and its Session can be checked.
function verifyHint(s) {
  const ev = s.status.evidence || {};
  const exported = `kubectl get session ${s.name} -n ${s.namespace} -o yaml > session.yaml`;
  const anchored = ev.entryID || ev.anchorPending;
  return h('details', { id: 'verify-hint' }, h('summary', {}, 'Verify it yourself, without this console'),
    anchored
      ? h('p', {}, 'Download the three files above into DIR with the bundle from the evidence store' +
        (ev.anchorPending ? ' (once the log has taken the entry)' : '') +
        '; take the relay\'s public key (GET /api/v1/signing-key) and the log\'s from sources you trust:')
      : h('p', {}, 'This relay anchors nothing in a transparency log, so the recording carries no signature: the check proves its files whole and its Session\'s, not who made it. Download the three files above into DIR:'),
    h('pre', {}, exported + '\n' + (anchored
      ? 'kubectl breakglass recording verify DIR --session session.yaml --key relay.pub --rekor-public-key rekor.pub --online'
      : 'kubectl breakglass recording verify DIR --session session.yaml --integrity-only')));
}

// reviewSection shows a glass-broken session's review: due, done, or the
// form for someone who may review it (never its requester).
export function reviewSection(me, s, act, focus) {
  const r = s.status.review;
  if (!r) return null;
  const section = h('section', { id: 'review', 'aria-labelledby': 'review-title' }, h('h2', { id: 'review-title' }, 'Review'));
  if (r.by) {
    section.append(h('p', { id: 'reviewed' }, `Reviewed by ${r.by}: “${r.comment}”`));
    return section;
  }
  const overdue = r.dueAt && Date.parse(r.dueAt) < Date.now();
  section.append(notice(overdue ? 'error' : 'info', `A review is due by ${new Date(r.dueAt).toLocaleString()}${overdue ? ': overdue' : ''}.`));
  if (isRequester(me, s)) {
    section.append(h('p', {}, 'You asked for this session: someone else reviews it.'));
  } else if (can(me, 'review', s.cluster, s.namespace)) {
    const comment = h('textarea', { id: 'review-comment', rows: 3, maxlength: 1024, required: true });
    section.append(h('form', { onsubmit: (e) => { e.preventDefault(); act(() => api.review(s.cluster, s.namespace, s.name, comment.value)); } },
      h('div', { class: 'field' }, h('label', { for: 'review-comment' }, 'What you found'), comment),
      h('button', { type: 'submit', class: 'primary', id: 'review-button' }, 'Submit the review')));
    if (focus === 'review') setTimeout(() => { section.scrollIntoView(); comment.focus(); }, 0);
  }
  return section;
}
