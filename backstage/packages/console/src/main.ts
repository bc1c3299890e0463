import '@xterm/xterm/css/xterm.css';
import 'asciinema-player/dist/bundle/asciinema-player.css';
import './style.css';
import { mayAnywhere, type Me } from '@tower-dev/breakglass-portal';
import { api, keepSignedIn } from './api';
import { errorText, h, link, notice } from './dom';
import { homePage, recordingsPage } from './pages/lists';
import { requestPage } from './pages/request';
import { sessionPage } from './pages/session';

/** A page renders into main and answers what stops it when the person leaves. */
export type Page = (main: HTMLElement, me: Me, ...params: string[]) => Promise<(() => void) | void>;

// The pages, by path under /console/. A notification's deep link is one of
// these; the relay sends a signed-out person through sign-in back to it.
const routes: [RegExp, Page][] = [
  [/^\/console\/?$/, homePage],
  [/^\/console\/request$/, requestPage],
  [/^\/console\/recordings$/, recordingsPage],
  [/^\/console\/sessions\/([^/]+)\/([^/]+)\/([^/]+)(?:\/(approve|review))?$/, sessionPage],
];

let me: Me;
let leave = () => {};

export function go(path: string) {
  history.pushState(null, '', path);
  void render();
}

async function render() {
  leave();
  leave = () => {};
  const main = document.getElementById('main')!;
  main.replaceChildren();
  for (const [re, page] of routes) {
    const m = location.pathname.match(re);
    if (!m) continue;
    try {
      leave = (await page(main, me, ...m.slice(1).map(x => (x === undefined ? '' : decodeURIComponent(x))))) || (() => {});
    } catch (e) {
      main.replaceChildren(notice('error', errorText(e)));
    }
    markCurrent();
    return;
  }
  main.replaceChildren(h('h1', {}, 'Not found'), h('p', {}, 'There is no such page. '), link('/console/', 'All sessions'));
}

function markCurrent() {
  for (const a of document.querySelectorAll('#top nav a')) {
    if (a.getAttribute('href') === location.pathname) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function header() {
  document.getElementById('top')!.replaceChildren(
    h('a', { class: 'brand', href: '/console/', 'data-route': true }, 'breakglass'),
    h('nav', { 'aria-label': 'Main' },
      link('/console/', 'Sessions'), mayAnywhere(me, 'request', 'breakGlass') ? link('/console/request', 'Request a session') : null,
      link('/console/recordings', 'Recordings')),
    h('form', { method: 'post', action: '/auth/logout', class: 'who' },
      h('span', { id: 'signed-in-as' }, 'Signed in as ', h('strong', {}, me.name)),
      h('button', { type: 'submit' }, 'Sign out')),
  );
}

document.addEventListener('click', e => {
  const a = (e.target as Element).closest('a[data-route]');
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  go(a.getAttribute('href')!);
});
window.addEventListener('popstate', () => void render());

(async () => {
  try {
    me = await api.me();
  } catch (e) {
    document.getElementById('main')!.replaceChildren(notice('error', errorText(e)));
    return;
  }
  keepSignedIn(me);
  header();
  await render();
})();
