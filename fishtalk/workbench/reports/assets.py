"""The report pages' one style sheet and one script (inline; the CSP names them by hash).

The script reads only the page's own markup (``data-*`` attributes): a transcript line
seeks the audio, the line being heard is highlighted and the playhead moves on the
waveform, and the search box and kind checkboxes hide what does not match.
"""

from __future__ import annotations

from typing import Final

STYLE: Final = """
:root{--bg:#fbfbfa;--fg:#1d1f21;--muted:#646a71;--card:#fff;--line:#e2e4e7;--user:#2563eb;
--agent:#0f8a5f;--tool:#8b5cf6;--bad:#c2410c;--ok:#15803d;--hi:#fff4c2;--mark:#94a3b8;
color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#15171a;--fg:#e6e6e3;--muted:#9aa1a9;
--card:#1e2125;--line:#33373d;--user:#7aa7ff;--agent:#4cc99a;--tool:#b79cff;--bad:#ff8a5c;
--ok:#4cc99a;--hi:#3b3413;--mark:#6b7280}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:1.2rem 1rem 3rem;background:var(--bg);
color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.45rem;margin:0 0 .6rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:1.8rem 0 .6rem;border-bottom:1px solid var(--line);
padding-bottom:.25rem}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:.4rem 1rem;
margin:0}
.facts div{min-width:0}.facts dt{color:var(--muted);font-size:.8rem}
.facts dd{margin:0;overflow-wrap:anywhere}
.banner{border:1px solid var(--bad);color:var(--bad);border-radius:6px;padding:.5rem .8rem;
margin:.8rem 0;overflow-wrap:anywhere}
.filters{position:sticky;top:0;z-index:2;display:flex;flex-wrap:wrap;gap:.4rem .9rem;
align-items:center;background:var(--bg);padding:.5rem 0;border-bottom:1px solid var(--line)}
.filters input[type=search]{flex:1 1 220px;min-width:0;padding:.35rem .55rem;border-radius:6px;
border:1px solid var(--line);background:var(--card);color:var(--fg);font:inherit}
#count{color:var(--muted);font-size:.85rem;margin-left:auto}
ol.items{list-style:none;margin:.6rem 0;padding:0}
.item{display:grid;grid-template-columns:4.2rem 4.2rem minmax(0,1fr);gap:.2rem .6rem;
padding:.4rem .5rem;border-radius:6px;border-left:3px solid transparent}
.item[hidden]{display:none}
.item time{color:var(--muted);font-variant-numeric:tabular-nums;font-size:.85rem;padding-top:.1rem}
.who{font-weight:600;font-size:.85rem;padding-top:.1rem}
.user .who{color:var(--user)}.agent .who{color:var(--agent)}.tool .who{color:var(--tool)}
.error .who{color:var(--bad)}
.text{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;min-width:0}
.line.seekable{cursor:pointer}.line.seekable:hover{background:var(--card)}
.line.playing{background:var(--hi);border-left-color:var(--agent)}
.badge{display:inline-block;font-size:.72rem;border:1px solid var(--line);border-radius:999px;
padding:0 .45rem;margin:0 .3rem 0 0;color:var(--muted);white-space:nowrap}
.badge.bad{color:var(--bad);border-color:var(--bad)}.badge.ok{color:var(--ok);border-color:var(--ok)}
details.card{background:var(--card);border:1px solid var(--line);border-radius:6px;
padding:.3rem .6rem;min-width:0}
details.card summary{cursor:pointer;overflow-wrap:anywhere}
pre{margin:.3rem 0;padding:.4rem .5rem;background:var(--bg);border-radius:4px;overflow:auto;
max-height:18rem;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.82rem}
.label{color:var(--muted);font-size:.78rem;margin-top:.3rem}
audio{width:100%;margin:.3rem 0}
.strip{width:100%;height:84px;display:block;cursor:pointer;background:var(--card);
border:1px solid var(--line);border-radius:6px}
.strip .mic{stroke:var(--user);stroke-width:1.5}
.strip .agent{stroke:var(--agent);stroke-width:1.5}.strip .axis{stroke:var(--line)}
.strip .head{fill:var(--bad)}
.legend{color:var(--muted);font-size:.8rem}
svg.chart{width:100%;height:auto;display:block;max-width:760px;min-width:520px}
.chart-box{overflow-x:auto;max-width:100%}
svg text{fill:var(--fg);font:11px system-ui,sans-serif}
svg text.dim{fill:var(--muted)}
svg .bar{fill:var(--agent)}svg .bar.s0{fill:var(--mark)}svg .bar.s1{fill:var(--tool)}
svg .bar.s2{fill:var(--user)}svg .bar.s3{fill:var(--agent)}svg .bar.s4{fill:var(--ok)}
svg .grid{stroke:var(--line)}svg .p50{stroke:var(--user);stroke-width:2}
svg .p95{stroke:var(--bad);stroke-width:2;stroke-dasharray:4 3}
.wf{margin:.5rem 0 1rem}.wf h3{font-size:.85rem;margin:.2rem 0;font-weight:600;
overflow-wrap:anywhere}
.test{display:block;background:var(--card);border:1px solid var(--line);border-radius:6px;
padding:.6rem .8rem;margin:.5rem 0}
.test.failed,.test.error{border-left:4px solid var(--bad)}
.test.passed{border-left:4px solid var(--ok)}
.test>h3{font-size:1rem;margin:0;overflow-wrap:anywhere}
li,.label{overflow-wrap:anywhere}
.why{margin:.3rem 0;overflow-wrap:anywhere}
a{color:var(--user)}
footer{margin-top:2.5rem;color:var(--muted);font-size:.8rem}
@media (max-width:560px){.item{grid-template-columns:3.6rem minmax(0,1fr)}
.filters input[type=search]{flex-basis:100%}
.item .who{grid-column:2}.item>.body{grid-column:1/-1}}
"""
"""The pages' style sheet: light and dark themes follow the system."""

