import { Readable } from 'node:stream';
import { Request, Response } from 'express';
import type { Person } from './person';
import { RefusedError } from './person';

/**
 * segment is what a cluster, namespace or session name in a path to the
 * relay may be: never "." or "..", which fetch and ws would resolve.
 */
export const segment = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;

// What the page may see of the relay's answer headers.
const passedHeaders = ['content-type', 'content-disposition', 'cache-control', 'x-manifest-sha256', 'breakglass-warning'];

/** Relay calls the relay's API as a person (their ID token), never as Backstage. */
export class Relay {
  constructor(readonly url: string) {
    this.url = url.replace(/\/+$/, '');
  }

  private call(method: string, path: string, p: Person, body?: string, accept?: string) {
    const headers: Record<string, string> = { authorization: `Bearer ${p.idToken}` };
    if (body) headers['content-type'] = 'application/json';
    if (accept) headers.accept = accept;
    return fetch(this.url + path, { method, headers, body: body || undefined, redirect: 'manual' });
  }

  /** forward passes the relay's answer to the page as it is, streamed. */
  async forward(req: Request, res: Response, p: Person, path: string) {
    // Only a POST carries a body (fetch refuses one on GET).
    const body = req.method === 'POST' && typeof req.body === 'string' ? req.body : undefined;
    const answer = await this.call(req.method, path, p, body, req.header('accept'));
    res.status(answer.status);
    for (const h of passedHeaders) {
      const v = answer.headers.get(h);
      if (v) res.setHeader(h, v);
    }
    if (!answer.body) {
      res.end();
      return;
    }
    const stream = Readable.fromWeb(answer.body as any);
    // A page that goes away (an event stream closed) ends the relay's call too.
    res.on('close', () => stream.destroy());
    stream.pipe(res);
  }

  /** json calls the relay and answers its JSON, or throws its refusal. */
  async json<T>(method: string, path: string, p: Person, body?: string): Promise<T> {
    const answer = await this.call(method, path, p, typeof body === 'string' ? body : undefined);
    const data: any = await answer.json().catch(() => ({}));
    if (!answer.ok) {
      throw new RefusedError(answer.status, data?.error?.reason ?? 'Error', data?.error?.message ?? answer.statusText);
    }
    return data as T;
  }
}
