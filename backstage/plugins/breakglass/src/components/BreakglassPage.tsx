import { Route, Routes } from 'react-router-dom';
import { Content, InfoCard } from '@backstage/core-components';
import { mine, overdue, SessionTable, useSessions } from './common';
import { SessionPage } from './SessionPage';

/** The plugin's page: the queues, and each session's page below it. */
export function BreakglassPage() {
  return (
    <Routes>
      <Route path="/" element={<Queues />} />
      <Route path="/sessions/:cluster/:namespace/:name" element={<SessionPage />} />
    </Routes>
  );
}

function Queues() {
  const { me, sessions, error } = useSessions();
  // The relay shows each person only the sessions they may act on; the
  // queues sort them by what is asked of this person.
  const waiting = sessions.filter(s => s.status.phase === 'Pending' && !mine(me, s));
  // Overdue reviews first: those the fallback reviewer has been told of.
  const reviews = sessions
    .filter(s => s.status.phase === 'Ended' && s.spec.glassBroken && !s.status.review?.by && !mine(me, s))
    .sort((a, b) => Number(overdue(b)) - Number(overdue(a)));
  const own = sessions.filter(s => mine(me, s));
  return (
    <Content>
      {error && <p role="alert">{error.message}</p>}
      <InfoCard title="Waiting for approval">
        <SessionTable sessions={waiting} empty="Nothing waits for an approval you could give." />
      </InfoCard>
      <InfoCard title="Reviews due">
        <SessionTable sessions={reviews} empty="No broken glass waits for a review." />
      </InfoCard>
      <InfoCard title="Your sessions">
        <SessionTable sessions={own} empty="You have asked for no sessions." />
      </InfoCard>
    </Content>
  );
}
