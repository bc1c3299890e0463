// Helpers for the walks of both front ends (plan.js): people in browser
// contexts of their own, sessions' pages, terminals, the relay's
// notifications, screenshots and axe-core. Nothing here knows a front end's
// way in: that is its adapter's (console.js, ../backstage/walk.js).
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
    // unauthorized counts the answers that said the sign-in had run out.
    page.unauthorized = 0;
    page.on('response', (r) => { if (r.status() === 401) page.unauthorized++; });
    page.on('pageerror', (e) => page.errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() !== 'error' || /status of 40[13]/.test(m.text())) return;
      // A terminal socket routed through the test (cuttable) is
      // Playwright's own in the page: a message the page sent as the relay
      // or the test closed the socket is passed on by Playwright's script,
      // which logs this. The front end's scripts guard every send; only
      // their own files (cfg.scripts) count here.
      if (/WebSocket is already in CLOSING or CLOSED state/.test(m.text()) && !(m.location().url || '').includes(this.cfg.scripts)) return;
      page.errors.push(`${m.text()} (${m.location().url || 'no script'})`);
    });
    page.who = name;
    return page;
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

  // phase waits until the session's page says its phase is want.
  async phase(page, want) {
    await page.waitForFunction((w) => document.querySelector('#session-title .phase')?.textContent === w, want, { timeout: T });
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

}

// A session's page in either front end ends .../sessions/CLUSTER/NAMESPACE/NAME.
const triple = (pagePath) => /(?:^|\/sessions\/)([^/?]+)\/([^/?]+)\/([^/?]+)/.exec(pagePath).slice(1);
const apiPath = (pagePath) => {
  const [c, ns, n] = triple(pagePath);
  return `/api/v1/clusters/${c}/namespaces/${ns}/sessions/${n}`;
};
const nameOf = (pagePath) => triple(pagePath)[2];

// launch starts Debian's Chromium headless, without the background
// connections this machine's closed network refuses.
function launch(chromium) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// main runs the plan with a front end's adapter and prints what it saw as
// JSON on its last line, for the Go test to check.
async function main(cfg, makeAdapter) {
  const { chromium } = require('playwright-core');
  const { run } = require('./plan.js');
  const browser = await launch(chromium);
  const w = new Walk(browser, cfg);
  const out = { ok: false };
  try {
    await run(w, makeAdapter(w));
    out.ok = true;
  } catch (e) {
    out.error = String(e.stack || e);
    for (const p of w.people || []) await w.shot(p, 'failure').catch(() => {});
  } finally {
    out.facts = w.facts;
    out.a11y = w.a11y;
    out.checked = w.checked;
    out.pageErrors = Object.fromEntries((w.people || []).map((p) => [p.who, p.errors]));
    out.unauthorized = Object.fromEntries((w.people || []).map((p) => [p.who, p.unauthorized]));
    await browser.close();
  }
  console.log(JSON.stringify(out));
}

module.exports = { Walk, apiPath, nameOf, triple, T, launch, main };
