// The breakglass terminal and recording player: one source for the relay's
// console (packages/console) and Tower's Backstage plugin.
export { openTerminal } from './terminal.js';
export { play, playerTime } from './player.js';
