import type { TerminalStatus } from '@tower-dev/breakglass-portal';

export interface TerminalOptions {
  /** A watcher's terminal takes no input. */
  readOnly: boolean;
  /** What the terminal says of its connection; the portal's terminalStatusText words it. */
  onStatus(status: TerminalStatus, message?: string): void;
  /** The subprotocols that carry a portal's tokens, asked at each connection. */
  credentials?: () => Promise<string[]>;
}

/** A session's open terminal. */
export interface OpenTerminal {
  /** Moves the requester's terminal here from another tab or window (after the status elsewhere or moved). */
  take(): void;
  close(): void;
}

/** Attaches xterm.js to a session's terminal WebSocket at wsURL. */
export function openTerminal(el: HTMLElement, wsURL: string, options: TerminalOptions): OpenTerminal;

/** Shows an asciicast v2 recording with asciinema's player. */
export function play(el: HTMLElement, castText: string): { dispose(): void; seek(t: number): Promise<void>; play(): Promise<void> };

/** Where a moment of the recording (seconds since its start) is on the player's timeline, which skips long pauses. */
export function playerTime(castText: string, seconds: number): number;
