import { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import { NextFunction, Request, Response } from 'express';
import WebSocket, { WebSocketServer } from 'ws';
import {
  breakglassApprovePermission,
  breakglassBackstageTokenPrefix,
  breakglassIdentityHeader,
  breakglassIdentityTokenPrefix,
  breakglassTerminalProtocol,
} from '@tower-dev/backstage-plugin-breakglass-common';
import type { RouterOptions } from './options';
import { People, RefusedError } from './person';
import { segment } from './relay';
import type { Relay } from './relay';
import type { Session } from '@tower-dev/breakglass-portal';


const terminalPath = /^\/api\/v1\/clusters\/([^/]+)\/namespaces\/([^/]+)\/sessions\/([^/]+)\/terminal$/;

/**
 * terminalUpgrades relays the terminal WebSocket: the page's connection to
 * Backstage, Backstage's to the relay as the person. Backstage's backend
 * hands plugins no upgrade hook, so the first request through the router
 * subscribes to its server's upgrades (as Backstage's signals plugin does).
 */
export function terminalUpgrades(o: RouterOptions, people: People, relay: Relay) {
  const wss = new WebSocketServer({ noServer: true, clientTracking: false, handleProtocols: () => breakglassTerminalProtocol });
  let subscribed = false;
  let base: string | undefined;

  const refuse = (socket: Duplex, status: number, message: string) => {
    if (socket.destroyed) return;
    socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : 'Refused'}\r\n` +
      `Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`);
  };

  const upgrade = async (server: Server, req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that goes away mid-handshake must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    base ??= new URL(await o.discovery.getBaseUrl('breakglass')).pathname;
    const path = (req.url ?? '').split('?')[0];
    const m = path.startsWith(`${base}/`) ? terminalPath.exec(path.slice(base.length)) : null;
    if (!m) {
      // Not ours. Alone on the server, the upgrade goes on as a plain
      // request, as it would with no listener, so that a plugin that
      // subscribes as this one does still sees its first; the connection
      // closes after the answer.
      if (server.listenerCount('upgrade') === 1) {
        const res = new ServerResponse(req);
        res.shouldKeepAlive = false;
        res.assignSocket(socket as any);
        res.on('finish', () => socket.destroy());
        server.emit('request', req, res);
      }
      return;
    }
    let upgraded = false;
    let upstream: WebSocket | undefined;
    // A page that leaves before the relay answers leaves no connection
    // behind at the relay (it would hold the typing slot).
    socket.on('close', () => {
      if (!upgraded) upstream?.terminate();
    });
    try {
      if (!m.slice(1).every(x => segment.test(x))) {
        throw new RefusedError(400, 'BadRequest', 'the cluster, namespace and session are names');
      }
      // What ws would refuse in the handshake, refused before the relay is called.
      const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((x: string) => x.trim());
      if (req.method !== 'GET' || req.headers['sec-websocket-version'] !== '13' ||
        !/^[+/0-9A-Za-z]{22}==$/.test(String(req.headers['sec-websocket-key'] ?? '')) ||
        new Set(protocols).size !== protocols.length || protocols.includes('')) {
        throw new RefusedError(400, 'BadRequest', 'not a WebSocket handshake (version 13, a key, distinct subprotocols)');
      }
      // A browser sends both tokens as subprotocols; a program (the CLI
      // through Backstage) may send them as the REST calls' headers.
      const backstageToken = protocols.find(x => x.startsWith(breakglassBackstageTokenPrefix))?.slice(breakglassBackstageTokenPrefix.length) ??
        /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const idToken = protocols.find(x => x.startsWith(breakglassIdentityTokenPrefix))?.slice(breakglassIdentityTokenPrefix.length) ??
        (req.headers[breakglassIdentityHeader] as string | undefined);
      if (!protocols.includes(breakglassTerminalProtocol) || !backstageToken) {
        throw new RefusedError(401, 'Unauthenticated', `a terminal speaks ${breakglassTerminalProtocol} and sends the Backstage token (as ${breakglassBackstageTokenPrefix}<token>, or a Bearer header)`);
      }
      const credentials = await o.auth.authenticate(backstageToken);
      if (!o.auth.isPrincipal(credentials, 'user')) {
        throw new RefusedError(401, 'Unauthenticated', 'a terminal is opened by a person');
      }
      const p = await people.fromToken(credentials, idToken);
      const sessionPath = `/api/v1/clusters/${m[1]}/namespaces/${m[2]}/sessions/${m[3]}`;
      const s = await relay.json<Session>('GET', sessionPath, p);
      if (!p.asked(s)) {
        const [d] = await o.permissions.authorize([{ permission: breakglassApprovePermission }], { credentials });
        if (d.result !== 'ALLOW') {
          throw new RefusedError(403, 'Forbidden', `Backstage's permissions do not let ${p.user.userEntityRef} watch others' sessions`);
        }
      }
      if (socket.destroyed) return;
      // take=1 moves the requester's terminal here from another tab: passed on as it came.
      const take = new URLSearchParams((req.url ?? '').split('?')[1] ?? '').get('take') === '1' ? '?take=1' : '';
      const up = new WebSocket(`${relay.url.replace(/^http/, 'ws')}${sessionPath}/terminal${take}`, [breakglassTerminalProtocol], {
        headers: { authorization: `Bearer ${p.idToken}` },
        handshakeTimeout: 15000,
      });
      upstream = up;
      up.on('unexpected-response', (_r, answer) => {
        let text = '';
        answer.on('data', (c: Buffer) => { if (text.length < 4096) text += c.toString(); });
        answer.on('end', () => refuse(socket, answer.statusCode ?? 502, text));
      });
      up.on('error', e => {
        if (!upgraded) refuse(socket, 502, `the relay: ${e.message}`);
      });
      up.on('open', () => {
        upgraded = true;
        wss.handleUpgrade(req, socket, head, page => pipe(page, up));
      });
    } catch (e) {
      const r = e instanceof RefusedError ? e : new RefusedError(401, 'Unauthenticated', (e as Error).message);
      refuse(socket, r.status, r.message);
    }
  };

  return (req: Request, _res: Response, next: NextFunction) => {
    const server = (req.socket as any)?.server as Server | undefined;
    if (!subscribed && server) {
      subscribed = true;
      server.on('upgrade', (r: IncomingMessage, s: Duplex, h: Buffer) => {
        upgrade(server, r, s, h).catch(() => s.destroy());
      });
    }
    next();
  };
}

// Codes a close frame may carry (1005, 1006 and 1015 are only reported).
const sendable = (code: number) => code >= 1000 && code <= 4999 && ![1004, 1005, 1006, 1015].includes(code);

// pipe passes frames both ways as they are (binary stays binary: the
// terminal's bytes; text stays text: its control messages), and each end's
// close to the other. A relay that goes away without a close frame is told
// to the page as "reconnect" (1012), so its terminal tries again.
function pipe(page: WebSocket, upstream: WebSocket) {
  page.on('message', (data, binary) => upstream.readyState === WebSocket.OPEN && upstream.send(data, { binary }));
  upstream.on('message', (data, binary) => page.readyState === WebSocket.OPEN && page.send(data, { binary }));
  upstream.on('close', (code, reason) => page.close(sendable(code) ? code : 1012, reason.toString().slice(0, 120)));
  page.on('close', (code, reason) => upstream.close(sendable(code) ? code : 1000, reason.toString().slice(0, 120)));
  page.on('error', () => upstream.terminate());
  upstream.on('error', () => page.terminate());
}
