// Opens a report page from disk in Debian's Chromium with playwright-core and reports what
// it saw. Usage: node drive.mjs '<json config>'; prints one line "RESULT <json>".
// Config: pageUrl, chromium, shots (directory or null), search (text to type), clickLine
// (index of the transcript line to click, or -1).
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
  ],
});
const result = { console: [], pageErrors: [], requests: [], shots: [] };
try {
  for (const scheme of ["light", "dark"]) {
    for (const width of [1400, 400]) {
      const context = await browser.newContext({ colorScheme: scheme, viewport: { width, height: 900 } });
      const page = await context.newPage();
      page.on("console", (msg) => {
        if (msg.type() === "error" || msg.type() === "warning") result.console.push(`${msg.type()}: ${msg.text()}`);
      });
      page.on("pageerror", (err) => result.pageErrors.push(String(err)));
      page.on("request", (req) => {
        const url = req.url();
        if (url !== cfg.pageUrl && !url.startsWith("data:")) result.requests.push(url);
      });
      const started = performance.now();
      await page.goto(cfg.pageUrl, { waitUntil: "load" });
      result.loadMs = Math.max(result.loadMs ?? 0, performance.now() - started);
      await page.waitForTimeout(200);
      if (cfg.shots) {
        const file = `${cfg.shots}/${scheme}-${width}.png`;
        await page.screenshot({ path: file, fullPage: true });
        result.shots.push(file);
      }
      if (scheme !== "light" || width !== 1400) {
        await context.close();
        continue;
      }
      result.texts = await page.$$eval(".item .text, .item summary, pre, h1, h3, .why, dd",
        (els) => els.map((e) => e.textContent));
      result.scripts = await page.$$eval("script", (els) => els.length);
      result.handlers = await page.evaluate(() =>
        Array.from(document.querySelectorAll("*")).flatMap((e) =>
          Array.from(e.attributes).filter((a) => a.name.startsWith("on")).map((a) => `${e.tagName}[${a.name}]`)));
      result.hrefs = await page.$$eval("a[href]", (els) => els.map((e) => e.getAttribute("href")));
      result.pwned = await page.evaluate(() => window.pwned === true);
      result.items = await page.$$eval(".items > *", (els) => els.length);
      if (cfg.clickLine >= 0 && (await page.$("#audio"))) {
        const lines = await page.$$(".line[data-t]");
        const line = lines[cfg.clickLine];
        result.clickedT = Number(await line.getAttribute("data-t"));
        // Where the click seeks to, read as the seek starts: once it plays on, the position
        // moves by however long this (loaded) machine takes to look again.
        await page.evaluate(() => {
          const a = document.getElementById("audio");
          a.addEventListener("seeking", () => { window.seekedTo = a.currentTime; }, { once: true });
        });
        await line.click();
        await page.waitForFunction(() => {
          const a = document.getElementById("audio");
          return a && a.readyState >= 1 && !a.seeking;
        });
        result.seekedTo = await page.evaluate(() => window.seekedTo ?? null);
        result.currentTime = await page.evaluate(() => document.getElementById("audio").currentTime);
        await page.evaluate(() => document.getElementById("audio").pause());
        await page.waitForTimeout(300);
        result.playing = await page.$$eval(".line.playing", (els) => els.map((e) => e.dataset.t));
        result.playhead = Number(await page.getAttribute("#playhead", "x"));
      }
      if (cfg.search) {
        await page.fill("#q", cfg.search);
        result.shownAfterSearch = await page.$$eval(".items > *", (els) => els.filter((e) => !e.hidden).length);
        result.count = await page.textContent("#count");
        await page.fill("#q", "");
      }
      for (const kind of cfg.uncheck ?? []) {
        await page.uncheck(`input[data-kind="${kind}"]`);
      }
      result.shownAfterUncheck = await page.$$eval(".items > *", (els) =>
        els.filter((e) => !e.hidden).map((e) => e.dataset.kind));
      await context.close();
    }
  }
} finally {
  await browser.close();
}
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
