// Opens the terminal page in Debian's Chromium, types a command as a person
// would and waits for its output on xterm.js's screen; prints JSON.
const { chromium } = require('playwright-core');

(async () => {
  const [pageURL, type, want] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const result = { ok: false };
  try {
    const page = await browser.newPage();
    await page.goto(pageURL);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
    await page.click('#terminal');
    await page.keyboard.type(type);
    await page.keyboard.press('Enter');
    await page.waitForFunction((w) => window.screenText().includes(w), want, { timeout: 20000 });
    result.ok = true;
    result.screen = await page.evaluate(() => window.screenText());
    result.errors = await page.evaluate(() => window.relayErrors);
  } catch (e) {
    result.error = String(e);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(result));
})();
