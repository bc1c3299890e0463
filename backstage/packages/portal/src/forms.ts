// The request form, the approval form and the other forms' fields, for
// both portals: what each field is called, what it says about itself, what
// is offered, and what a person must fill in before the relay is asked.
// Each portal lays them out with its own components.
import type { Decision, Me, Session, SessionRequest } from './types';
import { defaultDuration, durationChoices, extensionChoices, maxReason, modes, type Mode } from './vocabulary.gen';
import { minutes, modeLabel } from './words';

/** A field's label and the help under it. */
export interface Field {
  label: string;
  help: string;
}

/** The request form: its fields, as both portals show them. */
export const requestFields = {
  cluster: { label: 'Cluster', help: '' },
  namespace: { label: 'Namespace', help: 'Where the pod runs.' },
  pod: { label: 'Pod', help: 'The pod’s name, as kubectl get pods shows it.' },
  container: { label: 'App container', help: 'The container whose processes you need to see; required with process access.' },
  mode: { label: 'Mode', help: '' },
  duration: { label: 'Duration', help: '' },
  processAccess: {
    label: 'Ask for process access',
    help: 'Lets the debug container see the app container’s processes, their memory and their environment (which may hold secrets). The approver decides; the recording becomes sensitive.',
  },
  keepPod: {
    label: 'Ask to keep the pod afterwards',
    help: 'A pod someone debugged is deleted and replaced when the session ends. Keeping it is the approver’s choice.',
  },
  reason: { label: 'Reason', help: 'Why you need it: the approver and the audit log see this.' },
} satisfies Record<string, Field>;

/** The modes a request offers, in order, with what each does. */
export const modeChoices = (Object.keys(modes) as Mode[]).map(m => ({ value: m, label: modes[m].label, help: modes[m].means }));

/** The durations a request offers, in words, and the one it starts at. */
export const durationOptions = durationChoices.map(d => ({ value: d, label: minutes(d) }));
export { defaultDuration };

/** The durations an ask for more time offers. */
export const extensionOptions = extensionChoices.map(d => ({ value: d, label: minutes(d) }));

/** durationHelp says what ends a session, with this relay's limits. */
export const durationHelp = (me: Me | undefined) =>
  `The session ends at this hard stop whatever happens; also after ${Math.round((me?.idleSeconds ?? 600) / 60)} minutes without typing or ${Math.round((me?.disconnectSeconds ?? 120) / 60)} minutes with nobody watching.`;

/** Breaking the glass: the warning shown before, and what the person confirms. */
export const breakGlass = {
  button: 'Break the glass…',
  title: 'Break the glass?',
  warning:
    'Nobody approves it first: once you press Start on its page, it runs at once. Everyone is told straight away, every byte is recorded, and someone else must review the session afterwards: a review falls due, and an overdue one goes to the fallback reviewer.',
  understood: 'I understand: this is an emergency and I will be asked why.',
  confirm: 'Break the glass now',
  notConfirmed: 'Tick the box to confirm you understand what breaking the glass does.',
  tag: 'Glass broken: approved without an approver, reviewed afterwards',
};

/** The request a form's values make: blanks left out, the reason as typed. */
export function requestOf(v: {
  pod: string;
  container?: string;
  mode: Mode;
  duration: string;
  processAccess?: boolean;
  keepPod?: boolean;
  reason: string;
  glassBroken?: boolean;
}): SessionRequest {
  return {
    pod: v.pod.trim(),
    container: v.container?.trim() || undefined,
    mode: v.mode,
    duration: v.duration,
    processAccess: v.processAccess || undefined,
    keepPod: v.keepPod || undefined,
    reason: v.reason,
    glassBroken: v.glassBroken || undefined,
  };
}

/** What is wrong with a request before the relay is asked (it checks again): each problem, by field. */
export function requestProblems(r: SessionRequest): Partial<Record<keyof SessionRequest, string>> {
  const out: Partial<Record<keyof SessionRequest, string>> = {};
  if (!r.pod) out.pod = 'Name the pod.';
  if (r.processAccess && !r.container) out.container = 'Process access needs the app container whose processes you need to see.';
  if (!r.reason.trim()) out.reason = 'Say why you need it.';
  else if (r.reason.length > maxReason) out.reason = `At most ${maxReason} characters.`;
  return out;
}

/** The approval form: what approving does, and what the approver chooses. */
export function approvalForm(s: Session) {
  const where = s.spec.mode === 'live' ? 'to the running pod' : 'to a copy of the pod';
  return {
    title: `${s.spec.requester} asks for a ${modeLabel(s.spec.mode).toLowerCase()} session`,
    summary: `Approving lets the relay, for ${minutes(s.spec.duration)}, add a signed, read-only, non-root debug container ${where} ${s.namespace}/${s.spec.targetPod} on ${s.cluster}, and give ${s.spec.requester} its recorded terminal. You may watch it.`,
    // Process access is offered only where it was asked for, and granted only when ticked.
    processAccess: s.spec.processAccess
      ? {
          label: `Grant process access to ${s.spec.targetContainer}`,
          help: 'Asked for. The debug container then sees the app’s processes, their memory and environment; the recording becomes sensitive. Leave unticked to approve without it.',
        }
      : undefined,
    keepPod: {
      label: 'Keep the pod afterwards',
      help: `${s.spec.keepPod ? 'Asked for. ' : ''}Otherwise the pod is deleted and replaced when the session ends.${s.spec.mode === 'live' ? '' : ' (A copy is always deleted.)'}`,
    },
    comment: { label: 'Comment (optional)', help: '' },
    denyReason: { label: 'Reason to deny', help: 'The requester reads it.' },
    denyNeedsReason: 'Say why you deny it: the requester sees the reason.',
  };
}

/** The decision an approver's choices make: process access only when ticked, whatever the page thought was asked. */
export const decisionOf = (c: { processAccess: boolean; keepPod: boolean; comment: string }): Decision => ({
  keepPod: c.keepPod,
  withoutProcessAccess: !c.processAccess,
  comment: c.comment.trim() || undefined,
});

/** The fields of the other forms on a session's page. */
export const sessionFields = {
  endReason: { label: 'Why end it (optional)', help: '' },
  withdrawReason: { label: 'Why (optional)', help: '' },
  review: { label: 'What you found', help: 'The review is kept with the session and in the audit log.' },
  extendDuration: { label: 'More time', help: '' },
  extendReason: { label: 'Why', help: '' },
  extendComment: { label: 'Comment or reason (optional)', help: '' },
} satisfies Record<string, Field>;
