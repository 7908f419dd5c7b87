// Drives page/conformance.js in Debian's Chromium with playwright-core (no browser
// download: executablePath is the system Chromium). Usage:
//   node drive.mjs '<json config: pageUrl, chromium, userDataDir, timeoutMs, ...>'
// Prints one line "RESULT <json>" on stdout; the page's console goes to stderr.
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const launchedAt = performance.now();
const context = await chromium.launchPersistentContext(cfg.userDataDir, {
  executablePath: cfg.chromium,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
  ],
});
let result;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (msg) => process.stderr.write(`[page ${msg.type()}] ${msg.text()}\n`));
  page.on("pageerror", (err) => process.stderr.write(`[page error] ${err}\n`));
  await page.goto(cfg.pageUrl);
  const browserMs = performance.now() - launchedAt;
  result = await page.evaluate((c) => window.conformance.run(c), cfg);
  result.browserStartMs = browserMs;
} finally {
  await context.close();
}
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
