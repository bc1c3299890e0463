import { useEffect, useRef, useState } from 'react';
import { useApi } from '@backstage/frontend-plugin-api';
import { openTerminal, TerminalStatus } from '@tower-dev/breakglass-terminal';
import '@xterm/xterm/css/xterm.css';
import { breakglassApiRef, Session } from '../api';

/** The session's terminal, the console's own code; read-only for a watcher. */
export function Terminal({ session, readOnly }: { session: Session; readOnly: boolean }) {
  const api = useApi(breakglassApiRef);
  const el = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState<string>('connecting');
  useEffect(() => {
    let term: { close(): void } | undefined;
    let live = true;
    api.terminal(session).then(({ url, credentials }) => {
      if (!live || !el.current) return;
      term = openTerminal(el.current, url, {
        readOnly,
        credentials,
        onStatus: (s: TerminalStatus, message?: string) => setStatus(message ? `${s}: ${message}` : s),
      });
    });
    return () => {
      live = false;
      term?.close();
    };
  }, [api, session.cluster, session.namespace, session.name, readOnly]); // eslint-disable-line react-hooks/exhaustive-deps
  return (
    <section aria-label={readOnly ? 'Terminal, watching read-only' : 'Terminal'}>
      {readOnly && <p><strong>Watching read-only</strong>: what you type goes nowhere.</p>}
      <p aria-live="polite">Terminal: {status}</p>
      <div ref={el} data-testid="terminal" style={{ height: 420, background: '#111418' }} />
    </section>
  );
}
