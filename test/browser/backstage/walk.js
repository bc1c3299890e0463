// The Backstage walk: Tower's break-glass tab in a Backstage app built
// with Backstage's CLI, two people in two browser contexts signing in at
// the demo issuer through Backstage's OIDC popup. alice asks from the shop
// component's tab, bob approves from his notification's link, alice's
// terminal shows she is uid 65532 and cannot write, bob watches read-only,
// alice ends, and the recording plays with its hashes. Prints one JSON
// line: what it saw.
const { chromium } = require('playwright-core');
const { Walk, T, launch } = require('../walk/lib.js');

const cfg = JSON.parse(process.argv[2]);

// signIn signs page's person in through the sign-in page's popup.
async function signIn(w, page) {
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
  await page.waitForURL((u) => u.href.startsWith(cfg.backstage) && !/sign-in/.test(u.href), { timeout: T });
  await w.shot(page, 'signed-in');
}

// phase waits until the session page's title says want.
async function phase(page, want) {
  await page.getByText(new RegExp(`^Session s-[a-z0-9]+: ${want}`)).first().waitFor({ timeout: T });
}

// notificationLink waits for page's person's notification about session
// on Backstage's notifications page and answers its link.
async function notificationLink(w, page, session) {
  for (const deadline = Date.now() + T; Date.now() < deadline; await page.waitForTimeout(1000)) {
    await page.goto(cfg.backstage + '/notifications');
    const a = page.locator(`a[href*="/${session}"]`).first();
    if (await a.waitFor({ timeout: 3000 }).then(() => true, () => false)) {
      await w.shot(page, 'notification');
      return a.getAttribute('href');
    }
  }
  throw new Error(`${page.who} was not notified about ${session}`);
}

// glass: alice breaks the glass on a copy of the pod with process access
// (so the pod itself stays for the walk), bob reviews it from his queue,
// and its sensitive recording is refused to alice and played for bob.
async function glass(w, alice, bob) {
  await alice.goto(cfg.backstage + '/catalog/default/component/shop/break-glass');
  await pickPod(w, alice);
  await alice.getByLabel(/A copy of the pod/).check();
  await alice.getByLabel(/Process access/).check();
  await alice.locator('#bg-container').fill('web');
  await alice.getByLabel(/Break the glass/).check();
  await alice.getByText('The session starts without anyone approving it').waitFor({ timeout: T });
  await alice.locator('#bg-reason').fill('site down, nobody answers');
  await w.shot(alice, 'break-glass-warning');
  await w.accessible(alice, 'the break-glass tab, breaking the glass');
  await alice.getByRole('button', { name: 'Break the glass' }).click();
  await phase(alice, 'Approved');
  const session = alice.url().split('/').pop();
  w.facts.glass = { session };
  await alice.getByRole('button', { name: 'Start' }).click();
  await phase(alice, 'Active');
  await alice.getByRole('button', { name: 'End the session' }).click();
  await phase(alice, 'Ended');
  await alice.reload();
  w.facts.glass.aliceRecording = await alice.getByRole('alert').innerText({ timeout: T });
  await w.shot(alice, 'sensitive-refused');

  await bob.goto(cfg.backstage + '/break-glass');
  await bob.getByRole('link', { name: session }).click({ timeout: T });
  await phase(bob, 'Ended');
  await bob.locator('[data-testid=player] .ap-player').waitFor({ timeout: T });
  await bob.locator('#bg-review').fill('checked: a copy, nothing changed');
  await w.accessible(bob, 'the review');
  await bob.getByRole('button', { name: 'Review' }).click();
  await bob.getByText(/^by bob@example.com: checked/).waitFor({ timeout: T });
  w.facts.glass.reviewed = true;
  await w.shot(bob, 'reviewed');
}

// pickPod picks the walk's pod from the list Backstage's Kubernetes plugin
// found for the component (a select, not a typed name).
async function pickPod(w, page) {
  await page.locator('select#bg-pod').waitFor({ timeout: T });
  w.facts.podChoices = await page.locator('select#bg-pod option').allInnerTexts();
  await page.locator('select#bg-pod').selectOption(cfg.pod);
}