SCRIPT: Final = """
"use strict";
(() => {
  const all = (sel) => Array.from(document.querySelectorAll(sel));
  const audio = document.getElementById("audio");
  const lines = all(".line[data-t]");
  const strip = document.getElementById("strip");
  const head = document.getElementById("playhead");
  const duration = strip ? Number(strip.dataset.duration) : 0;
  let current = null;
  const seek = (t) => {
    audio.currentTime = t;
    const played = audio.play();
    if (played) played.catch(() => {});
  };
  if (audio) {
    for (const line of lines) {
      line.classList.add("seekable");
      line.title = "Play from here";
      line.addEventListener("click", (ev) => {
        if (ev.target.closest("details, a")) return;
        seek(Number(line.dataset.t));
      });
    }
    const follow = () => {
      const t = audio.currentTime;
      let found = null;
      for (const line of lines) {
        if (Number(line.dataset.t) <= t + 0.05) found = line;
      }
      if (found !== current) {
        if (current) current.classList.remove("playing");
        if (found) found.classList.add("playing");
        current = found;
      }
      if (head && duration > 0) head.setAttribute("x", String(Math.min(1, t / duration) * 1000));
    };
    audio.addEventListener("timeupdate", follow);
    audio.addEventListener("seeked", follow);
    if (strip) {
      strip.addEventListener("click", (ev) => {
        const box = strip.getBoundingClientRect();
        seek(Math.max(0, (ev.clientX - box.left) / box.width) * duration);
      });
    }
  }
  const q = document.getElementById("q");
  const boxes = all("input[data-kind]");
  const items = all(".items > .item, .items > .test");
  const count = document.getElementById("count");
  const filter = () => {
    const needle = q ? q.value.trim().toLowerCase() : "";
    const on = new Set(boxes.filter((b) => b.checked).map((b) => b.dataset.kind));
    let shown = 0;
    for (const item of items) {
      const ok = on.has(item.dataset.kind) &&
        (!needle || item.textContent.toLowerCase().includes(needle));
      item.hidden = !ok;
      if (ok) shown += 1;
    }
    if (count) count.textContent = `${shown} of ${items.length} shown`;
  };
  if (q) q.addEventListener("input", filter);
  for (const box of boxes) box.addEventListener("change", filter);
  filter();
})();
"""
"""The pages' one script: seek and follow the audio, search and filter."""

__all__ = ["SCRIPT", "STYLE"]
