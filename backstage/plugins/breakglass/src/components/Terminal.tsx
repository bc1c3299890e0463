import { useEffect, useRef, useState } from 'react';
import { useApi } from '@backstage/frontend-plugin-api';
import Button from '@material-ui/core/Button';
import { openTerminal, type OpenTerminal } from '@tower-dev/breakglass-terminal';
import { terminalStatusText, type Session, type TerminalStatus } from '@tower-dev/breakglass-portal';
import '@xterm/xterm/css/xterm.css';
import { breakglassApiRef } from '../api';

/**
 * The session's terminal, the console's own code: read-only for a watcher.
 * Opened to type in a second tab, it says so and offers to move here.
 */
export function Terminal({ session, readOnly, onConnected }: { session: Session; readOnly: boolean; onConnected: () => void }) {
  const api = useApi(breakglassApiRef);
  const el = useRef<HTMLDivElement>(null);
  const term = useRef<OpenTerminal>();
  const [status, setStatus] = useState<{ what: TerminalStatus; detail?: string }>({ what: 'connecting' });
  useEffect(() => {
    let live = true;
    api.terminal(session).then(({ url, protocols }) => {
      if (!live || !el.current) return;
      term.current = openTerminal(el.current, url, {
        readOnly,
        credentials: protocols,
        onStatus: (what: TerminalStatus, detail?: string) => {
          if (what === 'connected') onConnected();
          setStatus({ what, detail });
        },
      });
    });
    return () => {
      live = false;
      term.current?.close();
    };
  }, [api, session.cluster, session.namespace, session.name, readOnly]); // eslint-disable-line react-hooks/exhaustive-deps
  const movable = status.what === 'elsewhere' || status.what === 'moved';
  return (
    <section aria-label={readOnly ? 'Session terminal (read-only)' : 'Session terminal'}>
      {readOnly && <p id="watching" className="watching"><strong>Watching (read-only): what you type is not sent</strong></p>}
      <p className="term-status" role="status">{terminalStatusText(status.what, status.detail, readOnly)}</p>
      {movable && (
        <Button id="move-terminal" variant="outlined" onClick={() => term.current?.take()}>Move the terminal here</Button>
      )}
      <div ref={el} className="terminal" data-testid="terminal" style={{ height: 420, background: '#111418', padding: 4 }} />
    </section>
  );
}
