import { api, can, isRequester, onSessions, sessionPath } from '../api.js';
import { countdown, endedWhy, h, minutes, notice } from '../dom.js';
import { phaseBadge } from './lists.js';
import { evidenceSection, reviewSection } from './evidence.js';
import { extensionKey, extensionSection } from './extension.js';
import { openTerminal } from '@tower-dev/breakglass-terminal';

const yes = (b) => (b ? 'yes' : 'no');

function facts(s) {
  const rows = [
    ['Cluster', s.cluster], ['Namespace', s.namespace], ['Pod', s.spec.targetPod],
    ['App container', s.spec.targetContainer || '—'], ['Mode', s.spec.mode],
    ['Process access asked', yes(s.spec.processAccess)], ['Keep the pod asked', yes(s.spec.keepPod)],
    ['Duration', minutes(s.spec.duration)], ['Requester', s.spec.requester], ['Reason', s.spec.reason],
  ];
  return h('dl', { class: 'facts session' }, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// The page of one session: what it is, what happens next and who may do
// it, and, once it runs, its terminal; once ended, its recording and review.
export async function sessionPage(main, me, cluster, ns, name, focus) {
  let s = await api.get(cluster, ns, name);
  const title = h('h1', {}, `Session ${s.name} `, phaseBadge(s.status.phase));
  const body = h('div', {});
  const out = h('div', { 'aria-live': 'polite', class: 'out' });
  main.append(...[title, s.spec.glassBroken ? h('p', { class: 'tag glass', id: 'glass-broken' }, 'Glass broken: started without approval, reviewed afterwards') : null, facts(s), out, body].filter(Boolean));
  let term = null;
  let shown = '';
  // The extension box of a running session, redrawn on its own so the
  // terminal beside it stays open.
  let extension = null;
  let extensionShown = '';
  const timers = h('p', { class: 'timers', 'aria-live': 'off' });

  // Answers are shown in the order they were asked for: a read sent before
  // an action and answered after it would otherwise show the session as it
  // was (a start not yet made), and close and reopen its terminal.
  let asked = 0;
  let shownAnswer = 0;
  const fresh = async (f) => {
    const mine = ++asked;
    const got = await f();
    if (mine > shownAnswer) {
      shownAnswer = mine;
      s = got;
      draw();
    }
  };

  const act = async (f) => {
    out.replaceChildren();
    try {
      await fresh(f);
      // An action answers with the Session; its live limits come with a read.
      await fresh(() => api.get(cluster, ns, name));
    } catch (e) {
      out.replaceChildren(notice('error', e.message));
    }
  };

  const tick = () => {
    if (s.status.phase !== 'Active') return;
    const parts = [];
    if (s.status.deadline) parts.push(`Hard stop in ${countdown(s.status.deadline)}`);
    if (s.live) {
      if (s.live.moderated) parts.push(s.live.inputHeld ? 'moderated: input held until an approver watches' : 'moderated: an approver is watching');
      parts.push(`idle limit in ${countdown(s.live.idleEndsAt)}`);
      const people = (s.live.attached || []).map((a) => `${a.name} ${a.typing ? 'typing' : 'watching'}`);
      parts.push(s.live.aloneEndsAt
        ? `no terminal open: the disconnect limit ends it in ${countdown(s.live.aloneEndsAt)}`
        : `terminal open: ${people.join(', ') || `${s.live.viewers} viewer(s)`}`);
    }
    timers.textContent = parts.join(' · ');
  };

  const draw = () => {
    title.replaceChildren(`Session ${s.name} `, phaseBadge(s.status.phase));
    const key = [s.status.phase, s.status.review?.by, s.status.evidence?.manifestSHA256, s.status.evidence?.logIndex].join('|');
    if (key === shown) {
      if (extension && extensionKey(s) !== extensionShown) drawExtension();
      return tick();
    }
    shown = key;
    if (term && s.status.phase !== 'Active') {
      term.close();
      term = null;
    }
    extension = null;
    body.replaceChildren(...phaseView().filter(Boolean));
    tick();
  };

  const drawExtension = () => {
    extensionShown = extensionKey(s);
    const next = extensionSection(me, s, act);
    extension.replaceWith(next);
    extension = next;
  };

  const approvalFacts = (a) => h('p', { class: 'approval' },
    `${a.by.startsWith('glass broken') || a.by.startsWith('approval not required') ? '' : 'Approved by '}${a.by}: mode ${a.mode}, process access ${yes(a.processAccess)}, keep the pod ${yes(a.keepPod)}`,
    a.comment ? ` (“${a.comment}”)` : '');

  const phaseView = () => {
    const st = s.status;
    const mine = isRequester(me, s);
    switch (st.phase) {
      case 'Pending':
        if (!mine && can(me, 'approve', s.cluster, s.namespace)) return [approvalForm()];
        return [notice('info', mine ? 'Waiting for another person to approve your request.' : 'Waiting for an approver.'),
          mine ? takeBack('Withdraw the request', 'withdraw') : null];
      case 'Denied':
        return [notice(mine ? 'error' : 'info', `Denied by ${st.denial?.by}: ${st.denial?.reason || 'no reason given'}`), reviewSection(me, s, act, focus)];
      case 'Approved':
        if (mine) {
          return [approvalFacts(st.approval),
            h('button', { class: 'primary', id: 'start', onclick: async (e) => {
              e.target.disabled = true;
              out.replaceChildren(notice('info', 'Starting: granting, adding the debug container, attaching…'));
              await act(() => api.start(s.cluster, s.namespace, s.name));
              e.target.disabled = false;
            } }, 'Start the session'),
            takeBack('Withdraw the request', 'withdraw')];
        }
        return [approvalFacts(st.approval), notice('info', `Approved; waiting for ${s.spec.requester} to start it.`),
          // As the relay decides: an approver cancels what a person approved, never a broken glass.
          (st.approval?.byID && !s.spec.glassBroken && can(me, 'approve', s.cluster, s.namespace)) || can(me, 'end', s.cluster, s.namespace)
            ? takeBack('Cancel the session', 'cancel') : null];
      case 'Active':
        return activeView(mine);
      case 'Ended':
        return [st.approval ? approvalFacts(st.approval) : h('p', { class: 'approval' }, 'Never approved.'),
          notice('info', `Ended by ${st.end?.by}, ${endedWhy[st.end?.reason] || st.end?.reason}${st.end?.abnormal ? ', abnormally' : ''}${st.end?.note ? `: “${st.end.note}”` : ''}${st.end?.detail ? ` (${st.end.detail})` : ''}.`),
          st.startedAt ? evidenceSection(me, s) : h('p', { id: 'never-started' }, 'It never started: nothing ran, so there is no recording.'),
          reviewSection(me, s, act, focus)];
      default:
        return [notice('info', `The session is ${st.phase || 'being created'}.`)];
    }
  };

  // takeBack ends a session that has not started: its requester withdraws
  // it, an approver cancels it. Nothing was granted yet.
  const takeBack = (label, id) => {
    const why = h('input', { type: 'text', id: id + '-reason', maxlength: 1024 });
    return h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); act(() => api.end(s.cluster, s.namespace, s.name, why.value)); } },
      h('label', { for: id + '-reason' }, 'Why (optional)'), why, h('button', { type: 'submit', id }, label));
  };

  const activeView = (mine) => {
    const watching = !mine;
    if (watching && !can(me, 'approve', s.cluster, s.namespace)) return [timers, notice('info', 'The session is running; only its requester and approvers open its terminal.')];
    const status = h('p', { class: 'term-status', role: 'status' }, 'Connecting…');
    const box = h('div', { class: 'terminal', 'aria-label': watching ? 'Session terminal (read-only)' : 'Session terminal' });
    const ws = location.origin.replace(/^http/, 'ws') + sessionPath(s.cluster, s.namespace, s.name) + '/terminal';
    term = openTerminal(box, ws, { readOnly: watching, onStatus: (what, detail) => {
      // Who is attached changed: show it now, not at the next poll.
      if (what === 'connected') fresh(() => api.get(s.cluster, s.namespace, s.name)).catch(() => {});
      status.textContent = { connected: watching ? 'Connected: watching' : 'Connected', reconnecting: 'Connection lost: reconnecting…',
        lost: 'Connection lost. Reload the page to try again.', closed: 'The terminal closed.', error: 'The relay said: ' + (detail || ''),
        held: 'Input held: ' + (detail || ''), moderated: 'Connected, moderated: ' + (detail || '') }[what] || what;
    } });
    const reason = h('input', { type: 'text', id: 'end-reason', maxlength: 1024 });
    // A moderator (an approver watching a moderated session) ends it at once.
    const end = (mine || can(me, 'end', s.cluster, s.namespace) || (s.live?.moderated && can(me, 'approve', s.cluster, s.namespace)))
      ? h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); act(() => api.end(s.cluster, s.namespace, s.name, reason.value)); } },
        h('label', { for: 'end-reason' }, 'Why end it (optional)'), reason, h('button', { type: 'submit', class: 'danger', id: 'end' }, 'End the session'))
      : null;
    extension = extensionSection(me, s, act);
    extensionShown = extensionKey(s);
    return [timers, watching ? h('p', { class: 'watching', id: 'watching' }, 'Watching (read-only): what you type is not sent') : null, status, box, extension, end];
  };

  const approvalForm = () => {
    const keep = h('input', { type: 'checkbox', id: 'approve-keep' });
    const proc = h('input', { type: 'checkbox', id: 'approve-process' });
    const comment = h('input', { type: 'text', id: 'approve-comment', maxlength: 1024 });
    const why = h('textarea', { id: 'deny-reason', rows: 2, maxlength: 1024 });
    const section = h('section', { id: 'approve', class: 'decide', 'aria-labelledby': 'decide-title' },
      h('h2', { id: 'decide-title' }, `${s.spec.requester} asks for a ${s.spec.mode} session`),
      h('p', {}, `Approving lets the relay, for ${s.spec.duration}, add a signed, read-only, non-root debug container ${s.spec.mode === 'live' ? 'to the running pod' : 'to a copy of the pod'} ${s.namespace}/${s.spec.targetPod} on ${s.cluster}, and give ${s.spec.requester} its recorded terminal. You may watch it.`),
      s.spec.processAccess ? h('div', { class: 'field check' }, proc, h('label', { for: 'approve-process' }, `Grant process access to ${s.spec.targetContainer}`),
        h('p', { class: 'help' }, 'Asked for. The debug container then sees the app\'s processes, their memory and environment; the recording becomes sensitive. Leave unticked to approve without it.')) : null,
      h('div', { class: 'field check' }, keep, h('label', { for: 'approve-keep' }, 'Keep the pod afterwards'),
        h('p', { class: 'help' }, `${s.spec.keepPod ? 'Asked for. ' : ''}Otherwise the pod is deleted and replaced when the session ends.`)),
      h('div', { class: 'field' }, h('label', { for: 'approve-comment' }, 'Comment (optional)'), comment),
      h('button', { class: 'primary', id: 'approve-button', onclick: () => act(() => api.approve(s.cluster, s.namespace, s.name,
        // Process access only when ticked, whatever the page thought was asked.
        { keepPod: keep.checked, withoutProcessAccess: !proc.checked, comment: comment.value || undefined })) }, 'Approve'),
      h('div', { class: 'field' }, h('label', { for: 'deny-reason' }, 'Reason to deny'), why),
      h('button', { class: 'danger', id: 'deny-button', onclick: () => {
        if (!why.value.trim()) { out.replaceChildren(notice('error', 'Say why you deny it: the requester sees the reason.')); why.focus(); return; }
        act(() => api.deny(s.cluster, s.namespace, s.name, why.value));
      } }, 'Deny'));
    if (focus === 'approve') setTimeout(() => section.scrollIntoView(), 0);
    return section;
  };

  draw();
  const reread = async () => {
    try {
      await fresh(() => api.get(cluster, ns, name));
    } catch (e) {
      out.replaceChildren(notice('error', e.message));
    }
  };
  // The session's changes come as events; only a running one's timers and
  // terminals (the relay's count, not the Session's) are read every 2 s.
  const stopEvents = onSessions((e) => { if (!e?.name || (e.cluster === cluster && e.namespace === ns && e.name === name)) reread(); });
  const poll = setInterval(() => { if (s.status.phase === 'Active') reread(); }, 2000);
  const clock = setInterval(tick, 1000);
  return () => {
    stopEvents();
    clearInterval(poll);
    clearInterval(clock);
    if (term) term.close();
  };
}
