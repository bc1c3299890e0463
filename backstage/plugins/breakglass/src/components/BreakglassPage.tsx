import { Route, Routes } from 'react-router-dom';
import { Content, InfoCard, Link, Progress } from '@backstage/core-components';
import Typography from '@material-ui/core/Typography';
import { granted, mayAnywhere, phaseOf, queues, age, type Session } from '@tower-dev/breakglass-portal';
import { useOffers, useSessions } from './hooks';
import { ErrorNote, SessionTable, useSessionHref } from './common';
import { SessionPage } from './SessionPage';

/** The plugin's page: the queues, the recordings, and each session's page below it. */
export function BreakglassPage() {
  return (
    <Routes>
      <Route path="/" element={<Queues />} />
      <Route path="/recordings" element={<Recordings />} />
      <Route path="/sessions/:cluster/:namespace/:name" element={<SessionPage />} />
      {/* The relay's notifications link to /sessions/.../approve and .../review. */}
      <Route path="/sessions/:cluster/:namespace/:name/:view" element={<SessionPage />} />
    </Routes>
  );
}

// The queues this person works, as the console shows them: requests to
// decide, reviews due (overdue first), others' running sessions to watch,
// their own. Kept current by the relay's event stream.
function Queues() {
  const { me, sessions, error } = useSessions();
  if (!sessions) return error ? <Content><ErrorNote error={error} /></Content> : <Progress />;
  const q = queues(me, sessions);
  return (
    <Content>
      <ErrorNote error={error} />
      <Typography variant="h4" component="h1" gutterBottom>Sessions</Typography>
      <Typography paragraph><Link underline="always" to="recordings">Recordings</Link> of every session that ran.</Typography>
      {mayAnywhere(me, 'approve') && (
        <InfoCard title={<span className="queue-title">Waiting for your decision</span>}>
          <SessionTable sessions={q.toDecide} view="approve" empty="No request waits for you." />
        </InfoCard>
      )}
      {mayAnywhere(me, 'review') && (
        <InfoCard title={<span className="queue-title">Reviews due</span>}>
          <SessionTable sessions={q.reviews} view="review" due empty="No review is due." />
        </InfoCard>
      )}
      {mayAnywhere(me, 'approve') && (
        <InfoCard title={<span className="queue-title">Active sessions you may watch</span>}>
          <SessionTable sessions={q.watchable} empty="Nobody else is in a session you may watch." />
        </InfoCard>
      )}
      {(mayAnywhere(me, 'request', 'breakGlass') || q.mine.length > 0) && (
        <InfoCard title={<span className="queue-title">Your sessions</span>}>
          <SessionTable sessions={q.mine} empty="You have not asked for a session." />
        </InfoCard>
      )}
    </Content>
  );
}

function Recordings() {
  const { me, sessions, error } = useSessions();
  if (!sessions) return error ? <Content><ErrorNote error={error} /></Content> : <Progress />;
  const ended = sessions.filter(s => phaseOf(s) === 'Ended' && s.status.startedAt);
  return (
    <Content>
      <ErrorNote error={error} />
      <Typography variant="h4" component="h1" gutterBottom>Recordings</Typography>
      <Typography paragraph>
        Every session that ran was recorded byte for byte. Recordings of sessions with process access are sensitive: only people
        allowed to view sensitive recordings play them.
      </Typography>
      <InfoCard title={<span className="queue-title">Ended sessions</span>}>
        {ended.length === 0 ? <Typography className="empty">No session has ended yet.</Typography> : (
          <table>
            <thead>
              <tr>{['Session', 'Where', 'Granted', 'Requester', 'Reason', 'Ended', 'Recording'].map(c => <th key={c} scope="col">{c}</th>)}</tr>
            </thead>
            <tbody>{ended.map(s => <RecordingRow key={`${s.cluster}/${s.namespace}/${s.name}`} s={s} me={me} />)}</tbody>
          </table>
        )}
      </InfoCard>
    </Content>
  );
}

function RecordingRow({ s, me }: { s: Session; me: Parameters<typeof useOffers>[0] }) {
  const href = useSessionHref();
  const offer = useOffers(me, s);
  return (
    <tr>
      <td><Link to={href(s)}>{s.name}</Link>{s.status.approval?.processAccess && <strong> sensitive</strong>}</td>
      <td>{s.cluster} / {s.namespace} / {s.spec.targetPod}</td>
      <td className="granted">{granted(s)}</td>
      <td>{s.spec.requester}</td>
      <td style={{ maxWidth: 320, overflowWrap: 'anywhere' }}>{s.spec.reason}</td>
      <td>{age(s.status.end?.at)}</td>
      <td className="playable">{!s.status.evidence?.manifestSHA256 ? 'being finalized' : offer('play') ? <Link to={href(s)}>play and check</Link> : 'not yours to view'}</td>
    </tr>
  );
}
