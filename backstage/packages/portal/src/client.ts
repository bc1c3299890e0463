import type { Command, Decision, Me, Session, SessionRequest, SessionSearch } from './types';
import { humanize } from './words';

/**
 * How a portal reaches the relay's API: the console on its own origin with
 * its session cookie, Tower through Backstage's backend with the person's
 * two tokens. Paths are the relay's own (/api/v1/...).
 */
export interface Transport {
  /** Calls the relay's path with the person's credentials. */
  fetch(path: string, init: RequestInit): Promise<Response>;
  /**
   * Renews the person's sign-in after a 401; true when the call is worth
   * making again. Absent: a 401 is the answer.
   */
  renew?(): Promise<boolean>;
  /** The terminal WebSocket's address, and the subprotocols that carry the person's credentials. */
  terminal(path: string): Promise<{ url: string; protocols: () => Promise<string[]> }>;
}

/** A refusal, as the relay (or a portal in front of it) answers it: {"error": {reason, message}}. */
export class RelayError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(humanize(message));
    this.name = 'RelayError';
  }
}

/** The path of a session's collection, or of one session. */
export function sessionPath(cluster: string, namespace: string, name?: string): string {
  const p = `/api/v1/clusters/${encodeURIComponent(cluster)}/namespaces/${encodeURIComponent(namespace)}/sessions`;
  return name === undefined ? p : `${p}/${encodeURIComponent(name)}`;
}

const pathOf = (s: Pick<Session, 'cluster' | 'namespace' | 'name'>) => sessionPath(s.cluster, s.namespace, s.name);

/** The relay's API, over a portal's transport. */
export class PortalClient {
  constructor(readonly transport: Transport) {}

  /** call answers the relay's response, or throws its refusal. */
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let resp = await this.transport.fetch(path, init);
    if (resp.status === 401 && this.transport.renew && (await this.transport.renew())) {
      resp = await this.transport.fetch(path, init);
    }
    if (!resp.ok) {
      const data = await resp.json().catch(() => ({}));
      throw new RelayError(resp.status, data?.error?.reason ?? 'Error', data?.error?.message ?? (resp.statusText || `HTTP ${resp.status}`));
    }
    return resp;
  }

  private async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
    return (await this.call(method, path, body, headers)).json() as Promise<T>;
  }

  me = () => this.json<Me>('GET', '/api/v1/me');
  list = () => this.json<{ sessions?: Session[] }>('GET', '/api/v1/sessions').then(d => d.sessions ?? []);
  get = (cluster: string, namespace: string, name: string) => this.json<Session>('GET', sessionPath(cluster, namespace, name));
  /** request asks for a session; headers carry what a portal in front of the relay needs (the entity it is asked from). */
  request = (cluster: string, namespace: string, req: SessionRequest, headers?: Record<string, string>) =>
    this.json<Session>('POST', sessionPath(cluster, namespace), req, headers);
  approve = (s: Session, d: Decision) => this.json<Session>('POST', `${pathOf(s)}/approve`, d);
  deny = (s: Session, reason: string) => this.json<Session>('POST', `${pathOf(s)}/deny`, { reason });
  start = (s: Session) => this.json<Session>('POST', `${pathOf(s)}/start`);
  /** end ends, withdraws or cancels s, with the person's reason (optional). */
  end = (s: Session, reason?: string) => this.json<Session>('POST', `${pathOf(s)}/end`, reason ? { reason } : {});
  extend = (s: Session, duration: string, reason: string) => this.json<Session>('POST', `${pathOf(s)}/extensions`, { duration, reason });
  approveExtension = (s: Session, comment?: string) =>
    this.json<Session>('POST', `${pathOf(s)}/extensions/approve`, comment ? { comment } : {});
  denyExtension = (s: Session, reason?: string) => this.json<Session>('POST', `${pathOf(s)}/extensions/deny`, reason ? { reason } : {});
  review = (s: Session, comment: string) => this.json<Session>('POST', `${pathOf(s)}/review`, { comment });
  commands = (s: Session) => this.json<{ commands?: Command[] }>('GET', `${pathOf(s)}/recording/commands`).then(d => d.commands ?? []);
  search = (s: Session, q: string, stream: 'input' | 'output' | 'both') =>
    this.json<SessionSearch>('GET', `${pathOf(s)}/recording/search?q=${encodeURIComponent(q)}&stream=${encodeURIComponent(stream)}`);

  /** recording answers one file of an ended session's evidence, as bytes. */
  async recording(s: Session, file: 'cast' | 'manifest' | 'transcript'): Promise<Uint8Array> {
    return new Uint8Array(await (await this.call('GET', `${pathOf(s)}/recording?file=${file}`)).arrayBuffer());
  }

  /** The path a download link of one file of the evidence names (on the console's own origin). */
  recordingPath = (s: Session, file: 'cast' | 'manifest' | 'transcript') => `${pathOf(s)}/recording?file=${file}`;

  /** The session's terminal: its address and credentials (the relay's terminal protocol is added by the terminal). */
  terminal = (s: Session) => this.transport.terminal(`${pathOf(s)}/terminal`);
}
