import { useEffect, useState } from 'react';
import { useParams, useSearchParams } from 'react-router-dom';
import { Content, InfoCard, Progress, WarningPanel } from '@backstage/core-components';
import { useApi } from '@backstage/frontend-plugin-api';
import Button from '@material-ui/core/Button';
import TextField from '@material-ui/core/TextField';
import Typography from '@material-ui/core/Typography';
import {
  approvalText, breakGlass, finalPhases, isRequester, maxReason, minutes, modeLabel, offers, outcome, phaseMeans, phaseOf, reviewDue, reviewOverdue,
  sessionFields, timersText, when, type Session,
} from '@tower-dev/breakglass-portal';
import { breakglassApiRef } from '../api';
import { Decide, EndForm, TakeBack } from './Decide';
import { Extension } from './Extension';
import { ErrorNote, Facts, PhaseChip } from './common';
import { useMe, useNow, useOffers, useSession } from './hooks';
import { Recording } from './Recording';
import { Terminal } from './Terminal';

const yes = (b?: boolean) => (b ? 'yes' : 'no');

/**
 * One session, as the console's page of it: what was asked, what happens
 * next and who may do it (the relay's offers that Backstage's permissions
 * allow too), the decision (?view=approve, where a notification links),
 * the terminal and its limits while it runs, and the outcome, recording
 * and review after. Kept current by the relay's event stream.
 */
export function SessionPage() {
  const { cluster = '', namespace = '', name = '', view: linked } = useParams();
  const [params] = useSearchParams();
  const api = useApi(breakglassApiRef);
  const { me } = useMe();
  const { session: s, error, act, reload } = useSession(cluster, namespace, name);
  const offer = useOffers(me, s);
  const [problem, setProblem] = useState<string>();
  useNow();
  const view = params.get('view') ?? linked;
  useEffect(() => {
    if (s && view) document.getElementById(view === 'review' ? 'review' : 'approve')?.scrollIntoView();
  }, [s?.name, view]); // eslint-disable-line react-hooks/exhaustive-deps
  if (!s) return error ? <Content><ErrorNote error={error} /></Content> : <Progress />;
  const phase = phaseOf(s);
  const doing = (f: () => Promise<Session>) => {
    setProblem(undefined);
    return act(f);
  };
  return (
    <Content>
      <Typography variant="h4" component="h2" id="session-title">
        Session {s.name} <PhaseChip s={s} />
      </Typography>
      <Typography variant="body2" id="phase-means">{phaseMeans(s)}</Typography>
      {s.spec.glassBroken && <Typography id="glass-broken" className="tag glass"><strong>{breakGlass.tag}</strong></Typography>}
      <Facts
        rows={[
          ['Cluster', s.cluster], ['Namespace', s.namespace], ['Pod', s.spec.targetPod],
          ['App container', s.spec.targetContainer || '—'], ['Mode', modeLabel(s.spec.mode)],
          ['Process access asked', yes(s.spec.processAccess)], ['Keep the pod asked', yes(s.spec.keepPod)],
          ['Duration', minutes(s.spec.duration)], ['Requester', s.spec.requester + (isRequester(me, s) ? ' (you)' : '')], ['Reason', s.spec.reason],
        ]}
      />
      <div aria-live="polite" className="out">
        <ErrorNote error={error} />
        {problem && <Typography role="alert" className="notice error">{problem}</Typography>}
      </div>
      {phase === 'Pending' && (
        <InfoCard title="Decision">
          {offer('approve') || offer('deny') ? (
            <Decide s={s} act={doing} offer={offer} onProblem={setProblem} />
          ) : (
            <Typography role="status" className="notice">
              {isRequester(me, s) ? 'Waiting for another person to approve your request.' : 'Waiting for an approver.'}
            </Typography>
          )}
          {offer('withdraw') && <TakeBack s={s} act={doing} kind="withdraw" />}
          {offer('cancel') && <TakeBack s={s} act={doing} kind="cancel" />}
        </InfoCard>
      )}
      {phase === 'Approved' && (
        <InfoCard title="Approved">
          {s.status.approval && <Typography className="approval">{approvalText(s.status.approval)}</Typography>}
          {offer('start') ? (
            <StartButton onStart={() => doing(() => api.start(s))} />
          ) : (
            <Typography role="status" className="notice">Approved; waiting for {s.spec.requester} to start it.</Typography>
          )}
          {offer('withdraw') && <TakeBack s={s} act={doing} kind="withdraw" />}
          {offer('cancel') && <TakeBack s={s} act={doing} kind="cancel" />}
        </InfoCard>
      )}
      {phase === 'Active' && (
        <InfoCard title="Terminal">
          <Typography className="timers" id="timers" style={{ fontWeight: 600, fontVariantNumeric: 'tabular-nums' }}>{timersText(s)}</Typography>
          {offer('type') || offer('watch') ? (
            <Terminal session={s} readOnly={!offer('type')} onConnected={() => void reload()} />
          ) : (
            <Typography className="notice">The session is running; only its requester and approvers open its terminal.</Typography>
          )}
          <Extension me={me} s={s} act={doing} offer={offer} />
          {offer('end') && <EndForm s={s} act={doing} />}
        </InfoCard>
      )}
      {finalPhases.includes(phase) && (
        <InfoCard title="Outcome">
          {s.status.approval && <Typography className="approval">{approvalText(s.status.approval)}</Typography>}
          {phase === 'Ended' && !s.status.approval && <Typography className="approval">Never approved.</Typography>}
          <Typography role="status" className="notice" id="outcome">{outcome(s)}</Typography>
          {phase === 'Ended' && !s.status.startedAt && <Typography id="never-started">It never started: nothing ran, so there is no recording.</Typography>}
        </InfoCard>
      )}
      {phase === 'Ended' && s.status.startedAt && (
        <InfoCard title="Recording">
          <Recording session={s} mayPlay={offer('play')} />
        </InfoCard>
      )}
      {s.status.review && <Review s={s} act={doing} mayReview={offer('review')} mine={isRequester(me, s)} />}
    </Content>
  );
}

