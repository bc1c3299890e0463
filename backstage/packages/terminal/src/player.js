import * as AsciinemaPlayer from 'asciinema-player';

// play shows an asciicast v2 recording with asciinema's player.
export function play(el, castText) {
  return AsciinemaPlayer.create({ data: castText }, el, { fit: 'width', idleTimeLimit: 2, preload: true, controls: true });
}

export async function sha256(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}
