/** What the terminal says about its connection. */
/** held and moderated: a moderated session's input waits for, or goes through with, an approver watching. */
export type TerminalStatus = 'connected' | 'reconnecting' | 'closed' | 'lost' | 'error' | 'held' | 'moderated';

export interface TerminalOptions {
  /** A watcher's terminal takes no input. */
  readOnly: boolean;
  onStatus(status: TerminalStatus, message?: string): void;
  /** The subprotocols that carry a portal's tokens, asked at each connection. */
  credentials?: () => Promise<string[]>;
}

/** Attaches xterm.js to a session's terminal WebSocket at wsURL. */
export function openTerminal(el: HTMLElement, wsURL: string, options: TerminalOptions): { close(): void };

/** Shows an asciicast v2 recording with asciinema's player. */
export function play(el: HTMLElement, castText: string): { dispose(): void; seek(t: number): Promise<void>; play(): Promise<void> };

/** Where a moment of the recording (seconds since its start) is on the player's timeline, which skips long pauses. */
export function playerTime(castText: string, seconds: number): number;

/** The SHA-256 of bytes, in hex. */
export function sha256(bytes: ArrayBuffer | Uint8Array): Promise<string>;
