import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Transport } from './client';

/** A change to a session the person may see, as the relay's event stream says it. */
export interface SessionEvent {
  cluster: string;
  namespace?: string;
  name?: string;
  phase?: string;
  deleted?: boolean;
}

/** The pause before a page reads again after a change: changes close together are read once. */
export const settleMs = 300;

/**
 * watchSessions calls changed when a session the person may see changes,
 * read from the relay's event stream (/api/v1/events, Server-Sent Events),
 * through the portal's transport: the console's cookie, or Backstage's
 * two tokens (an EventSource cannot send headers, so it is read with
 * fetch). Changes close together are told once (settleMs); the one change
 * is passed when there was one, nothing when there were several or when
 * the stream opened again after a break in which changes may have been
 * missed. The relay ends each stream within minutes (or when the token
 * runs out); it is opened again, renewing the sign-in on a 401. What it
 * returns stops it.
 */
export function watchSessions(transport: Transport, changed: (e?: SessionEvent) => void): () => void {
  const stop = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending: SessionEvent | undefined;
  const soon = (e?: SessionEvent) => {
    if (stop.signal.aborted) return;
    if (timer) {
      pending = undefined;
      return;
    }
    pending = e;
    timer = setTimeout(() => {
      timer = undefined;
      if (!stop.signal.aborted) changed(pending);
    }, settleMs);
  };
  (async () => {
    let opened = 0;
    let failures = 0;
    while (!stop.signal.aborted) {
      try {
        let resp = await transport.fetch('/api/v1/events', { headers: { accept: 'text/event-stream' }, signal: stop.signal });
        if (resp.status === 401 && transport.renew && (await transport.renew())) {
          resp = await transport.fetch('/api/v1/events', { headers: { accept: 'text/event-stream' }, signal: stop.signal });
        }
        if (!resp.ok || !resp.body) throw new Error(`the event stream answered ${resp.status}`);
        failures = 0;
        if (opened++ > 0) soon();
        const events = resp.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
        for (let r = await events.read(); !r.done; r = await events.read()) {
          if (r.value.event !== 'session') continue;
          try {
            soon(JSON.parse(r.value.data) as SessionEvent);
          } catch {
            soon();
          }
        }
      } catch {
        if (stop.signal.aborted) return;
        failures++;
      }
      // The stream ended (its time is bounded) or broke: open it again,
      // at once after an end, backing off after failures.
      await new Promise(r => setTimeout(r, failures === 0 ? 250 : Math.min(10000, 500 * 2 ** failures)));
    }
  })();
  return () => {
    stop.abort();
    clearTimeout(timer);
  };
}
