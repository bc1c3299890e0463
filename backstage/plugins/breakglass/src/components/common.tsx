import { ReactNode } from 'react';
import { Link, ResponseErrorPanel } from '@backstage/core-components';
import { useRouteRef } from '@backstage/frontend-plugin-api';
import Chip from '@material-ui/core/Chip';
import Table from '@material-ui/core/Table';
import TableBody from '@material-ui/core/TableBody';
import TableCell from '@material-ui/core/TableCell';
import TableHead from '@material-ui/core/TableHead';
import TableRow from '@material-ui/core/TableRow';
import Typography from '@material-ui/core/Typography';
import { age, modeLabel, phaseColours, phaseOf, reviewOverdue, when, type Session } from '@tower-dev/breakglass-portal';
import { rootRouteRef } from '../routes';

/** The session's page in the plugin. */
export function useSessionHref() {
  const root = useRouteRef(rootRouteRef);
  return (s: Pick<Session, 'cluster' | 'namespace' | 'name'>, view?: 'approve' | 'review') =>
    `${root?.() ?? '/break-glass'}/sessions/${[s.cluster, s.namespace, s.name].map(encodeURIComponent).join('/')}${view ? `?view=${view}` : ''}`;
}

/** The phase badge, the console's words and colours. */
export function PhaseChip({ s }: { s: Session }) {
  const p = phaseOf(s);
  return <Chip size="small" label={p} className="phase" data-phase={p} style={{ ...phaseColours[p], fontWeight: 600 }} />;
}

/** A refusal or failure, styled as Backstage shows errors; its words are the relay's, humanized. */
export function ErrorNote({ error }: { error?: Error }) {
  if (!error) return null;
  return (
    <div role="alert" className="notice error">
      <ResponseErrorPanel error={error} title={error.message} />
    </div>
  );
}

/** A table of sessions; due puts the review's due time in the last column. */
export function SessionTable({ sessions, empty, view, due }: { sessions: Session[]; empty: string; view?: 'approve' | 'review'; due?: boolean }) {
  const href = useSessionHref();
  if (sessions.length === 0) return <Typography className="empty">{empty}</Typography>;
  return (
    <Table size="small">
      <TableHead>
        <TableRow>
          {['Session', 'Where', 'Mode', 'Requester', 'Reason', 'Phase', due ? 'Review due' : 'Asked'].map(c => (
            <TableCell key={c} scope="col">{c}</TableCell>
          ))}
        </TableRow>
      </TableHead>
      <TableBody>
        {sessions.map(s => (
          <TableRow key={`${s.cluster}/${s.namespace}/${s.name}`}>
            <TableCell>
              <Link to={href(s, view)}>{s.name}</Link>
              {s.spec.glassBroken && <Chip size="small" label="glass broken" style={{ marginLeft: 8 }} />}
            </TableCell>
            <TableCell>{s.cluster} / {s.namespace} / {s.spec.targetPod}</TableCell>
            <TableCell>{modeLabel(s.spec.mode)}{s.spec.processAccess ? ' + processes' : ''}</TableCell>
            <TableCell>{s.spec.requester}</TableCell>
            <TableCell style={{ maxWidth: 320, overflowWrap: 'anywhere' }}>{s.spec.reason}</TableCell>
            <TableCell><PhaseChip s={s} /></TableCell>
            <TableCell>
              {due ? (
                <>
                  {when(s.status.review?.dueAt)}
                  {reviewOverdue(s) && <strong> overdue</strong>}
                </>
              ) : (
                age(s.created)
              )}
            </TableCell>
          </TableRow>
        ))}
      </TableBody>
    </Table>
  );
}

/** A labelled list of facts. */
export function Facts({ rows, id }: { rows: [string, ReactNode, string?][]; id?: string }) {
  return (
    <dl id={id} style={{ display: 'grid', gridTemplateColumns: 'max-content 1fr max-content 1fr', gap: '2px 16px' }}>
      {rows.map(([k, v, vid]) => (
        <div key={k} style={{ display: 'contents' }}>
          <dt style={{ fontWeight: 600 }}>{k}</dt>
          <dd id={vid} style={{ margin: 0, overflowWrap: 'anywhere' }}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
