import { api, can, isRequester } from '../api.js';
import { h, minutes, notice } from '../dom.js';

// extensionKey changes when what the extension box shows changes: it is
// redrawn then, and not while someone types into it.
export const extensionKey = (s) => JSON.stringify([s.status.extensionRequest?.at, (s.status.extensions || []).length]);

// extensionSection is a running session's more time: its requester asks
// (how much, why), another person with approve decides; what was decided
// before is listed. The relay and the cluster judge every limit; the page
// shows what they answer.
export function extensionSection(me, s, act) {
  const st = s.status;
  const mine = isRequester(me, s);
  const decided = (st.extensions || []).map((x, i) => h('li', { id: `extension-${i}` },
    `${minutes(x.duration)} more asked by ${x.by} (“${x.reason}”): ${x.decision === 'Approved' ? 'approved' : 'denied'} by ${x.decidedBy}`,
    x.comment ? ` (“${x.comment}”)` : ''));
  const parts = [decided.length ? h('ul', { class: 'extensions' }, decided) : null];
  const q = st.extensionRequest;
  if (q && mine) {
    parts.push(notice('info', `You asked for ${minutes(q.duration)} more: waiting for another person to decide.`));
  } else if (q && can(me, 'approve', s.cluster, s.namespace)) {
    const comment = h('input', { type: 'text', id: 'extend-comment', maxlength: 1024 });
    parts.push(h('div', { class: 'decide', id: 'extend-decide' },
      h('p', {}, `${q.by} asks for ${minutes(q.duration)} more: “${q.reason}”. Approving replaces the session's grant with a new one that covers the later hard stop.`),
      h('div', { class: 'field' }, h('label', { for: 'extend-comment' }, 'Comment or reason (optional)'), comment),
      h('button', { class: 'primary', id: 'extend-approve', onclick: () => act(() => api.approveExtension(s.cluster, s.namespace, s.name, comment.value)) }, 'Give more time'),
      h('button', { class: 'danger', id: 'extend-deny', onclick: () => act(() => api.denyExtension(s.cluster, s.namespace, s.name, comment.value)) }, 'Refuse')));
  } else if (q) {
    parts.push(notice('info', `${q.by} asked for ${minutes(q.duration)} more: waiting for an approver.`));
  } else if (mine) {
    const more = h('select', { id: 'extend-duration' }, ['15m', '30m', '45m'].map((d) => h('option', { value: d }, minutes(d))));
    const why = h('input', { type: 'text', id: 'extend-reason', maxlength: 1024, required: true });
    parts.push(h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); act(() => api.extend(s.cluster, s.namespace, s.name, more.value, why.value)); } },
      h('label', { for: 'extend-duration' }, 'More time'), more,
      h('label', { for: 'extend-reason' }, 'Why'), why,
      h('button', { type: 'submit', id: 'extend' }, 'Ask for more time')));
  }
  return h('section', { id: 'extension', 'aria-label': 'More time' }, parts.filter(Boolean));
}
