import { useEffect, useState } from 'react';
import { useApi, useRouteRef } from '@backstage/frontend-plugin-api';
import { Link } from '@backstage/core-components';
import { breakglassApiRef, Me, Session } from '../api';
import { rootRouteRef } from '../plugin';

/** The person as the relay knows them, and the sessions they may see, kept fresh. */
export function useSessions(every = 5000) {
  const api = useApi(breakglassApiRef);
  const [me, setMe] = useState<Me>();
  const [sessions, setSessions] = useState<Session[]>([]);
  const [error, setError] = useState<Error>();
  useEffect(() => {
    let live = true;
    const load = () =>
      Promise.all([api.me(), api.list()]).then(
        ([m, s]) => live && (setMe(m), setSessions(s), setError(undefined)),
        e => live && setError(e),
      );
    load();
    const t = setInterval(load, every);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [api, every]);
  return { me, sessions, error };
}

/** overdue: a review that fell due unreviewed (the fallback reviewer is told). */
export const overdue = (s: Session) =>
  Boolean(s.status.review?.dueAt && !s.status.review.by && Date.parse(s.status.review.dueAt) < Date.now());

/** mine: the relay's identity decides, as it does for "never your own". */
export const mine = (me: Me | undefined, s: Session) => Boolean(me && s.spec.requesterID === me.id);

export function SessionLink({ s }: { s: Session }) {
  const root = useRouteRef(rootRouteRef);
  const path = [s.cluster, s.namespace, s.name].map(encodeURIComponent).join('/');
  return <Link to={`${root?.() ?? '/break-glass'}/sessions/${path}`}>{s.name}</Link>;
}

export function SessionTable({ sessions, empty }: { sessions: Session[]; empty: string }) {
  if (sessions.length === 0) return <p>{empty}</p>;
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Session</th>
          <th scope="col">Pod</th>
          <th scope="col">Requester</th>
          <th scope="col">Phase</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        {sessions.map(s => (
          <tr key={`${s.cluster}/${s.namespace}/${s.name}`}>
            <td><SessionLink s={s} /></td>
            <td>{s.cluster}/{s.namespace}/{s.spec.targetPod}</td>
            <td>{s.spec.requester}</td>
            <td>
              {s.status.phase ?? 'Pending'}
              {s.spec.glassBroken ? ' (glass broken)' : ''}
              {overdue(s) ? ', review overdue' : ''}
            </td>
            <td>{s.spec.reason}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A countdown to at, in minutes and seconds. */
export function Countdown({ at, label }: { at: string; label: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const left = Math.max(0, Math.round((Date.parse(at) - now) / 1000));
  return (
    <span>
      {label}: {Math.floor(left / 60)}m {String(left % 60).padStart(2, '0')}s
    </span>
  );
}