function StartButton({ onStart }: { onStart: () => Promise<void> }) {
  const [busy, setBusy] = useState(false);
  return (
    <>
      <Button id="start" variant="contained" color="primary" disabled={busy}
        onClick={async () => { setBusy(true); await onStart(); setBusy(false); }}>
        {offers.start.label}
      </Button>
      {busy && <Typography role="status">Starting: granting, adding the debug container, attaching…</Typography>}
    </>
  );
}

/** A session's review: due (and when), done, or the form for someone the relay and Backstage let review it. */
function Review({ s, act, mayReview, mine }: { s: Session; act: (f: () => Promise<Session>) => Promise<void>; mayReview: boolean; mine: boolean }) {
  const api = useApi(breakglassApiRef);
  const [comment, setComment] = useState('');
  const r = s.status.review!;
  return (
    <InfoCard title="Review">
      <section id="review" aria-label="Review">
        {r.by ? (
          <Typography id="reviewed">Reviewed by {r.by}: “{r.comment}”</Typography>
        ) : (
          <>
            {reviewDue(s) && r.dueAt && (
              reviewOverdue(s)
                ? <WarningPanel severity="error" title={`A review is due by ${when(r.dueAt)}: overdue.`} />
                : <Typography role="status" className="notice">A review is due by {when(r.dueAt)}.</Typography>
            )}
            {mayReview && (
              <form onSubmit={e => { e.preventDefault(); void act(() => api.review(s, comment)); }}>
                <TextField id="review-comment" label={sessionFields.review.label} helperText={sessionFields.review.help} value={comment}
                  onChange={e => setComment(e.target.value)} multiline minRows={3} required fullWidth inputProps={{ maxLength: maxReason }} />
                <Button id="review-button" type="submit" variant="contained" color="primary" style={{ marginTop: 8 }}>{offers.review.label}</Button>
              </form>
            )}
            {!mayReview && mine && <Typography>You asked for this session: someone else reviews it.</Typography>}
          </>
        )}
      </section>
    </InfoCard>
  );
}
