import { Entity } from '@backstage/catalog-model';
import type { Person } from './person';
import { RefusedError } from './person';
import type { RouterOptions } from './options';

// checkWithin bounds the pod check: past it, the request goes on unchecked.
const checkWithin = 5000;

/**
 * PodFinder checks a request's pod where Backstage can read it: through its
 * Kubernetes plugin's backend (its own read-only account, by the entity's
 * annotations), on behalf of the person. A pod it does not find on that
 * cluster is refused with what it did find; without that plugin (or a
 * cluster it does not know), nothing is checked here and the relay finds a
 * missing pod when the session starts.
 */
export class PodFinder {
  constructor(private readonly o: RouterOptions) {}

  async check(entity: Entity, cluster: string, pod: string, p: Person) {
    const found = await this.pods(entity, cluster, p);
    if (found === undefined || found.includes(pod)) return;
    throw new RefusedError(404, 'TargetNotFound', found.length
      ? `no pod ${pod} of ${entity.metadata.name} runs on ${cluster} now: pick one that does (${found.slice(0, 5).join(', ')}${found.length > 5 ? ', ...' : ''})`
      : `no pod of ${entity.metadata.name} runs on ${cluster} now, so there is nothing to debug`);
  }

  /** The entity's pod names on cluster, or undefined where Backstage cannot tell. */
  private async pods(entity: Entity, cluster: string, p: Person): Promise<string[] | undefined> {
    // Any failure to tell (no such plugin, an error, a slow cluster) leaves
    // the check to the relay at the start: the Kubernetes plugin must never
    // stand between a person and breaking the glass.
    try {
      const base = await this.o.discovery.getBaseUrl('kubernetes');
      const { token } = await this.o.auth.getPluginRequestToken({ onBehalfOf: p.credentials, targetPluginId: 'kubernetes' });
      const resp = await fetch(`${base}/services/${encodeURIComponent(entity.metadata.name)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ entity }),
        signal: AbortSignal.timeout(checkWithin),
      });
      if (!resp.ok) return undefined;
      const data = (await resp.json()) as { items?: { cluster?: { name?: string }; resources?: { type: string; resources?: any[] }[] }[] };
      const item = data.items?.find(i => i.cluster?.name === cluster);
      if (!item) return undefined;
      return (item.resources ?? []).filter(r => r.type === 'pods').flatMap(r => (r.resources ?? []).map(x => String(x.metadata?.name)));
    } catch {
      return undefined;
    }
  }
}
