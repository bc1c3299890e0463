import { FormEvent, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { useApi, useRouteRef } from '@backstage/frontend-plugin-api';
import { useEntity } from '@backstage/plugin-catalog-react';
import { stringifyEntityRef } from '@backstage/catalog-model';
import { Content, InfoCard, WarningPanel } from '@backstage/core-components';
import { breakglassApiRef, SessionRequest } from '../api';
import { rootRouteRef } from '../plugin';
import { SessionTable, useSessions } from './common';
import { usePods } from './pods';

const durations = ['15m', '20m', '30m', '45m', '60m', '75m'];

/**
 * The break-glass tab: ask for a session on one of the component's pods
 * (its namespace from the Kubernetes annotation), and its sessions so far.
 */
export function EntityTab() {
  const { entity } = useEntity();
  const api = useApi(breakglassApiRef);
  const root = useRouteRef(rootRouteRef);
  const navigate = useNavigate();
  const { me, sessions } = useSessions();
  const namespace = entity.metadata.annotations?.['backstage.io/kubernetes-namespace'] ?? '';
  const cluster = entity.metadata.annotations?.['breakglass.tower.dev/cluster'] ?? me?.clusters[0]?.name ?? '';
  const [form, setForm] = useState<SessionRequest>({ pod: '', mode: 'live', duration: '20m', reason: '' });
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<SessionRequest>) => setForm(f => ({ ...f, ...patch }));
  const pods = usePods(entity, cluster);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await api.request(stringifyEntityRef(entity), cluster, namespace, form);
      const path = [s.cluster, s.namespace, s.name].map(encodeURIComponent).join('/');
      navigate(`${root?.() ?? '/break-glass'}/sessions/${path}`);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Content>
      <InfoCard title={`Debug a pod of ${entity.metadata.name} (${cluster}/${namespace})`}>
        <form onSubmit={submit} aria-label="Ask for a debug session">
          <p>
            <label htmlFor="bg-pod">Pod</label>{' '}
            {pods && pods.length > 0 ? (
              <select id="bg-pod" required value={form.pod} onChange={e => set({ pod: e.target.value })}>
                <option value="">Pick one of {entity.metadata.name}'s pods</option>
                {pods.map(p => (
                  <option key={p}>{p}</option>
                ))}
              </select>
            ) : (
              <input id="bg-pod" required value={form.pod} onChange={e => set({ pod: e.target.value })} placeholder={`a pod in ${namespace}`} />
            )}
          </p>
          <fieldset>
            <legend>How</legend>
            <label>
              <input type="radio" name="bg-mode" checked={form.mode === 'live'} onChange={() => set({ mode: 'live' })} /> Live: a
              debug container beside the app, which keeps serving
            </label>
            <br />
            <label>
              <input type="radio" name="bg-mode" checked={form.mode === 'copy'} onChange={() => set({ mode: 'copy' })} /> A copy of
              the pod, outside the app's traffic
            </label>
          </fieldset>
          <p>
            <label htmlFor="bg-duration">Duration</label>{' '}
            <select id="bg-duration" value={form.duration} onChange={e => set({ duration: e.target.value })}>
              {durations.map(d => (
                <option key={d}>{d}</option>
              ))}
            </select>{' '}
            (the grant's TTL: the session ends then, whatever happens)
          </p>
          <p>
            <label htmlFor="bg-reason">Reason</label>
            <br />
            <textarea id="bg-reason" required maxLength={1024} rows={3} cols={60} value={form.reason} onChange={e => set({ reason: e.target.value })} />
          </p>
          <p>
            <label>
              <input type="checkbox" checked={Boolean(form.processAccess)} onChange={e => set({ processAccess: e.target.checked })} /> Process
              access: see the app's processes, their files and memory. Its recording is sensitive: only some people may play it.
            </label>
          </p>
          {form.processAccess && (
            <p>
              <label htmlFor="bg-container">App container whose processes it sees</label>{' '}
              <input id="bg-container" required value={form.container ?? ''} onChange={e => set({ container: e.target.value })} />
            </p>
          )}
          <p>
            <label>
              <input type="checkbox" checked={Boolean(form.keepPod)} onChange={e => set({ keepPod: e.target.checked })} /> Keep the
              pod: an approver may let it run on after the session instead of recycling it.
            </label>
          </p>
          <p>
            <label>
              <input type="checkbox" checked={Boolean(form.glassBroken)} onChange={e => set({ glassBroken: e.target.checked })} /> Break
              the glass: no approval, start it at once
            </label>
          </p>
          {form.glassBroken && (
            <WarningPanel title="Breaking the glass" defaultExpanded>
              The session starts without anyone approving it. It is recorded, and someone else must review it afterwards.
            </WarningPanel>
          )}
          {error && <p role="alert">{error}</p>}
          <button type="submit" disabled={busy || !cluster || !namespace}>
            {form.glassBroken ? 'Break the glass' : 'Ask for approval'}
          </button>
        </form>
      </InfoCard>
      <InfoCard title="Sessions in this namespace">
        <SessionTable sessions={sessions.filter(s => s.namespace === namespace && s.cluster === cluster)} empty="No sessions yet." />
      </InfoCard>
    </Content>
  );
}
