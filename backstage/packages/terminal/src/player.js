import * as AsciinemaPlayer from 'asciinema-player';

// The player skips pauses longer than this: a reviewer need not wait
// through an idle minute.
const idleTimeLimit = 2;

// play shows an asciicast v2 recording with asciinema's player.
export function play(el, castText) {
  return AsciinemaPlayer.create({ data: castText }, el, { fit: 'width', idleTimeLimit, preload: true, controls: true });
}

// playerTime is where a moment of the recording (seconds since its start,
// as the transcript and the command list count them) is on the player's
// timeline, which skips the pauses beyond idleTimeLimit: what to seek to.
export function playerTime(castText, seconds) {
  let at = 0;
  let last = 0;
  for (const line of castText.split('\n').slice(1)) {
    if (!line) continue;
    let t;
    try {
      [t] = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof t !== 'number') continue;
    if (t > seconds) break;
    at += Math.min(t - last, idleTimeLimit);
    last = t;
  }
  return at + Math.min(Math.max(seconds - last, 0), idleTimeLimit);
}
