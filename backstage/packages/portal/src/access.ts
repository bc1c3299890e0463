// What a person may do, as the relay says it: on a session, the offers in
// its view (`may`, from the relay's own rules, relay/api/may.go); elsewhere,
// the permissions /me lists. A portal shows these and nothing more; the
// relay checks every call again.
import type { Action, Me, Session } from './types';
import type { Offer } from './vocabulary.gen';

/** may says whether the relay offers o to the person on s now. */
export const may = (s: Session, o: Offer) => (s.may ?? []).includes(o);

/** isRequester: the relay's identity decides, as it does for "never your own". */
export const isRequester = (me: Me | undefined, s: Session) =>
  Boolean(me && (s.spec.requesterID ? s.spec.requesterID === me.id : s.spec.requester === me.name));

/** can says whether the person holds action in cluster's namespace ns. */
export function can(me: Me | undefined, action: Action, cluster: string, ns: string): boolean {
  const c = me?.clusters?.find(x => x.name === cluster);
  return Boolean(c?.allowed?.some(a => a.actions?.includes(action) && (a.namespaces?.includes('*') || a.namespaces?.includes(ns))));
}

/** mayAnywhere says whether the person holds one of actions anywhere: whether a page shows a queue or a link at all. */
export const mayAnywhere = (me: Me | undefined, ...actions: Action[]) =>
  Boolean(me?.clusters?.some(c => c.allowed?.some(a => actions.some(x => a.actions?.includes(x)))));

/** requestable are the clusters, and their namespaces ("*": any), where the person may ask for sessions or break the glass. */
export function requestable(me: Me | undefined): { cluster: string; tier?: string; namespaces: string[]; breakGlass: string[] }[] {
  const out = [];
  for (const c of me?.clusters ?? []) {
    const ask = new Set<string>();
    const glass = new Set<string>();
    for (const a of c.allowed ?? []) {
      for (const ns of a.namespaces ?? []) {
        if (a.actions?.includes('request') || a.actions?.includes('breakGlass')) ask.add(ns);
        if (a.actions?.includes('breakGlass')) glass.add(ns);
      }
    }
    if (ask.size) out.push({ cluster: c.name, tier: c.tier, namespaces: [...ask], breakGlass: [...glass] });
  }
  return out;
}

/** A review is due on s: someone must still say what they found. */
export const reviewDue = (s: Session) => Boolean(s.status.review && !s.status.review.by);

/** A due review whose time has passed: the fallback reviewer has been told. */
export const reviewOverdue = (s: Session, now = Date.now()) =>
  reviewDue(s) && Boolean(s.status.review?.dueAt && Date.parse(s.status.review.dueAt) < now);

/** The queues a person works, from the sessions the relay lists for them. */
export interface Queues {
  /** Requests this person may decide. */
  toDecide: Session[];
  /** Reviews this person may give, overdue first, then by when they fall due. */
  reviews: Session[];
  /** Running sessions of others this person may watch. */
  watchable: Session[];
  /** The person's own sessions. */
  mine: Session[];
}

export function queues(me: Me | undefined, sessions: Session[]): Queues {
  const due = (s: Session) => Date.parse(s.status.review?.dueAt ?? '') || Infinity;
  return {
    toDecide: sessions.filter(s => may(s, 'approve')),
    reviews: sessions.filter(s => may(s, 'review')).sort((a, b) => due(a) - due(b)),
    watchable: sessions.filter(s => may(s, 'watch')),
    mine: sessions.filter(s => isRequester(me, s)),
  };
}
