// The spec's test plan, walked in a browser by two people and more, one
// script for both front ends: the relay's console (console.js) and Tower in
// Backstage (../backstage/walk.js). A front end is an adapter (fe) that
// knows its own way in: signing in, asking for a session, its deep links,
// calling the API as its page does. Everything else (the session's page,
// its decision, terminal, limits, outcome, recording and review) is the
// same ids in both, from the one portal package, and is walked here once.
//
//   Flight with two people: request, approve with "keep the pod", watch
//     (moderated), more time, end by the approver, deny; exec refused (the
//     Go test, on the cluster).
//   Ground: a copy, a held copy, live with process access; non-root, no
//     token, read-only; the recording's hash, what was typed.
//   Glass broken, then reviewed by someone else; the fallback reviewer
//     told of an overdue one; a glass broken and never used, expired,
//     then reviewed.
//   A sensitive recording refused to the wrong person.
//   Never one's own; a second tab; a pod that is not there.
const { apiPath, nameOf, T } = require('./lib.js');

async function flight(w, fe, alice, bob) {
  // alice asks; the notification's link takes bob to the decision.
  const path = await fe.request(alice, { cluster: 'flight', pod: w.cfg.pods.flight, keepPod: true, reason: 'checkout returns 500s' });
  await w.phase(alice, 'Pending');
  await w.shot(alice, 'flight-requested');
  await w.accessible(alice, 'session, pending');
  const link = await fe.notificationLink(bob, 'request.new', nameOf(path));
  w.facts.approvalLink = link;
  await fe.visit(bob, link);
  await bob.waitForSelector('#approve', { timeout: T });
  await w.shot(bob, 'flight-approval-page');
  await w.accessible(bob, 'approval');
  w.facts.approvalPage = { offers: await bob.locator('#approve').innerText(), asked: Date.now() };
  await bob.check('#approve-keep');
  await bob.fill('#approve-comment', 'keep it for the postmortem');
  await bob.click('#approve-button');
  await w.phase(bob, 'Approved');
  w.facts.approvalPage.decided = await bob.locator('.approval').innerText();

  // alice starts and works; bob watches read-only.
  await w.phase(alice, 'Approved');
  const blip = await w.cuttable(alice);
  const started = Date.now();
  await alice.click('#start');
  await w.phase(alice, 'Active');
  // shop on flight is moderated: alone, alice's input is held; once bob
  // watches, it goes through.
  // Read as it matched: bob's page, still open on the session, may start
  // watching a moment later.
  const alone = await (await alice.waitForFunction(() => {
    const said = document.querySelector('.term-status')?.innerText || '';
    return /^Input held/.test(said) ? said : null;
  }, null, { timeout: T })).jsonValue();
  w.facts.startToHeldMs = Date.now() - started;
  await w.shot(alice, 'flight-moderated-held');
  await fe.visit(bob, fe.sessionPage(path));
  await bob.waitForSelector('#watching', { timeout: T });
  await bob.waitForFunction(() => /Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  await alice.waitForFunction(() => /idle limit in/.test(document.querySelector('.timers')?.textContent || ''), null, { timeout: T });
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
  const timers = await alice.locator('.timers').innerText();
  const timersAt = Date.now();
  const st = JSON.parse((await fe.api(alice, 'GET', apiPath(path))).body).status;
  w.facts.flight = { watcherSaw: watched.includes('watched-42'), aliceSawBobsTyping: (await w.screen(alice)).includes('bob-typed-this'),
    timers, timersAt, greeting, moderation: { alone, watched: watchedStatus }, deadline: st.deadline, grantExpires: st.grant.expiresAt };
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
  await secondTab(w, fe, alice, path);
  // alice asks for more time; bob, watching, gives it on his page; the
  // terminal goes on, the hard stop later by what was asked.
  const before = JSON.parse((await fe.api(alice, 'GET', apiPath(path))).body);
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
  const after = JSON.parse((await fe.api(alice, 'GET', apiPath(path))).body);
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
  w.facts.flight.endedBy = await alice.locator('#outcome').innerText();

  // A second request, denied with a reason alice sees, and is told of.
  const second = await fe.request(alice, { cluster: 'flight', pod: w.cfg.pods.flight, reason: 'one more look' });
  await fe.visit(bob, await fe.notificationLink(bob, 'request.new', nameOf(second)));
  await bob.fill('#deny-reason', 'not during the freeze');
  await bob.click('#deny-button');
  await w.phase(alice, 'Denied');
  w.facts.flight.denial = await alice.locator('#outcome').innerText();
  w.facts.flight.denialNotice = await fe.notificationText(alice, 'request.denied', nameOf(second));
  await w.shot(alice, 'flight-denied');
}

// secondTab: alice opens her running session in a second tab. It says her
// terminal is open elsewhere and offers to move it; moved, the first says
// so, and what she types in the second runs.
async function secondTab(w, fe, alice, path) {
  const tab = await alice.context().newPage();
  tab.who = 'alice-tab';
  tab.errors = [];
  await tab.goto(fe.url(fe.sessionPage(path)));
  await tab.waitForFunction(() => /another tab or window/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  const elsewhere = await tab.locator('.term-status').innerText();
  await w.shot(tab, 'second-tab');
  await tab.click('#move-terminal');
  await alice.waitForFunction(() => /moved to another tab or window/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  const moved = await alice.locator('.term-status').innerText();
  await w.type(tab, 'echo in-the-tab-$((6*7))');
  const typed = (await w.waitScreen(tab, 'in-the-tab-42')).includes('in-the-tab-42');
  // And back: the first tab takes it again, and the second is told.
  await alice.click('#move-terminal');
  await tab.waitForFunction(() => /moved to another tab or window/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  await alice.waitForFunction(() => /^Connected/.test(document.querySelector('.term-status')?.textContent || ''), null, { timeout: T });
  w.facts.secondTab = { elsewhere, moved, typed };
  await tab.close();
}

// settled is the texts of the elements sel matches once there are count
// of them and the first matches first, read in one look; or, if they never
// are, what shows when the wait ends, for the check to name.
async function settled(page, sel, count, first) {
  try {
    const got = await page.waitForFunction(([sel, count, first]) => {
      const texts = [...document.querySelectorAll(sel)].map(e => e.innerText);
      return texts.length === count && new RegExp(first).test(texts[0]) ? texts : false;
    }, [sel, count, first.source], { timeout: T });
    return await got.jsonValue();
  } catch {
    return page.locator(sel).allInnerTexts();
  }
}

async function ground(w, fe, alice, bob) {
  w.facts.ground = [];
  for (const [mode, processAccess] of [['copy', false], ['heldCopy', false], ['live', true]]) {
    const path = await fe.request(alice, { cluster: 'ground', pod: w.cfg.pods.ground, mode, processAccess, container: processAccess ? 'web' : undefined,
      reason: `ground ${mode}` });
    await fe.visit(bob, fe.sessionPage(path, 'approve'));
    await bob.waitForSelector('#approve-button', { timeout: T });
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
      // The page checks the recording again once the log takes its
      // manifest (clearing what it checked before): read the checks as
      // they settle, in one look, or what shows when they do not.
      facts.checks = await settled(alice, '#recording .checks li', 2, /the one the transparency log holds/);
      facts.manifestSHA256 = await alice.locator('#manifest-sha256').innerText();
      facts.manifestLabel = await alice.locator('#recording dt').first().innerText();
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

async function glass(w, fe, alice, bob, carol) {
  // alice breaks the glass: no approval, everyone told, a review due.
  const path = await fe.request(alice, { cluster: 'flight', pod: w.cfg.pods.flight, mode: 'copy', reason: 'site down, nobody answers', glass: true });
  await w.phase(alice, 'Approved');
  await alice.waitForSelector('#glass-broken', { timeout: T });
  await alice.click('#start');
  await w.phase(alice, 'Active');
  await alice.click('#end');
  await w.phase(alice, 'Ended');
  await alice.waitForSelector('#review', { timeout: T });
  const own = await fe.api(alice, 'POST', apiPath(path) + '/review', { comment: 'all fine' });
  w.facts.glass = { session: nameOf(path), aliceReviewForm: await alice.locator('#review-comment').count(),
    aliceReviewAPI: own.status, aliceReviewBody: own.body, broadcast: (await w.notification('glass.broken', nameOf(path))).to };
  await w.shot(alice, 'glass-review-due');
  const link = await fe.notificationLink(bob, 'glass.broken', nameOf(path));
  w.facts.glass.reviewLink = link;
  await fe.visit(bob, link);
  await bob.fill('#review-comment', 'checked the recording: only reads');
  await bob.click('#review-button');
  await bob.waitForSelector('#reviewed', { timeout: T });
  w.facts.glass.reviewed = await bob.locator('#reviewed').innerText();
  await w.shot(bob, 'glass-reviewed');

  // A second one nobody reviews in time reaches the fallback reviewer.
  const late = await fe.request(alice, { cluster: 'flight', pod: w.cfg.pods.flight, mode: 'copy', reason: 'again, at night', glass: true });
  await w.phase(alice, 'Approved');
  await alice.click('#start');
  await w.phase(alice, 'Active');
  await alice.click('#end');
  await w.phase(alice, 'Ended');
  const overdue = await w.notification('review.overdue', nameOf(late));
  await fe.visit(carol, overdue.link);
  await carol.waitForSelector('#review-comment', { timeout: T });
  await w.shot(carol, 'overdue-review');
  await w.accessible(carol, 'review');
  await carol.fill('#review-comment', 'late, but reviewed: nothing wrong');
  await carol.click('#review-button');
  await carol.waitForSelector('#reviewed', { timeout: T });
  w.facts.overdue = { session: nameOf(late), to: overdue.to, link: overdue.link, reviewed: await carol.locator('#reviewed').innerText() };
  // carol reviews and nothing else: her pages offer only that.
  await fe.visit(carol, fe.home);
  await carol.waitForSelector('.queue-title', { timeout: T });
  const headings = await carol.locator('.queue-title').allInnerTexts();
  w.facts.carolHome = { headings, mayRequest: await fe.offersRequest(carol) };
  await w.shot(carol, 'home');
}

async function recordings(w, fe, alice, bob) {
  // The process-access recording is sensitive: refused to alice (her own,
  // but she may not view sensitive recordings), played for bob.
  const live = w.facts.ground.find((g) => g.processAccess);
  const path = fe.sessionPage(`ground/shop/${live.session}`);
  await fe.visit(alice, path);
  await alice.waitForSelector('#recording .notice.error', { timeout: T });
  w.facts.sensitive = { refusedToAlice: await alice.locator('#recording .notice.error').innerText(),
    aliceDownloads: await alice.locator('#recording a[download], #recording button:has-text("manifest")').count() };
  await w.shot(alice, 'sensitive-refused');
  // The list marks it sensitive, says what was granted, and offers alice
  // nothing she cannot open.
  await fe.visit(alice, fe.recordings);
  const row = alice.locator('tr', { hasText: live.session });
  await row.waitFor({ timeout: T });
  w.facts.sensitive.aliceRow = await row.innerText();
  await w.shot(alice, 'recordings');
  await fe.visit(bob, path);
  await bob.waitForSelector('#player .ap-wrapper, #player .ap-player', { timeout: T });
  await bob.waitForSelector('#recording .checks li:nth-child(2)', { timeout: T });
  w.facts.sensitive.bobChecks = await bob.locator('#recording .checks li').allInnerTexts();
  await w.shot(bob, 'sensitive-played');
  await w.accessible(bob, 'recording');
}

// missing: a request for a pod that is not there. Where the front end can
// read the pods (Backstage's Kubernetes view), the request is refused; the
// console cannot, so the start says so and what to do, and alice withdraws.
async function missing(w, fe, alice, bob) {
  const asked = await fe.api(alice, 'POST', `/api/v1/clusters/flight/namespaces/shop/sessions`,
    { pod: 'gone-since', mode: 'live', duration: '30m', reason: 'the pod from the alert' });
  w.facts.missing = { requestStatus: asked.status, requestBody: asked.body };
  if (asked.status !== 201) return;
  const path = fe.sessionPage(`flight/shop/${JSON.parse(asked.body).name}`);
  await fe.visit(bob, fe.sessionPage(`flight/shop/${JSON.parse(asked.body).name}`, 'approve'));
  await bob.waitForSelector('#approve-button', { timeout: T });
  await bob.click('#approve-button');
  await fe.visit(alice, path);
  await w.phase(alice, 'Approved');
  await alice.click('#start');
  await alice.waitForSelector('.out .notice.error, .out [role=alert]', { timeout: T });
  w.facts.missing.startError = await alice.locator('.out').innerText();
  // Chromium logs the start's 404 answer as a page error: expected here.
  alice.errors = alice.errors.filter((e) => !/status of 404/.test(e));
  await w.shot(alice, 'missing-pod');
  await alice.fill('#withdraw-reason', 'wrong pod');
  await alice.click('#withdraw');
  await w.phase(alice, 'Ended');
  w.facts.missing.ended = await alice.locator('#outcome').innerText();
  w.facts.missing.neverStarted = await alice.locator('#never-started').count();
}

async function never(w, fe, dave, bob) {
  // dave may request, approve and review in shop, but never his own
  // session: the button is absent and the relay refuses anyway.
  await fe.visit(bob, fe.home);
  await bob.waitForSelector('.queue-title', { timeout: T });
  const path = await fe.request(dave, { cluster: 'flight', pod: w.cfg.pods.flight, reason: 'my own look' });
  const asked = Date.now();
  await w.phase(dave, 'Pending');
  // bob's queue, open all along, shows the request without a reload.
  await bob.locator('tr', { hasText: nameOf(path) }).first().waitFor({ timeout: 10000 });
  w.facts.queue = { shownAfterMs: Date.now() - asked };
  await w.shot(bob, 'queue-current');
  const approve = await fe.api(dave, 'POST', apiPath(path) + '/approve', {});
  w.facts.dave = { approveButtons: await dave.locator('#approve-button').count(), approveAPI: approve.status, approveBody: approve.body };
  await w.shot(dave, 'own-request');
  await fe.visit(bob, fe.sessionPage(path, 'approve'));
  await bob.fill('#deny-reason', 'use the staging copy');
  await bob.click('#deny-button');
  await w.phase(dave, 'Denied');
  const review = await fe.api(dave, 'POST', apiPath(path) + '/review', { comment: 'looks fine to me' });
  w.facts.dave.reviewAPI = review.status;
  w.facts.dave.reviewBody = review.body;
}

// unusedGlass: alice breaks the glass and never starts the session. It
// waits, Approved, while the rest of the plan runs, for the sweeper to
// expire it (the walk's plane expires an approval not started within 45 s).
async function unusedGlass(w, fe, alice) {
  const path = await fe.request(alice, { cluster: 'flight', pod: w.cfg.pods.flight, reason: 'site down, then it came back', glass: true });
  await w.phase(alice, 'Approved');
  await alice.waitForSelector('#glass-broken', { timeout: T });
  return path;
}

// expired: the glass broken and never used is shown Expired in the
// front end, still owes its review, and bob reviews it.
async function expired(w, fe, alice, bob, path) {
  await fe.visit(alice, fe.sessionPage(path));
  await alice.waitForFunction(() => document.querySelector('#session-title .phase')?.textContent === 'Expired', null, { timeout: 3 * T });
  await alice.waitForSelector('#outcome', { timeout: T });
  w.facts.expired = { session: nameOf(path), outcome: await alice.locator('#outcome').innerText(),
    aliceReviewForm: await alice.locator('#review-comment').count() };
  await w.shot(alice, 'glass-expired');
  await w.accessible(alice, 'session, expired');
  await fe.visit(bob, fe.sessionPage(path, 'review'));
  await bob.waitForSelector('#review-comment', { timeout: T });
  await bob.fill('#review-comment', 'never used: the site came back by itself');
  await bob.click('#review-button');
  await bob.waitForSelector('#reviewed', { timeout: T });
  w.facts.expired.reviewed = await bob.locator('#reviewed').innerText();
  await w.shot(bob, 'glass-expired-reviewed');
}

// run walks the whole plan as four people; what it saw is in w.facts.
async function run(w, fe) {
  const [alice, bob, carol, dave] = await Promise.all(['alice', 'bob', 'carol', 'dave'].map((p) => w.person(p)));
  w.people = [alice, bob, carol, dave];
  for (const p of w.people) await fe.signIn(p);
  // The front end's own pages around the plan: where a person lands, what
  // its navigation offers.
  w.facts.tour = await fe.tour(alice);
  const unused = await unusedGlass(w, fe, alice);
  await flight(w, fe, alice, bob);
  await ground(w, fe, alice, bob);
  await glass(w, fe, alice, bob, carol);
  await recordings(w, fe, alice, bob);
  await never(w, fe, dave, bob);
  await missing(w, fe, alice, bob);
  await expired(w, fe, alice, bob, unused);
  w.facts.signOut = await fe.signOut(dave);
  await fe.visit(bob, fe.home);
  await bob.waitForSelector('.queue-title', { timeout: T });
  await w.shot(bob, 'home');
  await w.accessible(bob, 'home');
  await fe.visit(bob, fe.recordings);
  await w.accessible(bob, 'recordings');
}

module.exports = { run };
