import { useCallback, useEffect, useState } from 'react';
import { useParams, useSearchParams } from 'react-router-dom';
import { useApi } from '@backstage/frontend-plugin-api';
import { Content, InfoCard, Progress } from '@backstage/core-components';
import { breakglassApiRef, Me, Session } from '../api';
import { Countdown, mine } from './common';
import { Recording } from './Recording';
import { Terminal } from './Terminal';

/**
 * One session: what was asked, the decision (?view=approve, where a
 * notification links), the terminal while it runs, and the recording and
 * review after.
 */
export function SessionPage() {
  const { cluster = '', namespace = '', name = '' } = useParams();
  const [params] = useSearchParams();
  const api = useApi(breakglassApiRef);
  const [me, setMe] = useState<Me>();
  const [s, setS] = useState<Session>();
  const [error, setError] = useState<string>();
  const [note, setNote] = useState('');

  const load = useCallback(
    () => api.get(cluster, namespace, name).then(setS, e => setError(e.message)),
    [api, cluster, namespace, name],
  );
  useEffect(() => {
    api.me().then(setMe, e => setError(e.message));
    load();
  }, [api, load]);
  // Poll while something is still to happen; an ended session stays put.
  useEffect(() => {
    if (s?.status.phase === 'Ended' || s?.status.phase === 'Denied') return undefined;
    const t = setInterval(load, 3000);
    return () => clearInterval(t);
  }, [s?.status.phase, load]);

  const act = (f: () => Promise<Session>) => () => {
    setError(undefined);
    f().then(setS, e => setError(e.message));
  };
  if (!s) return error ? <Content><p role="alert">{error}</p></Content> : <Progress />;
  const own = mine(me, s);
  const phase = s.status.phase ?? 'Pending';
  return (
    <Content>
      <InfoCard title={`Session ${s.name}: ${phase}${s.spec.glassBroken ? ' (glass broken)' : ''}`}>
        <dl>
          <dt>Pod</dt>
          <dd>{s.cluster}/{s.namespace}/{s.spec.targetPod} ({s.spec.mode}{s.spec.processAccess ? ', with process access' : ''})</dd>
          <dt>Asked by</dt>
          <dd>{s.spec.requester}{own ? ' (you)' : ''}</dd>
          <dt>Reason</dt>
          <dd>{s.spec.reason}</dd>
          <dt>Duration</dt>
          <dd>{s.spec.duration}</dd>
          {s.status.approval && (<><dt>Approved by</dt><dd>{s.status.approval.by}</dd></>)}
          {s.status.denial && (<><dt>Denied by</dt><dd>{s.status.denial.by}: {s.status.denial.reason}</dd></>)}
          {s.status.end && (<><dt>Ended</dt><dd>by {s.status.end.by} ({s.status.end.reason}){s.status.end.note ? `: ${s.status.end.note}` : ''}{s.status.end.detail ? ` (${s.status.end.detail})` : ''}</dd></>)}
        </dl>
        {phase === 'Active' && s.status.grant && (
          <p>
            <Countdown at={s.status.grant.expiresAt} label="Hard stop in" />
            {s.live && <>{' · '}<Countdown at={s.live.idleEndsAt} label="Idle limit in" /></>}
            {s.live?.aloneEndsAt && <>{' · '}<Countdown at={s.live.aloneEndsAt} label="Nobody attached: ends in" /></>}
          </p>
        )}
        {s.live && s.live.attached.length > 0 && (
          <p>Attached: {s.live.attached.map(a => `${a.name}${a.typing ? ' (typing)' : ' (watching)'}`).join(', ')}</p>
        )}
        {error && <p role="alert">{error}</p>}
        {phase === 'Pending' && !own && (
          <div aria-label="Decide" data-view={params.get('view') ?? ''}>
            <button onClick={act(() => api.approve(s))}>Approve</button>{' '}
            <label htmlFor="bg-deny">Reason to deny</label>{' '}
            <input id="bg-deny" value={note} onChange={e => setNote(e.target.value)} />{' '}
            <button onClick={act(() => api.deny(s, note))} disabled={!note}>Deny</button>
          </div>
        )}
        {phase === 'Approved' && own && <button onClick={act(() => api.start(s))}>Start</button>}
        {(phase === 'Pending' || phase === 'Approved' || phase === 'Active') && (
          <button onClick={act(() => api.end(s))}>{phase === 'Active' ? 'End the session' : own ? 'Withdraw' : 'Cancel'}</button>
        )}
      </InfoCard>
      {phase === 'Active' && (
        <InfoCard title="Terminal">
          <Terminal session={s} readOnly={!own} />
        </InfoCard>
      )}
      {phase === 'Ended' && s.status.evidence?.manifestSHA256 && (
        <InfoCard title="Recording">
          <Recording session={s} />
        </InfoCard>
      )}
      {phase === 'Ended' && !own && s.status.review && !s.status.review.by && (
        <InfoCard title="Review">
          <label htmlFor="bg-review">What you found</label>
          <br />
          <textarea id="bg-review" rows={3} cols={60} value={note} onChange={e => setNote(e.target.value)} />
          <br />
          <button onClick={act(() => api.review(s, note))} disabled={!note}>Review</button>
        </InfoCard>
      )}
      {s.status.review?.by && (
        <InfoCard title="Reviewed">
          <p>by {s.status.review.by}: {s.status.review.comment}</p>
        </InfoCard>
      )}
    </Content>
  );
}
