import { createApiRef, DiscoveryApi, FetchApi, IdentityApi, OpenIdConnectApi } from '@backstage/frontend-plugin-api';
import {
  breakglassBackstageTokenPrefix,
  breakglassEntityHeader,
  breakglassIdentityHeader,
  breakglassIdentityTokenPrefix,
} from '@tower-dev/backstage-plugin-breakglass-common';
import { PortalClient, type Session, type SessionRequest, type Transport } from '@tower-dev/breakglass-portal';

/**
 * The relay's API through Tower's backend plugin: each call carries the
 * person's Backstage token (fetchApi adds it), which Backstage's
 * permissions judge, and their own ID token from the organisation's issuer,
 * which the relay judges.
 */
export class BackstageTransport implements Transport {
  constructor(
    private readonly deps: { discoveryApi: DiscoveryApi; fetchApi: FetchApi; identityApi: IdentityApi; authApi: OpenIdConnectApi },
  ) {}

  async fetch(path: string, init: RequestInit): Promise<Response> {
    const base = await this.deps.discoveryApi.getBaseUrl('breakglass');
    const headers = new Headers(init.headers);
    headers.set(breakglassIdentityHeader, await this.deps.authApi.getIdToken());
    return this.deps.fetchApi.fetch(base + path, { ...init, headers });
  }

  /** The ID token is asked for again: Backstage's OAuth client renews one that ran out. */
  async renew(): Promise<boolean> {
    return true;
  }

  async terminal(path: string) {
    const base = await this.deps.discoveryApi.getBaseUrl('breakglass');
    return {
      url: `${base.replace(/^http/, 'ws')}${path}`,
      // A browser cannot set headers on a WebSocket: the two tokens go as
      // subprotocols, asked at each connection as tokens run out.
      protocols: async () => {
        const { token } = await this.deps.identityApi.getCredentials();
        return [breakglassBackstageTokenPrefix + token, breakglassIdentityTokenPrefix + (await this.deps.authApi.getIdToken())];
      },
    };
  }
}

/** The portal's client of the relay, through Backstage, and the request from an entity's tab. */
export class BreakglassClient extends PortalClient {
  /** requestFor asks for a session on a pod of entityRef (the tab it is asked from; Backstage's permissions judge it). */
  requestFor = (entityRef: string, cluster: string, namespace: string, r: SessionRequest): Promise<Session> =>
    this.request(cluster, namespace, r, { [breakglassEntityHeader]: entityRef });
}

/** The plugin's client of the relay, through Backstage's backend. */
export const breakglassApiRef = createApiRef<BreakglassClient>().with({ id: 'plugin.breakglass.client', pluginId: 'breakglass' });
