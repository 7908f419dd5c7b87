// Screenshots of a report page for the README and for looking at by hand: light and dark,
// 400 and 1400 px wide, the top of the page (what a person sees first) and each <section>.
// Usage: node bench/shots.mjs PAGE.html OUTDIR [chromium]
import { chromium } from "playwright-core";

const [page_, out, exe = "/usr/bin/chromium"] = process.argv.slice(2);
const url = new URL(`file://${page_}`).href;
const browser = await chromium.launch({ executablePath: exe, headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu"] });
try {
  for (const scheme of ["light", "dark"]) {
    for (const width of [1400, 400]) {
      const context = await browser.newContext({ colorScheme: scheme, viewport: { width, height: 900 } });
      const page = await context.newPage();
      await page.goto(url, { waitUntil: "load" });
      await page.screenshot({ path: `${out}/${scheme}-${width}-top.png` });
      const sections = await page.$$("section");
      for (let i = 0; i < sections.length; i++) {
        await sections[i].screenshot({ path: `${out}/${scheme}-${width}-section${i}.png` });
      }
      await context.close();
    }
  }
} finally {
  await browser.close();
}
