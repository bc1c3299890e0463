// An ended session's evidence as a person checks it in the browser: the
// manifest is the one its Session records (and, where a log took it, the
// one the transparency log holds), and the recording is the one the
// manifest names. Both portals show these facts and checks alike.
import type { PortalClient } from './client';
import type { Session } from './types';

/** sha256 is the SHA-256 of bytes, in hex, computed in the browser. */
export async function sha256(bytes: Uint8Array | ArrayBuffer): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource));
  return Array.from(d, b => b.toString(16).padStart(2, '0')).join('');
}

/** Whether the session's manifest hash is in a transparency log, waiting to be, or in none. */
export function anchoring(s: Session): 'anchored' | 'pending' | 'none' {
  const ev = s.status.evidence;
  if (ev?.logIndex !== undefined && ev?.logIndex !== null) return 'anchored';
  return ev?.anchorPending ? 'pending' : 'none';
}

/** The evidence's facts, as label and value rows. */
export function evidenceFacts(s: Session): { id: string; label: string; value: string }[] {
  const ev = s.status.evidence ?? {};
  const anchored = anchoring(s);
  return [
    {
      id: 'manifest-sha256',
      label: { anchored: 'Manifest SHA-256 (anchored in the log)', pending: 'Manifest SHA-256 (to be anchored)', none: 'Manifest SHA-256 (as the Session records it)' }[anchored],
      value: ev.manifestSHA256 || '—',
    },
    {
      id: 'rekor-entry',
      label: 'Transparency log',
      value: {
        anchored: `entry ${ev.entryID || '?'} at index ${ev.logIndex}`,
        pending: 'pending: the log has not taken it yet',
        none: 'not anchored (no transparency log configured)',
      }[anchored],
    },
  ];
}

/** One check a person's browser made of the evidence. */
export interface Check {
  ok: boolean;
  text: string;
}

/**
 * checkEvidence reads the manifest and the recording, checks each hash in
 * the browser, and answers the checks and the recording's text (for the
 * player). A read the relay refuses throws its refusal.
 */
export async function checkEvidence(api: PortalClient, s: Session): Promise<{ checks: Check[]; cast: string; castSHA256: string }> {
  const want = s.status.evidence?.manifestSHA256 ?? '';
  const where = anchoring(s) === 'anchored' ? 'the one the transparency log holds' : 'the one the Session records';
  const manifest = await api.recording(s, 'manifest');
  const mSum = await sha256(manifest);
  const checks: Check[] = [
    { ok: mSum === want, text: mSum === want ? `The manifest’s SHA-256, computed in your browser, is ${where}.` : `The manifest’s SHA-256 is ${mSum}, not ${want}, ${where}.` },
  ];
  let named = '';
  try {
    named = JSON.parse(new TextDecoder().decode(manifest)).files?.['recording.cast']?.sha256 ?? '';
  } catch {
    // A manifest that is not JSON names nothing: the check below fails.
  }
  const cast = await api.recording(s, 'cast');
  const cSum = await sha256(cast);
  checks.push({ ok: cSum === named, text: cSum === named ? 'The recording’s SHA-256 is the one the manifest names.' : `The recording’s SHA-256 is ${cSum}, not the manifest’s ${named || '(none)'}.` });
  return { checks, cast: new TextDecoder().decode(cast), castSHA256: cSum };
}

/**
 * verifyCommands are the commands that check this recording without any
 * portal, for what the relay did with it: an anchored recording was
 * signed by the relay and is checked against its key and the log's; one
 * that was not carries no signature, and only its files and its Session
 * can be checked.
 */
export function verifyCommands(s: Session): { intro: string; commands: string } {
  const ev = s.status.evidence ?? {};
  const exported = `kubectl get session ${s.name} -n ${s.namespace} -o yaml > session.yaml`;
  if (ev.entryID || ev.anchorPending) {
    return {
      intro: `Download the three files into DIR with the bundle from the evidence store${ev.anchorPending ? ' (once the log has taken the entry)' : ''}; take the relay’s public key (GET /api/v1/signing-key) and the log’s from sources you trust:`,
      commands: `${exported}\nkubectl breakglass recording verify DIR --session session.yaml --key relay.pub --rekor-public-key rekor.pub --online`,
    };
  }
  return {
    intro: 'This relay anchors nothing in a transparency log, so the recording carries no signature: the check proves its files whole and its Session’s, not who made it. Download the three files into DIR:',
    commands: `${exported}\nkubectl breakglass recording verify DIR --session session.yaml --integrity-only`,
  };
}

/** Why a person may not play s's recording, from its facts (the relay refuses it anyway). */
export function withheld(s: Session): string {
  return s.status.approval?.processAccess
    ? 'This recording is sensitive: you may not view sensitive recordings here, so it is neither played nor offered for download.'
    : 'Only the requester, approvers and reviewers play this recording.';
}
