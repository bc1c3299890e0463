import { extensionOptions, isRequester, may, minutes, offers, sessionFields, type Me, type Session } from '@tower-dev/breakglass-portal';
import { api } from '../api';
import { h, notice } from '../dom';
import type { Act } from './session';

// extensionKey changes when what the extension box shows changes: it is
// redrawn then, and not while someone types into it.
export const extensionKey = (s: Session) => JSON.stringify([s.status.extensionRequest?.at, (s.status.extensions ?? []).length, s.may]);

// extensionSection is a running session's more time: its requester asks
// (how much, why), another person with approve decides; what was decided
// before is listed. The relay and the cluster judge every limit; the page
// offers what the relay does.
export function extensionSection(me: Me, s: Session, act: Act) {
  const st = s.status;
  const decided = (st.extensions ?? []).map((x, i) => h('li', { id: `extension-${i}` },
    `${minutes(x.duration)} more asked by ${x.by} (“${x.reason}”): ${x.decision === 'Approved' ? 'approved' : 'denied'} by ${x.decidedBy}`,
    x.comment ? ` (“${x.comment}”)` : ''));
  const parts: (HTMLElement | null)[] = [decided.length ? h('ul', { class: 'extensions' }, decided) : null];
  const q = st.extensionRequest;
  const f = sessionFields;
  if (q && may(s, 'decideExtension')) {
    const comment = h('input', { type: 'text', id: 'extend-comment', maxlength: 1024 });
    parts.push(h('div', { class: 'decide', id: 'extend-decide' },
      h('p', {}, `${q.by} asks for ${minutes(q.duration)} more: “${q.reason}”. Approving replaces the session's grant with a new one that covers the later hard stop.`),
      h('div', { class: 'field' }, h('label', { for: 'extend-comment' }, f.extendComment.label), comment),
      h('button', { class: 'primary', id: 'extend-approve', onclick: () => act(() => api.approveExtension(s, comment.value)) }, offers.decideExtension.label),
      h('button', { class: 'danger', id: 'extend-deny', onclick: () => act(() => api.denyExtension(s, comment.value)) }, 'Refuse')));
  } else if (q) {
    parts.push(notice('info', isRequester(me, s)
      ? `You asked for ${minutes(q.duration)} more: waiting for another person to decide.`
      : `${q.by} asked for ${minutes(q.duration)} more: waiting for an approver.`));
  } else if (may(s, 'extend')) {
    const more = h('select', { id: 'extend-duration' }, extensionOptions.map(d => h('option', { value: d.value }, d.label)));
    const why = h('input', { type: 'text', id: 'extend-reason', maxlength: 1024, required: true });
    parts.push(h('form', { class: 'inline', onsubmit: (e: Event) => { e.preventDefault(); void act(() => api.extend(s, more.value, why.value)); } },
      h('label', { for: 'extend-duration' }, f.extendDuration.label), more,
      h('label', { for: 'extend-reason' }, f.extendReason.label), why,
      h('button', { type: 'submit', id: 'extend' }, offers.extend.label)));
  }
  return h('section', { id: 'extension', 'aria-label': 'More time' }, parts);
}
