// Opens a page from disk in Debian's Chromium (playwright-core) `runs` times, each in a new
// context (a cold open), and prints "RESULT {loadMs: [...]}": navigation to the load event.
// Usage: node open_page.mjs '{"pageUrl": ..., "chromium": ..., "runs": 3}'
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const loadMs = [];
try {
  for (let i = 0; i < cfg.runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await page.goto(cfg.pageUrl, { waitUntil: "load", timeout: 120000 });
    // The page's own clock: navigation start to the end of the load event.
    loadMs.push(await page.evaluate(() => {
      const [nav] = performance.getEntriesByType("navigation");
      return nav.loadEventEnd - nav.startTime;
    }));
    await context.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(`RESULT ${JSON.stringify({ loadMs })}\n`);
