// The Backstage walk: the plan (../walk/plan.js) in Tower, Backstage's app
// built with Backstage's CLI, with the people of `make dev` signing in at the
// demo issuer through Backstage's OIDC popup. This file is Backstage's way
// in (sign-in, the component's Break glass tab, Backstage's notifications,
// the API through the backend plugin as the page calls it); the plan is the
// same as the console's.
const fs = require('fs');
const path = require('path');
const { T, main, triple } = require('../walk/lib.js');


// The notification kinds' titles, from the portal's vocabulary (generated
// from the Go side): a Backstage notification is found by its title.
const vocabulary = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'backstage', 'packages', 'portal', 'src', 'vocabulary.gen.ts'), 'utf8');
const title = (kind) => {
  const m = new RegExp(`"${kind.replace('.', '\\.')}": \\{ label: "([^"]+)"`).exec(vocabulary);
  if (!m) throw new Error(`no notification kind ${kind} in the vocabulary`);
  return m[1];
};
const shopTab = '/catalog/default/component/shop/break-glass';

// adapter is Tower's way in, for the plan and the benchmark.
function adapter(w, cfg) {
  const url = (where) => (where.startsWith('http') ? where : cfg.backstage + where);
  // What each person's page last sent the backend plugin: its Backstage
  // token and the ID token, replayed for the plan's API calls.
  const credentials = new Map();
  const watch = (page) => {
    if (page.watched) return;
    page.watched = true;
    page.on('request', (r) => {
      if (!r.url().startsWith(cfg.backstage + '/api/')) return;
      const h = r.headers();
      const c = credentials.get(page.who) ?? {};
      if (h.authorization) c.authorization = h.authorization;
      if (h['x-breakglass-identity']) c['x-breakglass-identity'] = h['x-breakglass-identity'];
      credentials.set(page.who, c);
    });
  };

  // signIn signs page's person in through the sign-in page's popup.
  async function signIn(page) {
    watch(page);
    await page.goto(cfg.backstage + '/');
    const popup = page.waitForEvent('popup', { timeout: T });
    await page.getByRole('button', { name: /sign in/i }).click({ timeout: T });
    const p = await popup;
    p.who = `${page.who}-popup`;
    // Waited on from before the click: the popup may close as soon as the
    // issuer's answer reaches Backstage's handler.
    const closed = p.waitForEvent('close', { timeout: T });
    closed.catch(() => {});
    await p.click(`button[value=${page.who}]`, { timeout: T });
    await closed.catch(async (e) => {
      await w.shot(p, 'sign-in-stuck').catch(() => {});
      const shows = await p.innerText('body').catch(() => '(nothing)');
      throw new Error(`${page.who}'s sign-in popup stayed open at ${p.url()}, showing: ${shows.slice(0, 300)} (${e.message})`);
    });
    await page.getByText('Tower: break-glass debug access').waitFor({ timeout: T });
  }

  const fe = {
    home: '/break-glass',
    recordings: '/break-glass/recordings',
    url,
    sessionPage: (pathOrTriple, view) => `/break-glass/sessions/${triple(pathOrTriple).join('/')}${view ? `?view=${view}` : ''}`,
    signIn,

    // tour: the landing page a person is shown after signing in, the
    // sidebar's entries, and the component's Overview (no card in error).
    async tour(page) {
      await fe.visit(page, '/');
      const landing = await page.locator('main h1, h1').first().innerText({ timeout: T });
      const nav = await page.locator('nav a').allInnerTexts();
      await fe.visit(page, '/catalog/default/component/shop');
      await page.getByText('About').first().waitFor({ timeout: T });
      await w.shot(page, 'overview');
      await w.accessible(page, 'overview');
      const problems = (await page.locator('main').innerText()).match(/Error[^\n]*|App context is not available/g)?.join('; ') ?? '';
      return { landing, nav, problems };
    },

    // visit opens a page of the app (or a full link); Backstage restores a
    // signed-in person's session by itself, as it did for the link's reader.
    async visit(page, where) {
      watch(page);
      await page.goto(url(where));
      if (!new URL(page.url()).href.startsWith(cfg.backstage)) throw new Error(`${page.who} left Backstage for ${page.url()}`);
    },

    // request asks from the shop component's tab, picking the pod from the
    // ones Backstage's Kubernetes view lists, and answers the session's page.
    async request(page, { cluster, pod, mode = 'live', container, processAccess, keepPod, reason, glass }) {
      await fe.visit(page, shopTab);
      await page.locator('#cluster').waitFor({ timeout: T });
      await page.selectOption('#cluster', cluster);
      await page.waitForSelector(`select#pod option[value="${pod}"]`, { state: 'attached', timeout: T });
      w.facts.podChoices ??= await page.locator('select#pod option').allInnerTexts();
      await page.selectOption('#pod', pod);
      await page.check(`#mode-${mode}`);
      if (processAccess) await page.check('#process-access');
      if (container) {
        if ((await page.locator('#container').evaluate((e) => e.tagName)) === 'SELECT') await page.selectOption('#container', container);
        else await page.fill('#container', container);
      }
      if (keepPod) await page.check('#keep-pod');
      await page.fill('#reason', reason);
      if (glass) {
        await page.click('#break-glass');
        await page.waitForSelector('#glass-understood', { timeout: T });
        // The dialog fades in: its picture is taken once it has.
        await page.waitForFunction(() => getComputedStyle(document.querySelector('.MuiDialog-container')).opacity === '1', null, { timeout: T });
        await w.shot(page, 'break-glass-warning');
        await w.accessible(page, 'request, breaking the glass');
        await page.check('#glass-understood');
        await page.click('#glass-confirm');
      } else {
        await page.click('#request-button');
      }
      await page.waitForURL(/\/break-glass\/sessions\//, { timeout: T });
      return new URL(page.url()).pathname;
    },

    // Backstage's notifications of page's person about session, of kind
    // (by its title), as its notifications API answers the person.
    async notification(page, kind, session) {
      const want = title(kind);
      if (!credentials.get(page.who)?.authorization) await fe.visit(page, '/notifications');
      for (const deadline = Date.now() + 2 * T; Date.now() < deadline; await page.waitForTimeout(500)) {
        const r = await page.request.get(cfg.backstage + '/api/notifications/notifications', { headers: { authorization: credentials.get(page.who)?.authorization ?? '' } });
        const found = ((await r.json().catch(() => ({}))).notifications ?? [])
          .find((n) => n.payload?.title?.startsWith(want) && (n.payload?.link ?? '').includes(`/${session}`));
        if (found) return found.payload;
      }
      throw new Error(`${page.who} was not notified ${want} about ${session}`);
    },
    notificationLink: async (page, kind, session) => {
      const n = await fe.notification(page, kind, session);
      // As a person would: the notifications page lists it, with its link.
      await page.goto(cfg.backstage + '/notifications');
      await page.locator(`a[href*="/${session}"]`).first().waitFor({ timeout: T });
      await w.shot(page, 'notification');
      return n.link;
    },
    notificationText: async (page, kind, session) => {
      const n = await fe.notification(page, kind, session);
      return `${n.title}: ${n.description}`;
    },

    // api calls the relay through the backend plugin with the tokens the
    // person's page sends it: what the layers answer when a button is absent.
    async api(page, method, apiPath, body) {
      let creds = credentials.get(page.who);
      if (!creds?.['x-breakglass-identity']) {
        await fe.visit(page, fe.home);
        await page.waitForSelector('.queue-title', { timeout: T });
        creds = credentials.get(page.who);
      }
      const r = await page.request.fetch(cfg.backstage + '/api/breakglass' + apiPath, {
        method,
        headers: { ...creds, 'content-type': 'application/json', 'x-breakglass-entity': 'component:default/shop' },
        data: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status(), body: await r.text() };
    },

    async offersRequest(page) {
      await fe.visit(page, shopTab);
      await page.waitForSelector('#request-button, [role=status].notice', { timeout: T });
      return (await page.locator('#request-button').count()) > 0;
    },

    // signOut: the settings page's menu signs the person out; Backstage
    // then asks them to sign in again.
    async signOut(person) {
      await fe.visit(person, '/settings');
      await person.getByRole('button', { name: /more/i }).first().click({ timeout: T });
      await person.getByRole('menuitem', { name: /sign out/i }).click({ timeout: T });
      await person.getByRole('button', { name: /sign in/i }).waitFor({ timeout: T });
      await w.shot(person, 'signed-out');
      await person.goto(cfg.backstage + '/break-glass');
      const signedOut = await person.getByRole('button', { name: /sign in/i }).waitFor({ timeout: T }).then(() => true, () => false);
      return { path: new URL(person.url()).pathname, text: await person.locator('body').innerText(), signedOut, after: person.url() };
    },
  };
  return fe;
}

module.exports = { adapter, scripts: '/static/' };

if (require.main === module) {
  const cfg = JSON.parse(process.argv[2]);
  cfg.scripts = module.exports.scripts;
  main(cfg, (w) => adapter(w, cfg));
}
