import { useState } from 'react';
import Button from '@material-ui/core/Button';
import Checkbox from '@material-ui/core/Checkbox';
import FormControlLabel from '@material-ui/core/FormControlLabel';
import FormHelperText from '@material-ui/core/FormHelperText';
import TextField from '@material-ui/core/TextField';
import Typography from '@material-ui/core/Typography';
import { useApi } from '@backstage/frontend-plugin-api';
import { approvalForm, decisionOf, maxReason, offers, sessionFields, type Offer, type Session } from '@tower-dev/breakglass-portal';
import { breakglassApiRef } from '../api';

type Act = (f: () => Promise<Session>) => Promise<void>;

/**
 * The approver's decision, as the console's: what approving lets the relay
 * do, and what the approver grants: process access only where it was
 * asked for and only when ticked, keeping the pod, a comment; or a denial
 * with the reason the requester reads.
 */
export function Decide({ s, act, offer, onProblem }: { s: Session; act: Act; offer: (o: Offer) => boolean; onProblem: (m: string) => void }) {
  const api = useApi(breakglassApiRef);
  const form = approvalForm(s);
  const [processAccess, setProcessAccess] = useState(false);
  const [keepPod, setKeepPod] = useState(false);
  const [comment, setComment] = useState('');
  const [reason, setReason] = useState('');
  return (
    <section id="approve" aria-labelledby="decide-title" style={{ border: '1px solid #c9d1d9', borderRadius: 6, padding: '8px 16px 16px', maxWidth: 760 }}>
      <Typography variant="h6" component="h3" id="decide-title">{form.title}</Typography>
      <Typography paragraph>{form.summary}</Typography>
      {form.processAccess && (
        <div>
          <FormControlLabel
            control={<Checkbox checked={processAccess} onChange={e => setProcessAccess(e.target.checked)} inputProps={{ id: 'approve-process', 'aria-describedby': 'approve-process-help' } as any} />}
            label={form.processAccess.label}
          />
          <FormHelperText id="approve-process-help">{form.processAccess.help}</FormHelperText>
        </div>
      )}
      <div>
        <FormControlLabel
          control={<Checkbox checked={keepPod} onChange={e => setKeepPod(e.target.checked)} inputProps={{ id: 'approve-keep', 'aria-describedby': 'approve-keep-help' } as any} />}
          label={form.keepPod.label}
        />
        <FormHelperText id="approve-keep-help">{form.keepPod.help}</FormHelperText>
      </div>
      <TextField id="approve-comment" label={form.comment.label} value={comment} onChange={e => setComment(e.target.value)}
        inputProps={{ maxLength: maxReason }} fullWidth margin="dense" />
      {offer('approve') && (
        <Button id="approve-button" variant="contained" color="primary" style={{ margin: '8px 12px 16px 0' }}
          onClick={() => act(() => api.approve(s, decisionOf({ processAccess, keepPod, comment })))}>
          {offers.approve.label}
        </Button>
      )}
      {offer('deny') && (
        <>
          <TextField id="deny-reason" label={form.denyReason.label} helperText={form.denyReason.help} value={reason}
            onChange={e => setReason(e.target.value)} multiline minRows={2} inputProps={{ maxLength: maxReason }} fullWidth margin="dense" />
          <Button id="deny-button" variant="contained" style={{ marginTop: 8 }}
            onClick={() => (reason.trim() ? act(() => api.deny(s, reason)) : onProblem(form.denyNeedsReason))}>
            {offers.deny.label}
          </Button>
        </>
      )}
    </section>
  );
}

/** Ends a session before it starts: its requester withdraws it, someone else cancels it, saying why. */
export function TakeBack({ s, act, kind }: { s: Session; act: Act; kind: 'withdraw' | 'cancel' }) {
  const api = useApi(breakglassApiRef);
  const [why, setWhy] = useState('');
  return (
    <form className="inline" onSubmit={e => { e.preventDefault(); void act(() => api.end(s, why)); }} style={{ display: 'flex', gap: 8, alignItems: 'center', marginTop: 12 }}>
      <TextField id={`${kind}-reason`} label={sessionFields.withdrawReason.label} value={why} onChange={e => setWhy(e.target.value)} inputProps={{ maxLength: maxReason }} />
      <Button id={kind} type="submit" variant="outlined">{offers[kind].label}</Button>
    </form>
  );
}

/** Ends a running session, saying why. */
export function EndForm({ s, act }: { s: Session; act: Act }) {
  const api = useApi(breakglassApiRef);
  const [why, setWhy] = useState('');
  return (
    <form className="inline" onSubmit={e => { e.preventDefault(); void act(() => api.end(s, why)); }} style={{ display: 'flex', gap: 8, alignItems: 'center', marginTop: 12 }}>
      <TextField id="end-reason" label={sessionFields.endReason.label} value={why} onChange={e => setWhy(e.target.value)} inputProps={{ maxLength: maxReason }} style={{ minWidth: 320 }} />
      <Button id="end" type="submit" variant="contained" color="secondary">{offers.end.label}</Button>
    </form>
  );
}
