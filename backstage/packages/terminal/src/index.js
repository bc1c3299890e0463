// The breakglass terminal and recording player: one source for the relay's
// console (relay/console/web) and Tower's Backstage plugin.
export { openTerminal } from './terminal.js';
export { play, playerTime, sha256 } from './player.js';
