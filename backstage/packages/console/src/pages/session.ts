import {
  approvalForm, approvalText, breakGlass, decisionOf, isRequester, may, minutes, modeLabel, offers, outcome,
  phaseMeans, phaseOf, sessionFields, terminalStatusText, timersText, watchSessions,
  type Me, type Session, type TerminalStatus,
} from '@tower-dev/breakglass-portal';
import { openTerminal, type OpenTerminal } from '@tower-dev/breakglass-terminal';
import { api, transport } from '../api';
import { errorText, h, notice } from '../dom';
import { evidenceSection, reviewSection } from './evidence';
import { extensionKey, extensionSection } from './extension';
import { phaseBadge } from './lists';

const yes = (b?: boolean) => (b ? 'yes' : 'no');

function facts(s: Session) {
  const rows: [string, string][] = [
    ['Cluster', s.cluster], ['Namespace', s.namespace], ['Pod', s.spec.targetPod],
    ['App container', s.spec.targetContainer || '—'], ['Mode', modeLabel(s.spec.mode)],
    ['Process access asked', yes(s.spec.processAccess)], ['Keep the pod asked', yes(s.spec.keepPod)],
    ['Duration', minutes(s.spec.duration)], ['Requester', s.spec.requester], ['Reason', s.spec.reason],
  ];
  return h('dl', { class: 'facts session' }, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** What acting on a session does: the answer's Session is shown, or why it was refused. */
export type Act = (f: () => Promise<Session>) => Promise<void>;

// The page of one session: what it is, what happens next and who may do
// it (the relay's offers), and, once it runs, its terminal; once ended,
// its recording and review.
export async function sessionPage(main: HTMLElement, me: Me, cluster: string, ns: string, name: string, focus: string) {
  let s = await api.get(cluster, ns, name);
  const title = h('h1', { id: 'session-title' }, `Session ${s.name} `, phaseBadge(s));
  const means = h('p', { class: 'help', id: 'phase-means' });
  const body = h('div', {});
  const out = h('div', { 'aria-live': 'polite', class: 'out' });
  main.append(title, means, ...(s.spec.glassBroken ? [h('p', { class: 'tag glass', id: 'glass-broken' }, breakGlass.tag)] : []), facts(s), out, body);
  let term: OpenTerminal | null = null;
  let shown = '';
  // The extension box of a running session, redrawn on its own so the
  // terminal beside it stays open.
  let extension: HTMLElement | null = null;
  let extensionShown = '';
  const timerLine = h('p', { class: 'timers', id: 'timers', 'aria-live': 'off' });

  // Answers are shown in the order they were asked for: a read sent before
  // an action and answered after it would otherwise show the session as it
  // was (a start not yet made), and close and reopen its terminal.
  let asked = 0;
  let shownAnswer = 0;
  const fresh = async (f: () => Promise<Session>) => {
    const mine = ++asked;
    const got = await f();
    if (mine > shownAnswer) {
      shownAnswer = mine;
      s = got;
      draw();
    }
  };

  const act: Act = async f => {
    out.replaceChildren();
    try {
      await fresh(f);
      // An action answers with the Session; its live limits come with a read.
      await fresh(() => api.get(cluster, ns, name));
    } catch (e) {
      out.replaceChildren(notice('error', errorText(e)));
    }
  };

  const tick = () => {
    if (phaseOf(s) === 'Active') timerLine.textContent = timersText(s);
  };

  const draw = () => {
    title.replaceChildren(`Session ${s.name} `, phaseBadge(s));
    means.textContent = phaseMeans(s);
    // What a running session offers (more time, its end) is redrawn on its
    // own (controlsKey), so that its terminal stays open.
    const key = [phaseOf(s), s.status.review?.by, s.status.evidence?.manifestSHA256, s.status.evidence?.logIndex,
      phaseOf(s) === 'Active' ? '' : (s.may ?? []).join()].join('|');
    if (key === shown) {
      if (extension && extensionKey(s) !== extensionShown) drawExtension();
      return tick();
    }
    shown = key;
    if (term) {
      term.close();
      term = null;
    }
    extension = null;
    body.replaceChildren(...phaseView().filter((x): x is HTMLElement => Boolean(x)));
    tick();
  };

  const drawExtension = () => {
    extensionShown = extensionKey(s);
    const next = controls();
    extension!.replaceWith(next);
    extension = next;
  };

  // said is how a session that will not run came to it.
  const said = (kind: 'info' | 'error') => {
    const n = notice(kind, outcome(s));
    n.id = 'outcome';
    return n;
  };

  const approval = () => h('p', { class: 'approval' }, s.status.approval ? approvalText(s.status.approval) : 'Never approved.');

  const phaseView = (): (HTMLElement | null)[] => {
    const mine = isRequester(me, s);
    switch (phaseOf(s)) {
      case 'Pending':
        if (may(s, 'approve')) return [approvalSection(), may(s, 'cancel') ? takeBack('cancel') : null];
        return [notice('info', mine ? 'Waiting for another person to approve your request.' : 'Waiting for an approver.'),
          may(s, 'withdraw') ? takeBack('withdraw') : null, may(s, 'cancel') ? takeBack('cancel') : null];
      case 'Approved':
        return [approval(),
          may(s, 'start') ? startButton() : notice('info', `Approved; waiting for ${s.spec.requester} to start it.`),
          may(s, 'withdraw') ? takeBack('withdraw') : null, may(s, 'cancel') ? takeBack('cancel') : null];
      case 'Active':
        return activeView();
      case 'Denied':
        return [said(mine ? 'error' : 'info'), reviewSection(s, act, focus, me)];
      case 'Expired':
        return [s.status.approval ? approval() : null, said('info'), reviewSection(s, act, focus, me)];
      case 'Ended':
        return [approval(), said('info'),
          s.status.startedAt ? evidenceSection(s) : h('p', { id: 'never-started' }, 'It never started: nothing ran, so there is no recording.'),
          reviewSection(s, act, focus, me)];
    }
    return [];
  };

  const startButton = () => h('button', { class: 'primary', id: 'start', onclick: async (e: Event) => {
    const b = e.currentTarget as HTMLButtonElement;
    b.disabled = true;
    out.replaceChildren(notice('info', 'Starting: granting, adding the debug container, attaching…'));
    await act(() => api.start(s));
    b.disabled = false;
  } }, offers.start.label);

  // takeBack ends a session that has not started: its requester withdraws
  // it, someone else cancels it. Nothing was granted yet.
  const takeBack = (id: 'withdraw' | 'cancel') => {
    const why = h('input', { type: 'text', id: id + '-reason', maxlength: 1024 });
    return h('form', { class: 'inline', onsubmit: (e: Event) => { e.preventDefault(); void act(() => api.end(s, why.value)); } },
      h('label', { for: id + '-reason' }, sessionFields.withdrawReason.label), why, h('button', { type: 'submit', id }, offers[id].label));
  };

  const activeView = (): (HTMLElement | null)[] => {
    const typing = may(s, 'type');
    if (!typing && !may(s, 'watch')) {
      extension = controls();
      extensionShown = extensionKey(s);
      return [timerLine, notice('info', 'The session is running; only its requester and approvers open its terminal.'), extension];
    }
    const watching = !typing;
    const status = h('p', { class: 'term-status', role: 'status' }, terminalStatusText('connecting', undefined, watching));
    const moveHere = h('button', { type: 'button', id: 'move-terminal', hidden: true, onclick: () => { moveHere.hidden = true; term?.take(); } }, 'Move the terminal here');
    const box = h('div', { class: 'terminal', 'aria-label': watching ? 'Session terminal (read-only)' : 'Session terminal' });
    void api.terminal(s).then(({ url }) => {
      if (phaseOf(s) !== 'Active' || !box.isConnected) return;
      term = openTerminal(box, url, { readOnly: watching, onStatus: (what: TerminalStatus, detail?: string) => {
        // Who is attached changed: show it now, not at the next read.
        if (what === 'connected') void fresh(() => api.get(cluster, ns, name)).catch(() => {});
        status.textContent = terminalStatusText(what, detail, watching);
        moveHere.hidden = what !== 'elsewhere' && what !== 'moved';
      } });
    });
    extension = controls();
    extensionShown = extensionKey(s);
    return [timerLine, watching ? h('p', { class: 'watching', id: 'watching' }, 'Watching (read-only): what you type is not sent') : null,
      status, moveHere, box, extension];
  };

  // controls are what a running session offers beside its terminal: more
  // time, and its end.
  const controls = () => h('div', { class: 'controls' }, extensionSection(me, s, act), may(s, 'end') ? endForm() : null);

  const endForm = () => {
    const reason = h('input', { type: 'text', id: 'end-reason', maxlength: 1024 });
    return h('form', { class: 'inline', onsubmit: (e: Event) => { e.preventDefault(); void act(() => api.end(s, reason.value)); } },
      h('label', { for: 'end-reason' }, sessionFields.endReason.label), reason, h('button', { type: 'submit', class: 'danger', id: 'end' }, offers.end.label));
  };

  const approvalSection = () => {
    const form = approvalForm(s);
    const keep = h('input', { type: 'checkbox', id: 'approve-keep', 'aria-describedby': 'approve-keep-help' });
    const proc = h('input', { type: 'checkbox', id: 'approve-process', 'aria-describedby': 'approve-process-help' });
    const comment = h('input', { type: 'text', id: 'approve-comment', maxlength: 1024 });
    const why = h('textarea', { id: 'deny-reason', rows: 2, maxlength: 1024, 'aria-describedby': 'deny-reason-help' });
    const section = h('section', { id: 'approve', class: 'decide', 'aria-labelledby': 'decide-title' },
      h('h2', { id: 'decide-title' }, form.title),
      h('p', {}, form.summary),
      form.processAccess ? h('div', { class: 'field check' }, proc, h('label', { for: 'approve-process' }, form.processAccess.label),
        h('p', { class: 'help', id: 'approve-process-help' }, form.processAccess.help)) : null,
      h('div', { class: 'field check' }, keep, h('label', { for: 'approve-keep' }, form.keepPod.label),
        h('p', { class: 'help', id: 'approve-keep-help' }, form.keepPod.help)),
      h('div', { class: 'field' }, h('label', { for: 'approve-comment' }, form.comment.label), comment),
      h('button', { class: 'primary', id: 'approve-button', onclick: () => act(() => api.approve(s,
        decisionOf({ processAccess: proc.checked, keepPod: keep.checked, comment: comment.value }))) }, offers.approve.label),
      h('div', { class: 'field' }, h('label', { for: 'deny-reason' }, form.denyReason.label), why, h('p', { class: 'help', id: 'deny-reason-help' }, form.denyReason.help)),
      h('button', { class: 'danger', id: 'deny-button', onclick: () => {
        if (!why.value.trim()) { out.replaceChildren(notice('error', form.denyNeedsReason)); why.focus(); return; }
        void act(() => api.deny(s, why.value));
      } }, offers.deny.label));
    if (focus === 'approve') setTimeout(() => section.scrollIntoView(), 0);
    return section;
  };

  draw();
  const reread = async () => {
    try {
      await fresh(() => api.get(cluster, ns, name));
    } catch (e) {
      out.replaceChildren(notice('error', errorText(e)));
    }
  };
  // The session's changes come as events; only a running one's timers and
  // terminals (the relay's count, not the Session's) are read every 2 s.
  const stopEvents = watchSessions(transport, e => { if (!e?.name || (e.cluster === cluster && e.namespace === ns && e.name === name)) void reread(); });
  const poll = setInterval(() => { if (phaseOf(s) === 'Active') void reread(); }, 2000);
  const clock = setInterval(tick, 1000);
  return () => {
    stopEvents();
    clearInterval(poll);
    clearInterval(clock);
    if (term) term.close();
  };
}
