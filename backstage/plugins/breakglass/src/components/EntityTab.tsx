import { FormEvent, useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { useApi } from '@backstage/frontend-plugin-api';
import { useEntity } from '@backstage/plugin-catalog-react';
import { stringifyEntityRef } from '@backstage/catalog-model';
import { Content, InfoCard, Progress } from '@backstage/core-components';
import { usePermission } from '@backstage/plugin-permission-react';
import Button from '@material-ui/core/Button';
import Checkbox from '@material-ui/core/Checkbox';
import Dialog from '@material-ui/core/Dialog';
import DialogActions from '@material-ui/core/DialogActions';
import DialogContent from '@material-ui/core/DialogContent';
import DialogContentText from '@material-ui/core/DialogContentText';
import DialogTitle from '@material-ui/core/DialogTitle';
import FormControlLabel from '@material-ui/core/FormControlLabel';
import FormHelperText from '@material-ui/core/FormHelperText';
import Radio from '@material-ui/core/Radio';
import RadioGroup from '@material-ui/core/RadioGroup';
import TextField from '@material-ui/core/TextField';
import Typography from '@material-ui/core/Typography';
import { breakglassBreakGlassPermission, breakglassRequestPermission } from '@tower-dev/backstage-plugin-breakglass-common';
import {
  breakGlass, defaultDuration, durationHelp, durationOptions, maxReason, modeChoices, requestable, requestFields, requestOf, requestProblems,
  type Mode,
} from '@tower-dev/breakglass-portal';
import { breakglassApiRef } from '../api';
import { ErrorNote, SessionTable, useSessionHref } from './common';
import { useSessions } from './hooks';
import { usePods } from './pods';

const namespaceAnnotation = 'backstage.io/kubernetes-namespace';
// Optional: the clusters (comma-separated) this component's sessions may be asked on.
const clusterAnnotation = 'breakglass.tower.dev/cluster';

/**
 * The break-glass tab: ask for a session on one of the component's pods,
 * with the console's form (the portal's fields and words), on a cluster
 * where the relay lets the person ask in the component's namespace and
 * Backstage's Kubernetes plugin finds its pods; the component's sessions
 * below. Shown only to people Backstage's policy lets ask.
 */
export function EntityTab() {
  const { entity } = useEntity();
  const entityRef = stringifyEntityRef(entity);
  const api = useApi(breakglassApiRef);
  const href = useSessionHref();
  const navigate = useNavigate();
  const { me, sessions, error: listError } = useSessions();
  const mayAsk = usePermission({ permission: breakglassRequestPermission, resourceRef: entityRef });
  const mayBreak = usePermission({ permission: breakglassBreakGlassPermission, resourceRef: entityRef });
  const pods = usePods(entity);
  const namespace = entity.metadata.annotations?.[namespaceAnnotation] ?? '';
  const only = entity.metadata.annotations?.[clusterAnnotation]?.split(',').map(c => c.trim()).filter(Boolean);
  // Clusters where the relay lets this person ask in the namespace, the
  // component's own (the annotation) where it names them.
  const places = useMemo(
    () => requestable(me).filter(p => (p.namespaces.includes('*') || p.namespaces.includes(namespace)) && (!only || only.includes(p.cluster))),
    [me, namespace, only?.join()], // eslint-disable-line react-hooks/exhaustive-deps
  );
  const [cluster, setCluster] = useState('');
  useEffect(() => {
    if (!places.some(p => p.cluster === cluster)) {
      // The first cluster the Kubernetes plugin found pods on, else the first.
      setCluster((places.find(p => pods?.[p.cluster]?.length) ?? places[0])?.cluster ?? '');
    }
  }, [places, pods, cluster]);
  const [v, setV] = useState({ pod: '', container: '', mode: 'live' as Mode, duration: defaultDuration, processAccess: false, keepPod: false, reason: '' });
  const set = (patch: Partial<typeof v>) => setV(x => ({ ...x, ...patch }));
  const [error, setError] = useState<Error>();
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [glassOpen, setGlassOpen] = useState(false);
  const [understood, setUnderstood] = useState(false);
  const place = places.find(p => p.cluster === cluster);
  const glassHere = Boolean(place && (place.breakGlass.includes('*') || place.breakGlass.includes(namespace))) && mayBreak.allowed;
  const clusterPods = pods?.[cluster];
  const containers = clusterPods?.find(p => p.name === v.pod)?.containers;

  const ask = async (glassBroken: boolean) => {
    setError(undefined);
    const req = requestOf({ ...v, glassBroken });
    const found = requestProblems(req) as Record<string, string>;
    setProblems(found);
    if (Object.keys(found).length) return;
    setBusy(true);
    try {
      const s = await api.requestFor(entityRef, cluster, namespace, req);
      navigate(href(s));
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
      setGlassOpen(false);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void ask(false);
  };

  if (mayAsk.loading || !me) return listError ? <Content><ErrorNote error={listError} /></Content> : <Progress />;
  const f = requestFields;
  return (
    <Content>
      {!mayAsk.allowed || places.length === 0 ? (
        <InfoCard title={`Debug a pod of ${entity.metadata.name}`}>
          <Typography role="status" className="notice">
            {!mayAsk.allowed
              ? `You may not ask for debug sessions on ${entity.metadata.name}: Backstage's permissions do not let you. Ask its owners.`
              : `You may not ask for debug sessions in ${namespace} on any cluster: the relay's permissions do not let you. Ask your administrator.`}
          </Typography>
        </InfoCard>
      ) : (
        <InfoCard title={`Debug a pod of ${entity.metadata.name} (${namespace})`}>
          <form onSubmit={submit} aria-label="Ask for a debug session" noValidate>
            <TextField select id="cluster" label={f.cluster.label} value={cluster} onChange={e => { set({ pod: '' }); setCluster(e.target.value); }}
              SelectProps={{ native: true }} margin="dense" style={{ minWidth: 240 }}>
              {places.map(p => <option key={p.cluster} value={p.cluster}>{p.tier && p.tier !== p.cluster ? `${p.cluster} (${p.tier})` : p.cluster}</option>)}
            </TextField>
            <div>
              {clusterPods && clusterPods.length > 0 ? (
                <TextField select id="pod" label={f.pod.label} value={v.pod} onChange={e => set({ pod: e.target.value, container: '' })} required
                  SelectProps={{ native: true }} margin="dense" style={{ minWidth: 360 }} error={Boolean(problems.pod)}
                  helperText={problems.pod ?? `The pods Backstage's Kubernetes view finds for ${entity.metadata.name} on ${cluster}.`}>
                  <option value="">Pick one of {entity.metadata.name}'s pods</option>
                  {clusterPods.map(p => <option key={p.name} value={p.name}>{p.name}</option>)}
                </TextField>
              ) : (
                <TextField id="pod" label={f.pod.label} value={v.pod} onChange={e => set({ pod: e.target.value })} required margin="dense"
                  error={Boolean(problems.pod)} style={{ minWidth: 360 }}
                  helperText={problems.pod ?? (pods === undefined ? 'Looking for the pods…' : `${f.pod.help} Backstage's Kubernetes view finds none on ${cluster}.`)} />
              )}
            </div>
            <fieldset style={{ border: '1px solid #c9d1d9', borderRadius: 4, maxWidth: 720 }}>
              <legend>{f.mode.label}</legend>
              <RadioGroup name="mode" value={v.mode} onChange={e => set({ mode: e.target.value as Mode })}>
                {modeChoices.map(m => (
                  <div key={m.value}>
                    <FormControlLabel value={m.value} control={<Radio inputProps={{ id: `mode-${m.value}`, 'aria-describedby': `mode-${m.value}-help` } as any} />} label={m.label} />
                    <FormHelperText id={`mode-${m.value}-help`} style={{ marginTop: -8, marginLeft: 32 }}>{m.help}</FormHelperText>
                  </div>
                ))}
              </RadioGroup>
            </fieldset>
            <TextField select id="duration" label={f.duration.label} value={v.duration} onChange={e => set({ duration: e.target.value })}
              SelectProps={{ native: true }} helperText={durationHelp(me)} margin="dense" fullWidth style={{ maxWidth: 720 }}>
              {durationOptions.map(d => <option key={d.value} value={d.value}>{d.label}</option>)}
            </TextField>
            <div>
              <FormControlLabel control={<Checkbox checked={v.processAccess} onChange={e => set({ processAccess: e.target.checked })}
                inputProps={{ id: 'process-access', 'aria-describedby': 'process-access-help' } as any} />} label={f.processAccess.label} />
              <FormHelperText id="process-access-help">{f.processAccess.help}</FormHelperText>
            </div>
            {v.processAccess && (
              containers && containers.length > 0 ? (
                <TextField select id="container" label={f.container.label} value={v.container} onChange={e => set({ container: e.target.value })}
                  SelectProps={{ native: true }} margin="dense" error={Boolean(problems.container)} helperText={problems.container ?? f.container.help}>
                  <option value="">Pick the app container</option>
                  {containers.map(c => <option key={c} value={c}>{c}</option>)}
                </TextField>
              ) : (
                <TextField id="container" label={f.container.label} value={v.container} onChange={e => set({ container: e.target.value })} margin="dense"
                  error={Boolean(problems.container)} helperText={problems.container ?? f.container.help} />
              )
            )}
            <div>
              <FormControlLabel control={<Checkbox checked={v.keepPod} onChange={e => set({ keepPod: e.target.checked })}
                inputProps={{ id: 'keep-pod', 'aria-describedby': 'keep-pod-help' } as any} />} label={f.keepPod.label} />
              <FormHelperText id="keep-pod-help">{f.keepPod.help}</FormHelperText>
            </div>
            <TextField id="reason" label={f.reason.label} value={v.reason} onChange={e => set({ reason: e.target.value })} required multiline minRows={3}
              fullWidth style={{ maxWidth: 720 }} inputProps={{ maxLength: maxReason }} error={Boolean(problems.reason)} helperText={problems.reason ?? f.reason.help} margin="dense" />
            <ErrorNote error={error} />
            <div style={{ display: 'flex', gap: 12, marginTop: 16 }}>
              <Button id="request-button" type="submit" variant="contained" color="primary" disabled={busy || !cluster}>Request approval</Button>
              {glassHere && (
                <Button id="break-glass" variant="contained" color="secondary" disabled={busy || !cluster} onClick={() => { setUnderstood(false); setGlassOpen(true); }}>
                  {breakGlass.button}
                </Button>
              )}
            </div>
          </form>
          <Dialog open={glassOpen} onClose={() => setGlassOpen(false)} aria-labelledby="glass-title">
            <DialogTitle id="glass-title">{breakGlass.title}</DialogTitle>
            <DialogContent>
              <DialogContentText>{breakGlass.warning}</DialogContentText>
              <FormControlLabel control={<Checkbox checked={understood} onChange={e => setUnderstood(e.target.checked)} inputProps={{ id: 'glass-understood' } as any} />}
                label={breakGlass.understood} />
              {glassOpen && !understood && <FormHelperText>{breakGlass.notConfirmed}</FormHelperText>}
              <ErrorNote error={error} />
            </DialogContent>
            <DialogActions>
              <Button onClick={() => setGlassOpen(false)}>Back</Button>
              <Button id="glass-confirm" variant="contained" color="secondary" disabled={!understood || busy} onClick={() => void ask(true)}>
                {breakGlass.confirm}
              </Button>
            </DialogActions>
          </Dialog>
        </InfoCard>
      )}
      <InfoCard title={`Sessions of ${entity.metadata.name}`}>
        <SessionTable sessions={(sessions ?? []).filter(s => s.namespace === namespace && (!only || only.includes(s.cluster)))} empty="No sessions yet." />
      </InfoCard>
    </Content>
  );
}
