// The approve-to-prompt benchmark: on one plane, in turn in the console and
// in Tower, bob approves alice's request on the Ground cluster and alice
// starts it; timed from bob's click to alice's page showing the approval
// (the event stream's push), to her terminal connected, and to the first
// command's answer. Each front end is walked as the plan walks it (its
// adapter); the rounds alternate, so both meet the same machine. Prints one
// JSON line: the samples, in milliseconds, by front end.
const { Walk, T, launch } = require('./lib.js');
const consoleFE = require('./console.js');
const towerFE = require('../backstage/walk.js');

const cfg = JSON.parse(process.argv[2]);

async function round(w, fe, alice, bob) {
  const path = await fe.request(alice, { cluster: 'ground', pod: cfg.pods.ground, mode: 'copy', reason: 'benchmark' });
  await w.phase(alice, 'Pending');
  await fe.visit(bob, fe.sessionPage(path, 'approve'));
  await bob.waitForSelector('#approve-button', { timeout: T });
  const clicked = Date.now();
  await bob.click('#approve-button');
  await w.phase(alice, 'Approved');
  const shown = Date.now();
  await alice.click('#start');
  await alice.waitForFunction(() => /^Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  const connected = Date.now();
  await alice.click('.terminal');
  await alice.keyboard.type('echo ready-$((40+2))');
  await alice.keyboard.press('Enter');
  await w.waitScreen(alice, 'ready-42');
  const answered = Date.now();
  await alice.click('#end');
  await w.phase(alice, 'Ended');
  return { approvalShown: shown - clicked, connected: connected - clicked, answered: answered - clicked };
}

(async () => {
  const browser = await launch(require('playwright-core').chromium);
  const out = { ok: false, samples: { console: [], backstage: [] } };
  const w = new Walk(browser, { ...cfg, scripts: '' });
  try {
    const fronts = [];
    for (const [name, mod] of [['console', consoleFE], ['backstage', towerFE]]) {
      const fe = mod.adapter(w, cfg);
      const [alice, bob] = await Promise.all(['alice', 'bob'].map((p) => w.person(p)));
      await fe.signIn(alice);
      await fe.signIn(bob);
      fronts.push({ name, fe, alice, bob });
    }
    for (let i = 0; i < cfg.rounds; i++) {
      for (const f of fronts) out.samples[f.name].push(await round(w, f.fe, f.alice, f.bob));
    }
    out.ok = true;
  } catch (e) {
    out.error = String(e.stack || e);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
