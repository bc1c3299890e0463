import type { Session } from '@tower-dev/breakglass-portal';
import { playerTime } from '@tower-dev/breakglass-terminal';
import { api } from '../api';
import { errorText, h, notice } from '../dom';

// clock says seconds as m:ss.s, the way the player's bar counts.
const clock = (s: number) => `${Math.floor(s / 60)}:${(s % 60).toFixed(1).padStart(4, '0')}`;

interface Player {
  seek(t: number): Promise<void>;
  play(): Promise<void>;
}

// typedSection is what was typed in an ended session: the commands the
// relay rebuilt from the recorded keys (marked where the shell may have
// done what the keys do not show), and a search of the recording's output
// and input. Each line's time starts the player there.
export function typedSection(s: Session, castText: string, player: Player) {
  const from = (at: number) => h('button', { type: 'button', class: 'link', onclick: async () => {
    await player.seek(playerTime(castText, at));
    await player.play();
  } }, clock(at));
  const list = h('ol', { id: 'commands', class: 'commands' });
  const results = h('ol', { id: 'search-results', class: 'commands' });
  const said = h('div', { 'aria-live': 'polite' });
  const q = h('input', { type: 'search', id: 'search-q', minlength: 2, maxlength: 200, required: true });
  const stream = h('select', { id: 'search-stream' },
    h('option', { value: 'both' }, 'output and input'), h('option', { value: 'output' }, 'output'), h('option', { value: 'input' }, 'input'));
  const search = h('form', { class: 'inline', role: 'search', onsubmit: async (e: Event) => {
    e.preventDefault();
    said.replaceChildren();
    try {
      const r = await api.search(s, q.value, stream.value as 'input' | 'output' | 'both');
      const matches = r.matches ?? [];
      results.replaceChildren(...matches.map((m, i) => h('li', { id: `match-${i}` }, from(m.at ?? 0), ` ${m.stream}: `, h('code', {}, m.context ?? ''))));
      said.append(notice('info', `${matches.length}${r.truncated ? '+' : ''} match${matches.length === 1 ? '' : 'es'} for “${r.query}”.`));
    } catch (err) {
      said.append(notice('error', errorText(err)));
    }
  } }, h('label', { for: 'search-q' }, 'Search the recording for'), q, h('label', { for: 'search-stream' }, 'in'), stream,
  h('button', { type: 'submit', id: 'search-button' }, 'Search'));
  const section = h('section', { id: 'typed', 'aria-labelledby': 'typed-title' },
    h('h2', { id: 'typed-title' }, 'What was typed'),
    h('p', { class: 'help' }, 'Rebuilt from the recorded keys. A line marked ? may not be what the shell ran (history, completion, a full-screen program): the recording has the exact keys.'),
    list, search, said, results);
  (async () => {
    try {
      const commands = await api.commands(s);
      if (!commands.length) {
        list.replaceWith(h('p', { id: 'commands' }, 'Nothing was typed.'));
        return;
      }
      list.replaceChildren(...commands.map((c, i) => h('li', { id: `command-${i}`, class: c.uncertain ? 'uncertain' : null },
        from(c.at), ' ', h('code', {}, c.line), c.uncertain ? ' ?' : '', c.ended !== 'enter' ? ` (${c.ended})` : '',
        c.why ? h('span', { class: 'help' }, ` ${c.why}`) : null)));
    } catch (err) {
      list.replaceChildren(notice('error', errorText(err)));
    }
  })();
  return section;
}
