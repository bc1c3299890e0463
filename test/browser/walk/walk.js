// The console walk (issue 13): every feature in a real browser, with the
// people of `make dev`, on a Flight and a Ground cluster served by one
// relay. Prints what it saw as JSON on its last line; the Go test checks it
// against the evidence on disk and in Rekor.
const { chromium } = require('playwright-core');
const { Walk, apiPath, nameOf, T, launch } = require('./lib.js');

const cfg = JSON.parse(process.argv[2]);

async function flight(w, alice, bob) {
  // alice asks; the notification's deep link takes bob, signed out, through
  // sign-in to the approval.
  const path = await w.request(alice, { cluster: 'flight', pod: cfg.pods.flight, keepPod: true, reason: 'checkout returns 500s' });
  await w.phase(alice, 'Pending');
  await w.shot(alice, 'flight-requested');
  await w.accessible(alice, 'session, pending');
  const note = await w.notification('request.new', nameOf(path));
  await w.visit(bob, note.link);
  await bob.waitForSelector('#approve', { timeout: T });
  await w.shot(bob, 'flight-approval-page');
  await w.accessible(bob, 'approval');
  await bob.check('#approve-keep');
  await bob.click('#approve-button');
  await w.phase(bob, 'Approved');

  // alice starts and works; bob watches read-only.
  await w.phase(alice, 'Approved');
  const blip = await w.cuttable(alice);
  await alice.click('#start');
  await w.phase(alice, 'Active');
  // shop on flight is moderated: alone, alice's input is held; once bob
  // watches, it goes through.
  await alice.waitForFunction(() => /^Input held/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  const alone = await alice.locator('.term-status').innerText();
  await w.shot(alice, 'flight-moderated-held');
  await w.visit(bob, path);
  await bob.waitForSelector('#watching', { timeout: T });
  await bob.waitForFunction(() => /Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  await alice.waitForFunction(() => /idle limit in/.test(document.querySelector('.timers')?.textContent || ''), null, { timeout: T });
  // Before a key is pressed, the terminal says the shell is there.
  await alice.waitForFunction(() => /^Connected, moderated: /.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  const watchedStatus = await alice.locator('.term-status').innerText();
  const greeting = await w.waitScreen(alice, 'press Enter');
  await w.type(alice, 'echo watched-$((6*7)); id -u');
  await w.waitScreen(alice, 'watched-42');
  const watched = await w.waitScreen(bob, 'watched-42');
  await w.type(bob, 'echo bob-typed-this');
  await alice.waitForTimeout(1000);
  // alice's page names who has the terminal open.
  await alice.waitForFunction(() => /watching/.test(document.querySelector('.timers')?.textContent || ''), null, { timeout: T });
  w.facts.flight = { watcherSaw: watched.includes('watched-42'), aliceSawBobsTyping: (await w.screen(alice)).includes('bob-typed-this'),
    timers: await alice.locator('.timers').innerText(), greeting, moderation: { alone, watched: watchedStatus } };
  // A watcher who joins late (bob reloads) is shown the recent screen.
  await bob.reload();
  await bob.waitForFunction(() => /Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  w.facts.flight.lateWatcherSaw = (await w.waitScreen(bob, 'watched-42')).includes('watched-42');
  await w.shot(alice, 'flight-terminal');
  await w.shot(bob, 'flight-watching');
  await w.accessible(alice, 'session, active');
  await w.accessible(bob, 'session, watching');
  // A network blip: alice's terminal reconnects by itself, and the session goes on.
  blip();
  await alice.waitForFunction(() => /reconnecting/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  await w.shot(alice, 'flight-reconnecting');
  await alice.waitForFunction(() => /^Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  await w.type(alice, 'echo after-blip-$((6*7))');
  w.facts.flight.afterBlip = (await w.waitScreen(alice, 'after-blip-42')).includes('after-blip-42');
  w.facts.flight.watcherAfterBlip = (await w.waitScreen(bob, 'after-blip-42')).includes('after-blip-42');
  // alice asks for more time; bob, watching, gives it on his page; the
  // terminal goes on, the hard stop later by what was asked.
  const before = JSON.parse((await w.api(alice, 'GET', apiPath(path))).body);
  await alice.selectOption('#extend-duration', '15m');
  await alice.fill('#extend-reason', 'the gateway fix needs a second look');
  await alice.click('#extend');
  await alice.waitForFunction(() => /waiting for another person to decide/.test(document.querySelector('#extension')?.textContent || ''), null, { timeout: T });
  await bob.waitForSelector('#extend-approve', { timeout: T });
  await w.shot(bob, 'flight-extension-asked');
  await w.accessible(bob, 'session, extension asked');
  await bob.fill('#extend-comment', 'take it');
  await bob.click('#extend-approve');
  await alice.waitForSelector('#extension-0', { timeout: T });
  const after = JSON.parse((await w.api(alice, 'GET', apiPath(path))).body);
  await w.type(alice, 'echo extended-$((6*7))');
  w.facts.flight.extension = {
    listed: await alice.locator('#extension-0').innerText(),
    movedBy: (Date.parse(after.status.deadline) - Date.parse(before.status.deadline)) / 1000,
    grantBefore: before.status.grant.roleBinding, grantAfter: after.status.grant.roleBinding,
    typedAfter: (await w.waitScreen(alice, 'extended-42')).includes('extended-42'),
  };
  await w.shot(alice, 'flight-extended');
  await bob.fill('#end-reason', 'found it: the payment gateway timeout');
  await bob.click('#end');
  await w.phase(alice, 'Ended');
  await w.shot(alice, 'flight-ended-by-bob');
  w.facts.flight.session = nameOf(path);
  w.facts.flight.endedBy = (await alice.locator('.notice').allInnerTexts()).join(' ');

  // A second request, denied with a reason alice sees.
  const second = await w.request(alice, { cluster: 'flight', pod: cfg.pods.flight, reason: 'one more look' });
  const note2 = await w.notification('request.new', nameOf(second));
  await w.visit(bob, note2.link);
  await bob.fill('#deny-reason', 'not during the freeze');
  await bob.click('#deny-button');
  await w.phase(alice, 'Denied');
  w.facts.flight.denial = await alice.locator('.notice').first().innerText();
  await w.shot(alice, 'flight-denied');
}

async function ground(w, alice, bob) {
  w.facts.ground = [];
  for (const [mode, processAccess] of [['copy', false], ['heldCopy', false], ['live', true]]) {
    const path = await w.request(alice, { cluster: 'ground', pod: cfg.pods.ground, mode, processAccess, container: processAccess ? 'web' : undefined,
      reason: `ground ${mode}` });
    await w.visit(bob, path + '/approve');
    if (processAccess) await bob.check('#approve-process');
    await bob.click('#approve-button');
    await w.phase(bob, 'Approved');
    await w.phase(alice, 'Approved');
    await alice.click('#start');
    await w.phase(alice, 'Active');
    await w.type(alice, 'id; ls /var/run/secrets/kubernetes.io/serviceaccount; touch /probe-$((1+1)); echo checked-$((40+2))');
    const screen = await w.waitScreen(alice, 'checked-42');
    await w.shot(alice, `ground-${mode}-terminal`);
    await alice.click('#end');
    await w.phase(alice, 'Ended');
    const facts = { mode, processAccess, session: nameOf(path), screen };
    if (!processAccess) {
      await alice.waitForFunction(() => /index/.test(document.querySelector('#rekor-entry')?.textContent || ''), null, { timeout: 60000 });
      await alice.waitForSelector('#recording .checks li:nth-child(2)', { timeout: T });
      facts.checks = await alice.locator('#recording .checks li').allInnerTexts();
      facts.manifestSHA256 = await alice.locator('#manifest-sha256').innerText();
      facts.rekor = await alice.locator('#rekor-entry').innerText();
      facts.verifyHint = await alice.locator('#verify-hint pre').textContent();
      await alice.waitForSelector('#player .ap-wrapper, #player .ap-player', { timeout: T });
      await w.shot(alice, `ground-${mode}-recording`);
      // What was typed: the command rebuilt from the keys, and a search of
      // the output; a line's time plays the recording from there.
      await alice.waitForSelector('#command-0', { timeout: T });
      facts.commands = await alice.locator('#commands li code').allInnerTexts();
      await alice.fill('#search-q', 'checked-42');
      await alice.selectOption('#search-stream', 'output');
      await alice.click('#search-button');
      await alice.waitForSelector('#match-0', { timeout: T });
      facts.match = await alice.locator('#match-0').innerText();
      await alice.click('#command-0 button');
      await w.shot(alice, `ground-${mode}-typed`);
      if (mode === 'copy') await w.accessible(alice, 'session, what was typed');
    }
    w.facts.ground.push(facts);
  }
}

async function glass(w, alice, bob, carol) {
  // alice breaks the glass: no approval, everyone told, a review due.
  const path = await w.request(alice, { cluster: 'flight', pod: cfg.pods.flight, mode: 'copy', reason: 'site down, nobody answers', glass: true });
  await w.phase(alice, 'Approved');
  await alice.waitForSelector('#glass-broken', { timeout: T });
  await alice.click('#start');
  await w.phase(alice, 'Active');
  await alice.click('#end');
  await w.phase(alice, 'Ended');
  await alice.waitForSelector('#review', { timeout: T });
  const own = await w.api(alice, 'POST', apiPath(path) + '/review', { comment: 'all fine' });
  w.facts.glass = { session: nameOf(path), aliceReviewForm: await alice.locator('#review-comment').count(),
    aliceReviewAPI: own.status, aliceReviewBody: own.body, broadcast: (await w.notification('glass.broken', nameOf(path))).to };
  await w.shot(alice, 'glass-review-due');
  const note = await w.notification('glass.broken', nameOf(path));
  await w.visit(bob, note.link);
  await bob.fill('#review-comment', 'checked the recording: only reads');
  await bob.click('#review-button');
  await bob.waitForSelector('#reviewed', { timeout: T });
  w.facts.glass.reviewed = await bob.locator('#reviewed').innerText();
  await w.shot(bob, 'glass-reviewed');

  // A second one nobody reviews in time reaches the fallback reviewer.
  const late = await w.request(alice, { cluster: 'flight', pod: cfg.pods.flight, mode: 'copy', reason: 'again, at night', glass: true });
  await w.phase(alice, 'Approved');
  await alice.click('#start');
  await w.phase(alice, 'Active');
  await alice.click('#end');
  await w.phase(alice, 'Ended');
  const overdue = await w.notification('review.overdue', nameOf(late));
  await w.visit(carol, overdue.link);
  await carol.waitForSelector('#review-comment', { timeout: T });
  await w.shot(carol, 'overdue-review');
  await w.accessible(carol, 'review');
  await carol.fill('#review-comment', 'late, but reviewed: nothing wrong');
  await carol.click('#review-button');
  await carol.waitForSelector('#reviewed', { timeout: T });
  w.facts.overdue = { session: nameOf(late), to: overdue.to, link: overdue.link, reviewed: await carol.locator('#reviewed').innerText() };
  // carol reviews and nothing else: her pages offer only that.
  await w.visit(carol, '/console/');
  // The page renders its heading and queues at once, after its list comes.
  await carol.waitForSelector('main h1', { timeout: T });
  w.facts.carolHome = { nav: await carol.locator('#top nav').innerText(), headings: await carol.locator('main h2').allInnerTexts() };
  await w.shot(carol, 'home');
}

async function recordings(w, alice, bob) {
  // The process-access recording is sensitive: refused to alice (her own,
  // but she may not view sensitive recordings), played for bob.
  const live = w.facts.ground.find((g) => g.processAccess);
  const path = `/console/sessions/ground/shop/${live.session}`;
  await w.visit(alice, path);
  await alice.waitForSelector('#recording .notice.error', { timeout: T });
  w.facts.sensitive = { refusedToAlice: await alice.locator('#recording .notice.error').innerText(),
    aliceDownloads: await alice.locator('#recording a[download]').count() };
  await w.shot(alice, 'sensitive-refused');
  // The list marks it sensitive, says what was granted, and offers alice
  // nothing she cannot open.
  await w.visit(alice, '/console/recordings');
  const row = alice.locator('tr', { hasText: live.session });
  await row.waitFor({ timeout: T });
  w.facts.sensitive.aliceRow = await row.innerText();
  await w.shot(alice, 'recordings');
  await w.visit(bob, path);
  await bob.waitForSelector('#player .ap-wrapper, #player .ap-player', { timeout: T });
  w.facts.sensitive.bobChecks = await bob.locator('#recording .checks li').allInnerTexts();
  await w.shot(bob, 'sensitive-played');
  await w.accessible(bob, 'recording');
}

// missing: a request for a pod that is not there: the start says so and
// what to do, and alice withdraws it.
async function missing(w, alice, bob) {
  const path = await w.request(alice, { cluster: 'flight', pod: 'gone-since', reason: 'the pod from the alert' });
  await w.visit(bob, path + '/approve');
  await bob.click('#approve-button');
  await w.phase(alice, 'Approved');
  await alice.click('#start');
  await alice.waitForSelector('.out .notice.error', { timeout: T });
  w.facts.missing = { startError: await alice.locator('.out .notice.error').innerText() };
  // Chromium logs the start's 404 answer as a page error: expected here.
  const before = alice.errors.length;
  alice.errors = alice.errors.filter((e) => !/status of 404/.test(e));
  w.facts.missing.logged404 = before - alice.errors.length;
  await w.shot(alice, 'missing-pod');
  await alice.fill('#withdraw-reason', 'wrong pod');
  await alice.click('#withdraw');
  await w.phase(alice, 'Ended');
  w.facts.missing.ended = (await alice.locator('.notice').allInnerTexts()).join(' ');
  w.facts.missing.neverStarted = await alice.locator('#never-started').count();
}

async function never(w, dave, bob) {
  // dave may request, approve and review in shop, but never his own
  // session: the button is absent and the relay refuses anyway.
  await w.visit(bob, '/console/');
  const path = await w.request(dave, { cluster: 'flight', pod: cfg.pods.flight, reason: 'my own look' });
  const asked = Date.now();
  await w.phase(dave, 'Pending');
  // bob's queue, open all along, shows the request without a reload.
  await bob.locator('section', { hasText: 'Waiting for your decision' }).locator('tr', { hasText: nameOf(path) }).waitFor({ timeout: 10000 });
  w.facts.queue = { shownAfterMs: Date.now() - asked };
  await w.shot(bob, 'queue-current');
  const approve = await w.api(dave, 'POST', apiPath(path) + '/approve', {});
  w.facts.dave = { approveButtons: await dave.locator('#approve-button').count(), approveAPI: approve.status, approveBody: approve.body };
  await w.shot(dave, 'own-request');
  await w.visit(bob, path + '/approve');
  await bob.fill('#deny-reason', 'use the staging copy');
  await bob.click('#deny-button');
  await w.phase(dave, 'Denied');
  const review = await w.api(dave, 'POST', apiPath(path) + '/review', { comment: 'looks fine to me' });
  w.facts.dave.reviewAPI = review.status;
  w.facts.dave.reviewBody = review.body;
}

// signOut: the header's Sign out button ends the person's sign-in (its
// form posts with Origin: null under the console's no-referrer policy), and
// the console sends them back through the issuer after it.
async function signOut(w, person) {
  await w.visit(person, '/console/');
  await Promise.all([
    person.waitForURL((u) => u.pathname === '/auth/signed-out', { timeout: T }),
    person.click('form.who button[type=submit]'),
  ]);
  w.facts.signOut = { path: new URL(person.url()).pathname, text: await person.locator('body').innerText() };
  await w.shot(person, 'signed-out');
  await person.goto(w.cfg.relay + '/console/');
  w.facts.signOut.after = person.url();
}

(async () => {
  const browser = await launch(chromium);
  const w = new Walk(browser, cfg);
  const [alice, bob, carol, dave] = await Promise.all(['alice', 'bob', 'carol', 'dave'].map((p) => w.person(p)));
  const out = { ok: false };
  try {
    await w.visit(alice, '/console/');
    await flight(w, alice, bob);
    await ground(w, alice, bob);
    await glass(w, alice, bob, carol);
    await recordings(w, alice, bob);
    await never(w, dave, bob);
    await missing(w, alice, bob);
    await signOut(w, dave);
    await w.visit(bob, '/console/');
    await w.shot(bob, 'home');
    await w.accessible(bob, 'home');
    await w.visit(bob, '/console/recordings');
    await w.accessible(bob, 'recordings');
    out.ok = true;
  } catch (e) {
    out.error = String(e.stack || e);
    for (const p of [alice, bob, carol, dave]) await w.shot(p, 'failure').catch(() => {});
  } finally {
    out.facts = w.facts;
    out.a11y = w.a11y;
    out.checked = w.checked;
    out.pageErrors = Object.fromEntries([alice, bob, carol, dave].map((p) => [p.who, p.errors]));
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
