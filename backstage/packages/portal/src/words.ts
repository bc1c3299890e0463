// The words a person reads about a session, for both portals: built from
// the generated vocabulary (vocabulary.gen.ts, from the Go side) and the
// session's own fields, never spelled again in a view.
import type { Approval, Session } from './types';
import { endReasons, modes, phases, type Phase } from './vocabulary.gen';

/** minutes says a Go duration ("30m", "1h15m0s") in words: "75 minutes". Anything else, or less than a minute, is as it came. */
export function minutes(d: string | undefined): string {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(d ?? '');
  if (!d || !m || !(m[1] || m[2] || m[3])) return d ?? '';
  const total = Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0) + Math.round(Number(m[3] ?? 0) / 60);
  if (total === 0) return d;
  return `${total} minute${total === 1 ? '' : 's'}`;
}

/**
 * humanize rewrites the Go durations of a minute or more that a relay's
 * message may hold ("a session lasts from 15m0s to 1h15m0s") as people
 * say them ("from 15 minutes to 75 minutes").
 */
export function humanize(message: string): string {
  return message.replace(/\b\d+h(?:\d+m)?(?:\d+s)?\b|\b\d+m(?:\d+s)?\b/g, minutes);
}

/** countdown says how long until iso, as "12m 05s", or "now". */
export function countdown(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return 'now';
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/** age says how long ago iso was: "5m ago". */
export function age(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** when says a time as the person's locale does. */
export const when = (iso: string | undefined) => (iso ? new Date(iso).toLocaleString() : '');

/** The session's phase, as its badge shows it ("Pending" before the relay wrote one). */
export const phaseOf = (s: Session): Phase => (s.status.phase ?? 'Pending') as Phase;

/**
 * The phase badge's colours (text on background, at least 4.5:1): waiting
 * phases amber, a running one green, a denial red, the rest grey.
 */
export const phaseColours: Record<Phase, { color: string; background: string }> = {
  Pending: { color: '#5c4400', background: '#fff0c2' },
  Approved: { color: '#5c4400', background: '#fff0c2' },
  Active: { color: '#0f5323', background: '#d3f0dc' },
  Denied: { color: '#7a1114', background: '#fbdcdc' },
  Ended: { color: '#1b1f24', background: '#e7ecf0' },
  Expired: { color: '#1b1f24', background: '#e7ecf0' },
};

/** What the phase means to the people of the session. */
export const phaseMeans = (s: Session) => phases[phaseOf(s)].means;

/** The mode's label ("Held copy"). */
export const modeLabel = (mode: string) => (modes as Record<string, { label: string }>)[mode]?.label ?? mode;

const yes = (b: boolean | undefined) => (b ? 'yes' : 'no');

/** approvalText says who approved what: "Approved by bob: mode live, process access no, keep the pod yes (“take it”)". */
export function approvalText(a: Approval): string {
  // approval.kind says what approved it; by is only words to show.
  const who = (a.kind ?? 'Person') === 'Person' ? `Approved by ${a.by}` : a.by.charAt(0).toUpperCase() + a.by.slice(1);
  return `${who}: mode ${modeLabel(a.mode)}, process access ${yes(a.processAccess)}, keep the pod ${yes(a.keepPod)}${a.comment ? ` (“${a.comment}”)` : ''}`;
}

/** granted is what an approver allowed, which may be less than was asked: "live + processes, pod kept". */
export function granted(s: Session): string {
  const a = s.status.approval;
  if (!a) return modeLabel(s.spec.mode);
  return modeLabel(a.mode) + (a.processAccess ? ' + processes' : '') + (a.keepPod ? ', pod kept' : '');
}

/**
 * outcome says how a session that will not run (again) came to it, for
 * its page: denied (by whom, why), withdrawn or cancelled before it
 * started, ended (by whom, why, with the person's words), or expired
 * (which wait ran out). Empty while it may still run.
 */
export function outcome(s: Session): string {
  const st = s.status;
  const quoted = (t?: string) => (t ? `: “${t}”` : '');
  switch (phaseOf(s)) {
    case 'Denied':
      return `Denied by ${st.denial?.by ?? 'an approver'}${st.denial?.reason ? `: ${st.denial.reason}` : ': no reason given'}.`;
    case 'Expired':
      return st.approval
        ? `Expired: approved, but never started before the approval ran out. Nothing ran.`
        : `Expired: nobody approved or denied the request in time. Nothing ran.`;
    case 'Ended': {
      const e = st.end;
      if (!e) return 'Ended.';
      if (!st.startedAt) {
        const verb = e.reason === 'user' ? 'Withdrawn' : 'Cancelled';
        return `${verb} by ${e.by} before it started${quoted(e.note)}. Nothing ran.`;
      }
      const why = (endReasons as Record<string, { label: string }>)[e.reason]?.label ?? e.reason;
      return `Ended by ${e.by}, ${why}${e.abnormal ? ', abnormally' : ''}${quoted(e.note)}${e.detail ? ` (${e.detail})` : ''}.`;
    }
  }
  return '';
}

/** A timer a running session's page counts down: the hard stop, the idle limit, the disconnect limit. */
export interface Timer {
  id: 'hard-stop' | 'idle' | 'disconnect';
  label: string;
  at: string;
}

/**
 * timers are a running session's limits: its hard stop (the Session's
 * deadline, where it ends whatever happens; not the grant's expiry, which
 * is later by the sweeper's grace), and, where the answering relay holds
 * it, its idle and disconnect limits.
 */
export function timers(s: Session): Timer[] {
  if (phaseOf(s) !== 'Active') return [];
  const out: Timer[] = [];
  if (s.status.deadline) out.push({ id: 'hard-stop', label: 'Hard stop in', at: s.status.deadline });
  if (s.live?.idleEndsAt) out.push({ id: 'idle', label: 'idle limit in', at: s.live.idleEndsAt });
  if (s.live?.aloneEndsAt) out.push({ id: 'disconnect', label: 'no terminal open: the disconnect limit ends it in', at: s.live.aloneEndsAt });
  return out;
}

/** presence says who has a running session's terminal open, and whether its input is moderated. */
export function presence(s: Session): string[] {
  const l = s.live;
  if (!l) return [];
  const parts: string[] = [];
  if (l.moderated) parts.push(l.inputHeld ? 'moderated: input held until an approver watches' : 'moderated: an approver is watching');
  if (!l.aloneEndsAt) {
    const people = (l.attached ?? []).map(a => `${a.name} ${a.typing ? 'typing' : 'watching'}`);
    parts.push(`terminal open: ${people.join(', ') || `${l.viewers} viewer(s)`}`);
  }
  return parts;
}

/**
 * timersText is the whole line a running session's page shows, at now:
 * the hard stop, then moderation, then the other limits, then who has the
 * terminal open.
 */
export function timersText(s: Session, now = Date.now()): string {
  const say = (t: Timer) => `${t.label} ${countdown(t.at, now)}`;
  const ts = timers(s);
  const who = presence(s);
  return [
    ...ts.filter(t => t.id === 'hard-stop').map(say),
    ...who.filter(p => p.startsWith('moderated')),
    ...ts.filter(t => t.id !== 'hard-stop').map(say),
    ...who.filter(p => !p.startsWith('moderated')),
  ].join(' · ');
}

/** What a terminal says of its connection, and whether the person can act on it (move it here). */
export type TerminalStatus = 'connecting' | 'connected' | 'reconnecting' | 'lost' | 'closed' | 'error' | 'held' | 'moderated' | 'elsewhere' | 'moved';

/** terminalStatusText is the terminal's status line, for a typing or a watching person. */
export function terminalStatusText(status: TerminalStatus, detail: string | undefined, watching: boolean): string {
  switch (status) {
    case 'connecting':
      return 'Connecting…';
    case 'connected':
      return watching ? 'Connected: watching' : 'Connected';
    case 'reconnecting':
      return 'Connection lost: reconnecting…';
    case 'lost':
      return 'Connection lost. Reload the page to try again.';
    case 'closed':
      return `The terminal closed${detail ? `: ${detail}` : '.'}`;
    case 'error':
      return `The relay said: ${detail ?? ''}`;
    case 'held':
      return `Input held: ${detail ?? ''}`;
    case 'moderated':
      return `Connected, moderated: ${detail ?? ''}`;
    case 'elsewhere':
      return 'Your terminal is open in another tab or window: what you type goes there. Move it here to type in this one.';
    case 'moved':
      return 'Your terminal moved to another tab or window. Move it back here to type in this one.';
  }
  return status;
}
