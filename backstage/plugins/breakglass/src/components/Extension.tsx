import { useState } from 'react';
import Button from '@material-ui/core/Button';
import TextField from '@material-ui/core/TextField';
import Typography from '@material-ui/core/Typography';
import { useApi } from '@backstage/frontend-plugin-api';
import { extensionOptions, isRequester, maxReason, minutes, offers, sessionFields, type Me, type Offer, type Session } from '@tower-dev/breakglass-portal';
import { breakglassApiRef } from '../api';

type Act = (f: () => Promise<Session>) => Promise<void>;

/**
 * A running session's more time, as the console's: its requester asks
 * (how much, why); another person who may decides; what was decided before
 * is listed.
 */
export function Extension({ me, s, act, offer }: { me?: Me; s: Session; act: Act; offer: (o: Offer) => boolean }) {
  const api = useApi(breakglassApiRef);
  const [more, setMore] = useState(extensionOptions[0].value);
  const [why, setWhy] = useState('');
  const [comment, setComment] = useState('');
  const st = s.status;
  const q = st.extensionRequest;
  const f = sessionFields;
  return (
    <section id="extension" aria-label="More time">
      {(st.extensions ?? []).length > 0 && (
        <ul className="extensions">
          {(st.extensions ?? []).map((x, i) => (
            <li key={i} id={`extension-${i}`}>
              {minutes(x.duration)} more asked by {x.by} (“{x.reason}”): {x.decision === 'Approved' ? 'approved' : 'denied'} by {x.decidedBy}
              {x.comment ? ` (“${x.comment}”)` : ''}
            </li>
          ))}
        </ul>
      )}
      {q && offer('decideExtension') && (
        <div id="extend-decide">
          <Typography paragraph>
            {q.by} asks for {minutes(q.duration)} more: “{q.reason}”. Approving replaces the session's grant with a new one that covers the later hard stop.
          </Typography>
          <TextField id="extend-comment" label={f.extendComment.label} value={comment} onChange={e => setComment(e.target.value)} inputProps={{ maxLength: maxReason }} />
          <Button id="extend-approve" variant="contained" color="primary" style={{ margin: '0 12px' }} onClick={() => act(() => api.approveExtension(s, comment))}>
            {offers.decideExtension.label}
          </Button>
          <Button id="extend-deny" variant="outlined" onClick={() => act(() => api.denyExtension(s, comment))}>Refuse</Button>
        </div>
      )}
      {q && !offer('decideExtension') && (
        <Typography role="status" className="notice">
          {isRequester(me, s) ? `You asked for ${minutes(q.duration)} more: waiting for another person to decide.` : `${q.by} asked for ${minutes(q.duration)} more: waiting for an approver.`}
        </Typography>
      )}
      {!q && offer('extend') && (
        <form className="inline" onSubmit={e => { e.preventDefault(); void act(() => api.extend(s, more, why)); }} style={{ display: 'flex', gap: 8, alignItems: 'center' }}>
          <TextField select id="extend-duration" label={f.extendDuration.label} value={more} onChange={e => setMore(e.target.value)} SelectProps={{ native: true }}>
            {extensionOptions.map(d => <option key={d.value} value={d.value}>{d.label}</option>)}
          </TextField>
          <TextField id="extend-reason" label={f.extendReason.label} value={why} onChange={e => setWhy(e.target.value)} required inputProps={{ maxLength: maxReason }} />
          <Button id="extend" type="submit" variant="outlined">{offers.extend.label}</Button>
        </form>
      )}
    </section>
  );
}
