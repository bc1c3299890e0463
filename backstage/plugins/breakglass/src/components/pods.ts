import { useEffect, useState } from 'react';
import { discoveryApiRef, fetchApiRef, useApi } from '@backstage/frontend-plugin-api';
import { Entity } from '@backstage/catalog-model';

/** A pod of the entity, as Backstage's Kubernetes plugin found it. */
export interface Pod {
  name: string;
  containers: string[];
}

/**
 * usePods lists the entity's pods on each cluster, as Backstage's
 * Kubernetes plugin finds them (its backend, with its own read-only
 * account, by the entity's annotations), a session's copies left out.
 * Undefined while loading; null when that plugin is not installed or
 * answers nothing: the form then takes a typed name.
 */
export function usePods(entity: Entity): Record<string, Pod[]> | null | undefined {
  const discovery = useApi(discoveryApiRef);
  const fetchApi = useApi(fetchApiRef);
  const [pods, setPods] = useState<Record<string, Pod[]> | null>();
  useEffect(() => {
    let live = true;
    (async () => {
      const base = await discovery.getBaseUrl('kubernetes');
      const resp = await fetchApi.fetch(`${base}/services/${encodeURIComponent(entity.metadata.name)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ entity }),
      });
      if (!resp.ok) throw new Error(`the Kubernetes plugin answered ${resp.status}`);
      const byCluster: Record<string, Pod[]> = {};
      for (const item of (await resp.json()).items ?? []) {
        const found: Pod[] = (byCluster[item.cluster?.name] ??= []);
        for (const r of item.resources ?? []) {
          if (r.type !== 'pods') continue;
          for (const pod of r.resources ?? []) {
            // A session's copy is no workload to debug.
            if (pod.metadata?.labels?.['breakglass.tower.dev/session']) continue;
            found.push({ name: pod.metadata.name, containers: (pod.spec?.containers ?? []).map((c: { name: string }) => c.name) });
          }
        }
        found.sort((a, b) => a.name.localeCompare(b.name));
      }
      if (live) setPods(byCluster);
    })().catch(() => live && setPods(null));
    return () => {
      live = false;
    };
  }, [discovery, fetchApi, entity]);
  return pods;
}
