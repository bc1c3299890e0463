import { useEffect, useState } from 'react';
import { discoveryApiRef, fetchApiRef, useApi } from '@backstage/frontend-plugin-api';
import { Entity } from '@backstage/catalog-model';

/**
 * usePods lists the entity's pods in cluster, as Backstage's Kubernetes
 * plugin finds them (its backend, with its own read-only account, by the
 * entity's annotations). Undefined while loading or when that plugin is
 * not installed: the form then takes a typed name.
 */
export function usePods(entity: Entity, cluster: string): string[] | undefined {
  const discovery = useApi(discoveryApiRef);
  const fetchApi = useApi(fetchApiRef);
  const [pods, setPods] = useState<string[]>();
  useEffect(() => {
    let live = true;
    (async () => {
      const base = await discovery.getBaseUrl('kubernetes');
      const resp = await fetchApi.fetch(`${base}/services/${encodeURIComponent(entity.metadata.name)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ entity }),
      });
      if (!resp.ok) return;
      const data = await resp.json();
      const names: string[] = [];
      for (const item of data.items ?? []) {
        if (item.cluster?.name !== cluster) continue;
        for (const r of item.resources ?? []) {
          if (r.type !== 'pods') continue;
          for (const pod of r.resources ?? []) {
            // A session's copy is no workload to debug.
            if (!pod.metadata?.labels?.['breakglass.tower.dev/session']) names.push(pod.metadata.name);
          }
        }
      }
      if (live) setPods(names.sort());
    })().catch(() => undefined);
    return () => {
      live = false;
    };
  }, [discovery, fetchApi, entity, cluster]);
  return pods;
}
