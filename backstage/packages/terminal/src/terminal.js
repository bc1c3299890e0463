import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { terminalClose, terminalProtocol } from '@tower-dev/breakglass-portal';

const encoder = new TextEncoder();

// openTerminal attaches xterm.js to a session's terminal WebSocket: the
// relay's own (the console: same origin, its session cookie authenticates
// it, and the relay checks the Origin) or a portal's in front of it (Tower
// in Backstage: credentials() answers the subprotocols that carry its
// tokens, asked again at each connection, as tokens expire). It fits the
// window, sends each new size, and reconnects after a network blip (the
// relay keeps the session for the disconnect limit). A watcher's terminal
// takes no input. The requester's terminal open in another tab is not
// retried (the two would take it from each other): the page is told
// (elsewhere, moved) and take() moves it here.
export function openTerminal(el, wsURL, { readOnly, onStatus, credentials = async () => [] }) {
  const term = new Terminal({ disableStdin: readOnly, cursorBlink: !readOnly, scrollback: 5000, fontSize: 14,
    screenReaderMode: false, theme: { background: '#111418', foreground: '#e8eaed' },
    // A link the pod prints (OSC 8) opens nothing: the pod's output is not
    // to be trusted with where a click goes.
    linkHandler: { activate: () => {} } });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(el);
  fit.fit();
  let ws;
  let closed = false;
  let failures = 0;
  let connections = 0;
  let firstFailure = 0;
  const sendSize = () => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
  };
  const connect = async (take = false) => {
    let extra;
    try {
      extra = await credentials();
    } catch (e) {
      onStatus('error', `signing the terminal in: ${e.message}`);
      return;
    }
    if (closed) return;
    ws = new WebSocket(take ? wsURL + (wsURL.includes('?') ? '&' : '?') + 'take=1' : wsURL, [terminalProtocol, ...extra]);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      failures = 0;
      // The relay shows each connection the recent screen first; a
      // reconnection starts from a clean one rather than repeat it. The
      // greeting is the page's, never sent to the shell or recorded: a
      // prompt printed before the relay attached (a kubelet streams only
      // what comes after) shows again only once Enter asks for it.
      if (connections++ > 0) term.reset();
      term.write(readOnly ? '\x1b[2m[watching the debug container: read-only]\x1b[0m\r\n'
        : '\x1b[2m[connected to the debug container: press Enter if no prompt shows]\x1b[0m\r\n');
      onStatus('connected');
      sendSize();
      if (!readOnly) term.focus();
    };
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') {
        const m = JSON.parse(e.data);
        // held and moderated: a moderated session's input waits for, or
        // goes through with, an approver watching.
        if (m.type === 'error' || m.type === 'held' || m.type === 'moderated') onStatus(m.type, m.message);
        return;
      }
      term.write(new Uint8Array(e.data));
    };
    ws.onclose = (e) => {
      if (closed) return;
      if (e.code === terminalClose.ended) {
        onStatus('closed', e.reason);
        return;
      }
      if (e.code === terminalClose.elsewhere || e.code === terminalClose.moved) {
        onStatus(e.code === terminalClose.elsewhere ? 'elsewhere' : 'moved', e.reason);
        return;
      }
      failures++;
      // Keep trying for two minutes: a relay that restarted takes its
      // sessions up again within about a minute (its heartbeats gone stale),
      // and the disconnect limit ends a session nobody watches after that.
      if (failures === 1) firstFailure = Date.now();
      if (Date.now() - firstFailure > 120000) {
        onStatus('lost');
        return;
      }
      onStatus('reconnecting');
      setTimeout(connect, Math.min(4000, 250 * 2 ** failures));
    };
  };
  term.onData((d) => {
    if (!readOnly && ws && ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(d));
  });
  term.onResize(sendSize);
  const observer = new ResizeObserver(() => fit.fit());
  observer.observe(el);
  connect();
  return {
    // take moves the requester's terminal here from another tab or window.
    take() {
      failures = 0;
      if (ws && ws.readyState === WebSocket.OPEN) return;
      onStatus('connecting');
      connect(true);
    },
    close() {
      closed = true;
      observer.disconnect();
      if (ws) ws.close(1000);
      term.dispose();
    },
  };
}
