import { useEffect, useRef, useState } from 'react';
import { useApi } from '@backstage/frontend-plugin-api';
import Button from '@material-ui/core/Button';
import TextField from '@material-ui/core/TextField';
import Typography from '@material-ui/core/Typography';
import { play, playerTime } from '@tower-dev/breakglass-terminal';
import {
  anchoring, checkEvidence, evidenceFacts, verifyCommands, withheld, type Check, type Command, type Session, type SessionSearch,
} from '@tower-dev/breakglass-portal';
import 'asciinema-player/dist/bundle/asciinema-player.css';
import { breakglassApiRef } from '../api';
import { ErrorNote, Facts } from './common';

type Player = { dispose(): void; seek(t: number): Promise<void>; play(): Promise<void> };

// clock says seconds as m:ss.s, the way the player's bar counts.
const clock = (s: number) => `${Math.floor(s / 60)}:${(s % 60).toFixed(1).padStart(4, '0')}`;

/**
 * An ended session's recording, as the console shows it: the evidence's
 * facts, the hashes checked in the browser, the player, the files to
 * download, how to verify it without any portal, and what was typed.
 */
export function Recording({ session: s, mayPlay }: { session: Session; mayPlay: boolean }) {
  const api = useApi(breakglassApiRef);
  const el = useRef<HTMLDivElement>(null);
  const player = useRef<Player>();
  const [checks, setChecks] = useState<Check[]>();
  const [cast, setCast] = useState<string>();
  const [error, setError] = useState<Error>();
  const ev = s.status.evidence;
  useEffect(() => {
    if (!mayPlay || !ev?.manifestSHA256) return undefined;
    let live = true;
    // What was checked before (say, before the log took the manifest) is
    // not shown as what is checked now.
    setChecks(undefined);
    checkEvidence(api, s).then(
      got => {
        if (!live) return;
        setChecks(got.checks);
        setCast(got.cast);
        if (el.current) player.current = play(el.current, got.cast);
      },
      e => live && setError(e),
    );
    return () => {
      live = false;
      player.current?.dispose();
    };
    // Checked again once the log takes the manifest: the check then says so.
  }, [api, s.cluster, s.namespace, s.name, ev?.manifestSHA256, anchoring(s), mayPlay]); // eslint-disable-line react-hooks/exhaustive-deps
  if (!ev?.manifestSHA256) return <Typography role="status">The recording is being finalized: it shows here in a moment.</Typography>;
  const download = async (file: 'manifest' | 'cast' | 'transcript', as: string) => {
    const bytes = await api.recording(s, file);
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes as BlobPart]));
    a.download = as;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  const hint = verifyCommands(s);
  return (
    <section id="recording" aria-label="Recording">
      {s.status.approval?.processAccess && <Typography className="tag sensitive"><strong>Sensitive: the session had process access</strong></Typography>}
      <Facts rows={evidenceFacts(s).map(f => [f.label, <code key={f.id}>{f.value}</code>, f.id])} />
      {!mayPlay && <Typography role="alert" className="notice error">{withheld(s)}</Typography>}
      {mayPlay && (
        <>
          <ErrorNote error={error} />
          <ul className="checks">
            {(checks ?? []).map(c => (
              <li key={c.text} className={c.ok ? 'ok' : 'bad'}>{(c.ok ? '✓ ' : '✗ ') + c.text}</li>
            ))}
          </ul>
          <div ref={el} id="player" data-testid="player" style={{ maxWidth: 960 }} />
          <p>
            Download:{' '}
            <Button size="small" onClick={() => download('manifest', 'manifest.json')}>manifest</Button>
            <Button size="small" onClick={() => download('cast', 'recording.cast')}>recording</Button>
            <Button size="small" onClick={() => download('transcript', 'transcript.raw')}>transcript</Button>
          </p>
          <details id="verify-hint">
            <summary>Verify it yourself, without this portal</summary>
            <p>{hint.intro}</p>
            <pre>{hint.commands}</pre>
          </details>
          {cast && <Typed s={s} cast={cast} player={player} />}
        </>
      )}
    </section>
  );
}

/** What was typed: the commands rebuilt from the keys, and a search of the recording; each time plays from there. */
function Typed({ s, cast, player }: { s: Session; cast: string; player: { current?: Player } }) {
  const api = useApi(breakglassApiRef);
  const [commands, setCommands] = useState<Command[]>();
  const [error, setError] = useState<Error>();
  const [q, setQ] = useState('');
  const [stream, setStream] = useState<'both' | 'output' | 'input'>('both');
  const [found, setFound] = useState<SessionSearch>();
  useEffect(() => {
    api.commands(s).then(setCommands, setError);
  }, [api, s]);
  const from = (at: number) => (
    <button type="button" className="link" onClick={async () => { await player.current?.seek(playerTime(cast, at)); await player.current?.play(); }}>
      {clock(at)}
    </button>
  );
  return (
    <section id="typed" aria-labelledby="typed-title">
      <Typography variant="h6" component="h3" id="typed-title">What was typed</Typography>
      <Typography variant="body2" color="textSecondary">
        Rebuilt from the recorded keys. A line marked ? may not be what the shell ran (history, completion, a full-screen program): the recording has the exact keys.
      </Typography>
      <ErrorNote error={error} />
      {commands && commands.length === 0 && <p id="commands">Nothing was typed.</p>}
      {commands && commands.length > 0 && (
        <ol id="commands" className="commands">
          {commands.map((c, i) => (
            <li key={i} id={`command-${i}`} className={c.uncertain ? 'uncertain' : undefined}>
              {from(c.at)} <code>{c.line}</code>{c.uncertain ? ' ?' : ''}{c.ended !== 'enter' ? ` (${c.ended})` : ''}
              {c.why && <span className="help"> {c.why}</span>}
            </li>
          ))}
        </ol>
      )}
      <form role="search" className="inline" style={{ display: 'flex', gap: 8, alignItems: 'center' }}
        onSubmit={e => { e.preventDefault(); api.search(s, q, stream).then(r => { setFound(r); setError(undefined); }, setError); }}>
        <TextField id="search-q" label="Search the recording for" type="search" value={q} onChange={e => setQ(e.target.value)} required inputProps={{ minLength: 2, maxLength: 200 }} />
        <TextField select id="search-stream" label="in" value={stream} onChange={e => setStream(e.target.value as typeof stream)} SelectProps={{ native: true }}>
          <option value="both">output and input</option>
          <option value="output">output</option>
          <option value="input">input</option>
        </TextField>
        <Button id="search-button" type="submit" variant="outlined">Search</Button>
      </form>
      {found && (
        <>
          <p role="status">{`${found.matches.length}${found.truncated ? '+' : ''} match${found.matches.length === 1 ? '' : 'es'} for “${found.query}”.`}</p>
          <ol id="search-results" className="commands">
            {found.matches.map((m, i) => (
              <li key={i} id={`match-${i}`}>{from(m.at ?? 0)} {m.stream}: <code>{m.context}</code></li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
