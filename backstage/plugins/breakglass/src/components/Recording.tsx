import { useEffect, useRef, useState } from 'react';
import { useApi } from '@backstage/frontend-plugin-api';
import { play, sha256 } from '@tower-dev/breakglass-terminal';
import 'asciinema-player/dist/bundle/asciinema-player.css';
import { breakglassApiRef, Session } from '../api';

/** The recording played with asciinema's player, with its hashes and log entry. */
export function Recording({ session }: { session: Session }) {
  const api = useApi(breakglassApiRef);
  const el = useRef<HTMLDivElement>(null);
  const [hash, setHash] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let player: { dispose(): void } | undefined;
    api.recording(session).then(
      async r => {
        setHash(await sha256(r.bytes));
        if (el.current) player = play(el.current, r.text);
      },
      e => setError(e.message),
    );
    return () => player?.dispose();
  }, [api, session.cluster, session.namespace, session.name]); // eslint-disable-line react-hooks/exhaustive-deps
  const ev = session.status.evidence;
  if (error) return <p role="alert">The recording: {error}</p>;
  return (
    <section aria-label="Recording">
      <div ref={el} data-testid="player" />
      <dl>
        <dt>The cast's SHA-256, computed here</dt>
        <dd><code>{hash ?? '...'}</code></dd>
        <dt>The manifest's SHA-256 (what the transparency log anchors)</dt>
        <dd><code>{ev?.manifestSHA256 ?? 'not yet'}</code></dd>
        <dt>Transparency log entry</dt>
        <dd>{ev?.anchorPending ? 'pending' : ev?.logIndex !== undefined ? `index ${ev.logIndex}, ${ev.entryID}` : 'not anchored (no log configured)'}</dd>
      </dl>
    </section>
  );
}