async function walk(w, alice, bob) {
  await signIn(w, alice);
  await signIn(w, bob);
  await glass(w, alice, bob);

  await alice.goto(cfg.backstage + '/catalog/default/component/shop/break-glass');
  await pickPod(w, alice);
  await alice.locator('#bg-reason').fill('checkout returns 500s');
  await w.accessible(alice, 'the break-glass tab');
  await w.shot(alice, 'request');
  await alice.getByRole('button', { name: 'Ask for approval' }).click();
  await phase(alice, 'Pending');
  const session = alice.url().split('/').pop();
  w.facts.session = session;
  await w.accessible(alice, 'the session, pending');

  // bob opens the link his notification carries.
  const link = await notificationLink(w, bob, session);
  w.facts.approvalLink = link;
  await bob.goto(new URL(link, cfg.backstage).href);
  await phase(bob, 'Pending');
  await w.accessible(bob, 'the approval');
  await w.shot(bob, 'approve');
  await bob.getByRole('button', { name: 'Approve' }).click();
  await phase(bob, 'Approved');

  await phase(alice, 'Approved');
  await alice.getByRole('button', { name: 'Start' }).click();
  await phase(alice, 'Active');
  await alice.getByText(/^Terminal: connected/).waitFor({ timeout: T });
  await alice.locator('[data-testid=terminal]').click();
  // The marker is computed, so the echo of what she typed never matches it.
  await alice.keyboard.type('echo uid=$(id -u); touch /written-by-alice || echo write-refused-$((6*7))');
  await alice.keyboard.press('Enter');
  w.facts.aliceScreen = await w.waitScreen(alice, 'write-refused-42');
  w.facts.uid = /uid=(\d+)/.exec(w.facts.aliceScreen.replace(/echo uid=\$\(id -u\)/, ''))?.[1];
  await w.shot(alice, 'terminal');
  await w.accessible(alice, 'the session, active');

  await bob.reload();
  await phase(bob, 'Active');
  await bob.getByText('Watching read-only').waitFor({ timeout: T });
  await bob.getByText(/^Terminal: connected/).waitFor({ timeout: T });
  await alice.keyboard.type('echo seen-by-$((6*7))');
  await alice.keyboard.press('Enter');
  await w.waitScreen(bob, 'seen-by-42');
  // bob's keys go nowhere: alice's screen never shows them.
  await bob.locator('[data-testid=terminal]').click();
  await bob.keyboard.type('echo typed-by-bob');
  await bob.keyboard.press('Enter');
  await alice.waitForTimeout(1000);
  w.facts.bobsTypingReached = (await w.screen(alice)).includes('typed-by-bob');
  // alice's page says who is attached, and the limits count down.
  await alice.getByText(/^Attached: .*bob@example.com \(watching\)/).waitFor({ timeout: T });
  w.facts.timers = await alice.getByText(/^Hard stop in/).locator('xpath=..').innerText();
  await w.shot(bob, 'watching');
  await w.accessible(bob, 'the session, watching');

  await alice.getByRole('button', { name: 'End the session' }).click();
  await phase(alice, 'Ended');
  await alice.reload();
  await alice.locator('[data-testid=player] .ap-player').waitFor({ timeout: T });
  await alice.getByText(/^[0-9a-f]{64}$/).first().waitFor({ timeout: T });
  w.facts.hashes = await alice.locator('section[aria-label=Recording] code').allInnerTexts();
  await w.shot(alice, 'recording');
  await w.accessible(alice, 'the recording');
}

(async () => {
  const browser = await launch(chromium);
  const w = new Walk(browser, cfg);
  const [alice, bob] = await Promise.all(['alice', 'bob'].map((p) => w.person(p)));
  const out = { ok: false };
  try {
    await walk(w, alice, bob);
    out.ok = true;
  } catch (e) {
    out.error = e.stack || String(e);
    await Promise.all([alice, bob].map((p) => w.shot(p, 'failed').catch(() => {})));
  } finally {
    out.facts = w.facts;
    out.a11y = w.a11y;
    out.checked = w.checked;
    out.pageErrors = { alice: alice.errors, bob: bob.errors };
    await browser.close();
    console.log(JSON.stringify(out));
  }
})();
