// Helpers for the console walk: people signing in through the issuer's
// page, sessions' pages, terminals, notifications, screenshots.
const fs = require('fs');
const path = require('path');

const T = 30000;
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

class Walk {
  constructor(browser, cfg) {
    this.browser = browser;
    this.cfg = cfg;
    this.step = 0;
    this.facts = {};
    // a11y holds axe-core's findings (WCAG 2.1 A and AA) on each page checked.
    this.a11y = [];
    this.checked = [];
    fs.mkdirSync(cfg.artifacts, { recursive: true });
  }

  // person opens a browser context of their own, signed out.
  async person(name) {
    const ctx = await this.browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await ctx.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() !== 'error' || /status of 40[13]/.test(m.text())) return;
      // A terminal socket routed through the test (cuttable) is
      // Playwright's own in the page: a message the page sent as the relay
      // or the test closed the socket is passed on by Playwright's script,
      // which logs this. The console's scripts guard every send; only
      // their own files (/console/assets/) count here.
      if (/WebSocket is already in CLOSING or CLOSED state/.test(m.text()) && !(m.location().url || '').includes('/console/assets/')) return;
      page.errors.push(`${m.text()} (${m.location().url || 'no script'})`);
    });
    page.who = name;
    return page;
  }

  // visit opens a console path (or a full link); a signed-out person goes
  // through the issuer's sign-in page and must land back on it.
  async visit(page, where) {
    const url = where.startsWith('http') ? where : this.cfg.relay + where;
    await page.goto(url);
    if (!page.url().startsWith(this.cfg.relay)) {
      await page.click(`button[value=${page.who}]`, { timeout: T });
      await page.waitForURL((u) => u.href.startsWith(this.cfg.relay), { timeout: T });
    }
    if (page.url() !== url) throw new Error(`${page.who} landed on ${page.url()}, not ${url}`);
    await page.waitForSelector('#signed-in-as', { timeout: T });
  }

  async shot(page, name) {
    this.step++;
    await page.screenshot({ path: path.join(this.cfg.artifacts, `${String(this.step).padStart(2, '0')}-${page.who}-${name}.png`) });
  }

  // accessible runs axe-core on what page shows now. The script is handed
  // to the browser through DevTools, as a person's extension would be, not
  // through the page: the console's CSP allows no script but its own.
  async accessible(page, name) {
    await page.evaluate(axeSource);
    const r = await page.evaluate(() => window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }));
    this.checked.push(name);
    for (const v of r.violations) {
      this.a11y.push({ page: name, id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) });
    }
  }

  async phase(page, want) {
    await page.waitForFunction((w) => document.querySelector('h1 .phase')?.textContent === w, want, { timeout: T });
  }

  // request fills the request form and returns the session's page path.
  async request(page, { cluster, pod, mode = 'live', container, processAccess, keepPod, reason, glass }) {
    await this.visit(page, '/console/request');
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
      await this.shot(page, 'break-glass-warning');
      await this.accessible(page, 'request, breaking the glass');
      await page.check('#glass-understood');
      await page.click('#glass-confirm');
    } else {
      await page.click('form button[type=submit].primary');
    }
    await page.waitForURL(/\/console\/sessions\//, { timeout: T });
    return new URL(page.url()).pathname;
  }

  // cuttable routes page's terminal WebSockets through the test, so that
  // cut() can drop the current one as a network blip would; the page must
  // reconnect by itself.
  async cuttable(page) {
    let current = null;
    await page.routeWebSocket(/\/terminal$/, (ws) => {
      const server = ws.connectToServer();
      current = () => {
        ws.close({ code: 4000, reason: 'network blip' });
        server.close({ code: 1001, reason: 'network blip' });
      };
    });
    return () => current();
  }

  async screen(page) {
    return page.locator('.xterm-rows').innerText();
  }

  // type types as a person does once the page says the terminal is
  // connected (keys before that go nowhere, as on the screen).
  async type(page, text) {
    await page.waitForFunction(() => /^Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
    await page.click('.terminal');
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
  }

  async waitScreen(page, want) {
    await page.waitForFunction((w) => (document.querySelector('.xterm-rows')?.innerText || '').includes(w), want, { timeout: T });
    return this.screen(page);
  }

  // notification waits for the notification of kind about session (its
  // name), as the chat would show it, and returns it.
  async notification(kind, session, to) {
    const deadline = Date.now() + 90000;
    while (Date.now() < deadline) {
      const lines = fs.existsSync(this.cfg.notifications) ? fs.readFileSync(this.cfg.notifications, 'utf8').trim().split('\n') : [];
      for (const l of lines) {
        if (!l) continue;
        const e = JSON.parse(l);
        if (e.kind === kind && e.session === session && (!to || e.to === to)) return e;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`no ${kind} notification about ${session}`);
  }

  // api calls the relay from the page, as its own script would (cookie,
  // same origin): what the relay answers when a button is absent.
  async api(page, method, apiPath, body) {
    return page.evaluate(async ([m, p, b]) => {
      const r = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json' }, body: b === undefined ? undefined : JSON.stringify(b) });
      return { status: r.status, body: await r.text() };
    }, [method, apiPath, body]);
  }
}

const apiPath = (pagePath) => pagePath.replace(/^\/console\/sessions\/([^/]+)\/([^/]+)\/([^/]+).*$/, '/api/v1/clusters/$1/namespaces/$2/sessions/$3');
const nameOf = (pagePath) => pagePath.split('/')[5];

// launch starts Debian's Chromium headless, without the background
// connections this machine's closed network refuses.
function launch(chromium) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

module.exports = { Walk, apiPath, nameOf, T, launch };
