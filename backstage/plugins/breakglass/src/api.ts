import {
  createApiRef,
  DiscoveryApi,
  FetchApi,
  IdentityApi,
  OpenIdConnectApi,
} from '@backstage/frontend-plugin-api';
import {
  breakglassBackstageTokenPrefix,
  breakglassEntityHeader,
  breakglassIdentityHeader,
  breakglassIdentityTokenPrefix,
} from '@tower-dev/backstage-plugin-breakglass-common';

/** A session as the relay shows it. */
export interface Session {
  cluster: string;
  namespace: string;
  name: string;
  created: string;
  spec: {
    targetPod: string;
    mode: 'live' | 'copy';
    processAccess?: boolean;
    keepPod?: boolean;
    duration: string;
    reason: string;
    requester: string;
    requesterID?: string;
    glassBroken?: boolean;
  };
  /** Set on an Active session the answering relay holds. */
  live?: { viewers: number; attached: { name: string; typing: boolean }[]; idleEndsAt: string; aloneEndsAt?: string };
  status: {
    phase?: 'Pending' | 'Approved' | 'Active' | 'Ended' | 'Denied';
    approval?: { by: string; byID?: string };
    denial?: { by: string; reason?: string };
    grant?: { expiresAt: string };
    end?: { by: string; reason: string; note?: string; detail?: string };
    evidence?: { manifestSHA256?: string; logIndex?: number; entryID?: string; anchorPending?: boolean };
    review?: { dueAt?: string; by?: string; comment?: string };
  };
}

/** Who the relay says the person is. */
export interface Me {
  name: string;
  id: string;
  groups: string[];
  clusters: { name: string; tier: string; needsApproval: boolean }[];
}

/** What a person asks for. */
export interface SessionRequest {
  pod: string;
  /** The app container whose processes a process-access session sees. */
  container?: string;
  mode: 'live' | 'copy';
  processAccess?: boolean;
  keepPod?: boolean;
  duration: string;
  reason: string;
  glassBroken?: boolean;
}

/** A refusal, as either layer answers it. */
export class BreakglassError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

/** The relay's API through Tower's backend plugin. */
export class BreakglassClient {
  constructor(
    private readonly deps: { discoveryApi: DiscoveryApi; fetchApi: FetchApi; identityApi: IdentityApi; authApi: OpenIdConnectApi },
  ) {}

  private async call(method: string, path: string, body?: unknown, entityRef?: string): Promise<Response> {
    const base = await this.deps.discoveryApi.getBaseUrl('breakglass');
    const headers: Record<string, string> = { [breakglassIdentityHeader]: await this.deps.authApi.getIdToken() };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (entityRef) headers[breakglassEntityHeader] = entityRef;
    const resp = await this.deps.fetchApi.fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!resp.ok) {
      const data = await resp.json().catch(() => ({}));
      throw new BreakglassError(resp.status, data?.error?.reason ?? 'Error', data?.error?.message ?? resp.statusText);
    }
    return resp;
  }

  private json<T>(method: string, path: string, body?: unknown, entityRef?: string): Promise<T> {
    return this.call(method, path, body, entityRef).then(r => r.json());
  }

  static path(cluster: string, namespace: string, name?: string) {
    const p = `/api/v1/clusters/${encodeURIComponent(cluster)}/namespaces/${encodeURIComponent(namespace)}/sessions`;
    return name ? `${p}/${encodeURIComponent(name)}` : p;
  }

  me = () => this.json<Me>('GET', '/api/v1/me');
  list = () => this.json<{ sessions: Session[] }>('GET', '/api/v1/sessions').then(d => d.sessions ?? []);
  get = (c: string, ns: string, n: string) => this.json<Session>('GET', BreakglassClient.path(c, ns, n));
  request = (entityRef: string, c: string, ns: string, r: SessionRequest) =>
    this.json<Session>('POST', BreakglassClient.path(c, ns), r, entityRef);
  approve = (s: Session) => this.json<Session>('POST', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/approve`, {});
  deny = (s: Session, reason: string) => this.json<Session>('POST', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/deny`, { reason });
  start = (s: Session) => this.json<Session>('POST', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/start`);
  end = (s: Session, reason?: string) =>
    this.json<Session>('POST', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/end`, reason ? { reason } : {});
  review = (s: Session, comment: string) =>
    this.json<Session>('POST', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/review`, { comment });

  /** The recording's cast, as text and bytes, and the manifest hash the relay recorded. */
  async recording(s: Session): Promise<{ text: string; bytes: ArrayBuffer; manifestSHA256: string }> {
    const resp = await this.call('GET', `${BreakglassClient.path(s.cluster, s.namespace, s.name)}/recording?file=cast`);
    const bytes = await resp.arrayBuffer();
    return { text: new TextDecoder().decode(bytes), bytes, manifestSHA256: resp.headers.get('x-manifest-sha256') ?? '' };
  }

  /** The terminal's WebSocket address and its credentials (asked at each connection). */
  async terminal(s: Session): Promise<{ url: string; credentials: () => Promise<string[]> }> {
    const base = await this.deps.discoveryApi.getBaseUrl('breakglass');
    return {
      url: `${base.replace(/^http/, 'ws')}${BreakglassClient.path(s.cluster, s.namespace, s.name)}/terminal`,
      credentials: async () => {
        const { token } = await this.deps.identityApi.getCredentials();
        return [breakglassBackstageTokenPrefix + token, breakglassIdentityTokenPrefix + (await this.deps.authApi.getIdToken())];
      },
    };
  }
}

/** The plugin's client of the relay, through Backstage's backend. */
export const breakglassApiRef = createApiRef<BreakglassClient>().with({ id: 'plugin.breakglass.client', pluginId: 'breakglass' });
