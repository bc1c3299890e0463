// The console's walk: the plan (plan.js) in the relay's console, with the
// people of `make dev` signing in at the demo issuer's page, on one relay
// serving a Flight and a Ground cluster. This file is the console's way in;
// the plan is the same for Tower in Backstage.
const { T, main, triple } = require('./lib.js');

// adapter is the console's way in, for the plan and the benchmark.
function adapter(w, cfg) {
  const url = (where) => (where.startsWith('http') ? where : cfg.relay + where);
  const fe = {
    home: '/console/',
    recordings: '/console/recordings',
    url,
    sessionPage: (pathOrTriple, view) => `/console/sessions/${triple(pathOrTriple).join('/')}${view ? '/' + view : ''}`,

    // visit opens a console path (or a full link); a signed-out person goes
    // through the issuer's sign-in page and must land back on it.
    async visit(page, where) {
      const to = url(where);
      await page.goto(to);
      if (!page.url().startsWith(cfg.relay)) {
        await page.click(`button[value=${page.who}]`, { timeout: T });
        await page.waitForURL((u) => u.href.startsWith(cfg.relay), { timeout: T });
      }
      if (page.url() !== to) throw new Error(`${page.who} landed on ${page.url()}, not ${to}`);
      await page.waitForSelector('#signed-in-as', { timeout: T });
    },

    signIn: (page) => fe.visit(page, '/console/'),

    async tour(page) {
      await fe.visit(page, '/console/');
      await page.waitForSelector('main h1', { timeout: T });
      return { landing: await page.locator('main h1').innerText(), nav: await page.locator('#top nav a').allInnerTexts(), problems: '' };
    },

    // request fills the request form and answers the session's page path.
    async request(page, { cluster, pod, mode = 'live', container, processAccess, keepPod, reason, glass }) {
      await fe.visit(page, '/console/request');
      await page.selectOption('#cluster', cluster);
      await page.fill('#namespace', 'shop');
      await page.fill('#pod', pod);
      if (container) await page.fill('#container', container);
      await page.check(`#mode-${mode}`);
      if (processAccess) await page.check('#process-access');
      if (keepPod) await page.check('#keep-pod');
      await page.fill('#reason', reason);
      if (glass) {
        await page.click('#break-glass');
        await w.shot(page, 'break-glass-warning');
        await w.accessible(page, 'request, breaking the glass');
        await page.check('#glass-understood');
        await page.click('#glass-confirm');
      } else {
        await page.click('form button[type=submit].primary');
      }
      await page.waitForURL(/\/console\/sessions\//, { timeout: T });
      return new URL(page.url()).pathname;
    },

    // The console's notifications are the relay's (a chat, here a file):
    // its deep link into the console, and its words.
    notificationLink: async (_page, kind, session) => (await w.notification(kind, session)).link,
    notificationText: async (_page, kind, session) => {
      const n = await w.notification(kind, session);
      return `${n.kind}: ${n.decided || ''}`;
    },

    // api calls the relay from the page, as its own script would (cookie,
    // same origin): what the relay answers when a button is absent.
    api: (page, method, apiPath, body) => page.evaluate(async ([m, p, b]) => {
      const r = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json' }, body: b === undefined ? undefined : JSON.stringify(b) });
      return { status: r.status, body: await r.text() };
    }, [method, apiPath, body]),

    offersRequest: async (page) => (await page.locator('#top nav a', { hasText: 'Request a session' }).count()) > 0,

    // signOut: the header's Sign out button ends the person's sign-in (its
    // form posts with Origin: null under the console's no-referrer policy),
    // and the console sends them back through the issuer after it.
    async signOut(person) {
      await fe.visit(person, '/console/');
      await Promise.all([
        person.waitForURL((u) => u.pathname === '/auth/signed-out', { timeout: T }),
        person.click('form.who button[type=submit]'),
      ]);
      const out = { path: new URL(person.url()).pathname, text: await person.locator('body').innerText() };
      await w.shot(person, 'signed-out');
      await person.goto(cfg.relay + '/console/');
      out.signedOut = !person.url().startsWith(cfg.relay);
      out.after = person.url();
      return out;
    },
  };
  return fe;
}

module.exports = { adapter, scripts: '/console/assets/' };

if (require.main === module) {
  const cfg = JSON.parse(process.argv[2]);
  cfg.scripts = module.exports.scripts;
  main(cfg, (w) => adapter(w, cfg));
}
