// raftspec viz: draws one run as a space-time diagram. Hand-written, no
// dependencies; the data is the JSON in #data (viz.Page in Go).
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const N = D.names.length, E = D.events, M = D.msgs, A = D.actions;
  const ROLES = ["Follower", "Candidate", "Leader"];
  const TYPES = ["RequestVoteRequest", "RequestVoteResponse", "AppendEntriesRequest", "AppendEntriesResponse"];
  const SHORT = ["RVReq", "RVResp", "AEReq", "AEResp"];
  const ROW = 22, LEFT = 56, MAXH = 8e6, B = 64;
  const rows = E.length + 1; // row 0 is Init, row k+1 is event k
  const $ = (id) => document.getElementById(id);
  const scroll = $("scroll"), svg = $("svg"), spacer = $("spacer"), panel = $("panel");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const name = (n) => (n > 0 ? D.names[n - 1] : "Nil");
  // num is the number an event is shown with: its seq in the trace, or its
  // position in a merge of several files (whose seqs are per file).
  const num = (k) => (k < 0 ? 0 : D.merged ? k + 1 : E[k].q);

  // ---- indexes built once -------------------------------------------------
  // sidx[n]: the events with a state of node n, in order; spos[k]: event k's
  // position in its node's list.
  const sidx = Array.from({ length: N + 1 }, () => []);
  const spos = new Int32Array(E.length).fill(-1);
  E.forEach((e, k) => { if (e.s && e.n) { spos[k] = sidx[e.n].length; sidx[e.n].push(k); } });
  // The latest state event of node n at or before event k (-1: none).
  function stateAt(n, k) {
    const a = sidx[n]; let lo = 0, hi = a.length - 1, r = -1;
    while (lo <= hi) { const mid = (lo + hi) >> 1; if (a[mid] <= k) { r = a[mid]; lo = mid + 1; } else hi = mid - 1; }
    return r;
  }
  const invNames = (D.inv && D.inv.names) || [];
  const invMask = new Map();
  if (D.inv && D.inv.marks) for (const [k, m] of D.inv.marks) invMask.set(k, m);
  const rejected = D.check && !D.check.ok ? D.check.event : -2;

  // Arrow segments: one per (message, event handling it), one per message
  // still in flight at the end (to the bottom), a stub per receive without
  // a send. Bucketed by rows so that a window finds its arrows quickly.
  const segM = [], segA = [], segB = [], segK = []; // message, from row, to row, kind
  const K_HANDLE = 0, K_STUB = 1, K_FLIGHT = 2;
  M.forEach((m, id) => {
    const from = m.s + 1; // row of the send (0 when no send: a stub)
    for (const h of m.h || []) {
      if (m.s < 0) { segM.push(id); segA.push(h + 1); segB.push(h + 1); segK.push(K_STUB); }
      else { segM.push(id); segA.push(from); segB.push(h + 1); segK.push(K_HANDLE); }
    }
    if (m.x < 0 && m.s >= 0) { segM.push(id); segA.push(from); segB.push(rows); segK.push(K_FLIGHT); }
  });
  const buckets = new Map(), longSegs = [];
  for (let s = 0; s < segM.length; s++) {
    const b0 = Math.floor(Math.min(segA[s], segB[s]) / B), b1 = Math.floor(Math.max(segA[s], segB[s]) / B);
    if (b1 - b0 > 64) { longSegs.push(s); continue; }
    for (let b = b0; b <= b1; b++) { let l = buckets.get(b); if (!l) buckets.set(b, (l = [])); l.push(s); }
  }
  const stamp = new Int32Array(segM.length);
  let stampNo = 0;
  function segsIn(r0, r1) {
    stampNo++;
    const out = [];
    for (let b = Math.floor(r0 / B); b <= Math.floor(r1 / B); b++) {
      for (const s of buckets.get(b) || []) {
        if (stamp[s] !== stampNo && Math.min(segA[s], segB[s]) <= r1 && Math.max(segA[s], segB[s]) >= r0) { stamp[s] = stampNo; out.push(s); }
      }
    }
    for (const s of longSegs) if (Math.min(segA[s], segB[s]) <= r1 && Math.max(segA[s], segB[s]) >= r0) out.push(s);
    return out;
  }

  // ---- logs: rebuilt on demand from the changes ---------------------------
  // Entries lo..hi (1-based) of node n's log after its state event k.
  function logRange(n, k, lo, hi) {
    const out = new Array(Math.max(0, hi - lo + 1));
    let cur = k;
    while (cur >= 0 && hi >= lo) {
      const st = E[cur].s;
      let pos = st.k + 1; // log index of the first appended entry
      for (const run of st.la || []) {
        for (let j = 1; j < run.length; j++, pos++) {
          if (pos >= lo && pos <= hi) out[pos - lo] = [run[0], run[j]];
        }
      }
      hi = Math.min(hi, st.k);
      const p = spos[cur];
      cur = p > 0 ? sidx[n][p - 1] : -1;
    }
    return out;
  }

  // ---- text ---------------------------------------------------------------
  function runsText(runs) {
    if (!runs || !runs.length) return "<<>>";
    return runs.map((r) => "t" + r[0] + ":" + r.slice(1).join(",")).join(" ");
  }
  function nEntries(runs) { let n = 0; for (const r of runs || []) n += r.length - 1; return n; }
  function msgText(m, long) {
    let s = `${long ? TYPES[m.y] : SHORT[m.y]} ${name(m.fr)}→${name(m.to)} term ${m.t}`;
    switch (m.y) {
      case 0: s += ` last (${m.li || 0}, t${m.lt || 0})`; break;
      case 1: s += m.g ? " granted" : " denied"; break;
      case 2: s += ` prev (${m.pi || 0}, t${m.pt || 0}) ${long ? "entries " + runsText(m.e) : "+" + nEntries(m.e)} commit ${m.ci || 0}` +
        (m.lc !== undefined ? ` leaderCommit ${m.lc}` : ""); break;
      case 3: s += m.ok ? ` success match ${m.mi || 0}` : " fail"; break;
    }
    return s;
  }
  function eventText(k) {
    if (k < 0) return "Init";
    const e = E[k], a = A[e.a], s = e.s;
    let t = `${a} ${name(e.n)}`;
    if (e.i) {
      const m = M[e.i - 1];
      if (a === "DropMessage" || a === "DuplicateMessage") t = `${a} ${msgText(m, false)}`;
      else t += ` ← ${name(m.fr)} ${SHORT[m.y]}` + (e.b ? ` [${e.b}]` : "");
    } else if (e.p) t += ` → ${name(e.p)}`;
    if (e.v !== undefined) t += ` v${e.v}`;
    if (a === "Crash" || a === "Corrupt") t += ` keeps ${e.c}`;
    if (s) {
      if (a === "Timeout" || a === "UpdateTerm") t += `  term ${s.t}`;
      if (a === "BecomeLeader") t += `  term ${s.t}`;
      if (a === "AdvanceCommitIndex") t += `  commit ${s.ci}`;
      if ((a === "Flush" || a === "FlushTo") && s.d !== undefined) t += `  durable ${s.d}`;
      if (a === "ClientRequest") t += `  log ${s.len}`;
      if (e.b === "append" || e.b === "conflict") t += `  log ${s.len}`;
      if (a === "Corrupt") t += "  TRUNCATED";
    }
    if (a === "SendAppendEntries" && e.o) t += ` prev ${M[e.o[0]].pi || 0} +${nEntries(M[e.o[0]].e)}`;
    return t;
  }
  function isNet(a) { return a === "DropMessage" || a === "DuplicateMessage"; }

  // ---- layout -------------------------------------------------------------
  let W = 120, width = 800, viewH = 600, spacerH = 0, totalH = rows * ROW + ROW;
  const laneX = (n) => LEFT + (n - 0.5) * W;
  function layout() {
    width = scroll.clientWidth - 16;
    viewH = scroll.clientHeight;
    W = Math.max(70, Math.min(170, (width - LEFT - 360) / N));
    spacerH = Math.min(totalH, MAXH);
    spacer.style.height = spacerH + "px";
    svg.setAttribute("width", width);
    svg.setAttribute("height", viewH);
    const head = $("lanesHead");
    head.innerHTML = D.names.map((nm, k) => `<span class="lanename" data-node="${esc(nm)}" style="left:${laneX(k + 1)}px">${esc(nm)}</span>`).join("") +
      `<span class="lanename muted" style="left:${LEFT + N * W + 12}px;transform:none">step</span>`;
    drawOverview();
  }
  function topPx() {
    if (spacerH <= viewH) return 0;
    return scroll.scrollTop * (totalH - viewH) / (spacerH - viewH);
  }
  function scrollToRow(r) {
    const want = Math.max(0, r * ROW - viewH / 2);
    scroll.scrollTop = spacerH <= viewH ? 0 : want * (spacerH - viewH) / (totalH - viewH);
  }

  // ---- drawing ------------------------------------------------------------
  let cur = -1; // the selected event (-1: Init)
  let hoverRow = -1, selMsg = -1;
  // shape draws an event's mark at (x, y); c is extra attributes.
  function shape(a, x, y, c, fill) {
    switch (a) {
      case "Crash": case "Restart":
        return `<path ${c} d="M${x + 1} ${y - 8}L${x - 5} ${y + 1}L${x - 1} ${y + 1}L${x - 2} ${y + 8}L${x + 5} ${y - 1}L${x + 1} ${y - 1}Z" style="fill:var(--crash);stroke:none"/>`;
      case "Corrupt":
        return `<g ${c}><rect x="${x - 6}" y="${y - 6}" width="12" height="12" style="fill:var(--corrupt)"/><path d="M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x + 4} ${y - 4}L${x - 4} ${y + 4}" style="stroke:#fff;stroke-width:2"/></g>`;
      case "BecomeLeader": {
        const pts = [];
        for (let j = 0; j < 10; j++) { const r = j % 2 ? 3.2 : 8, t = Math.PI / 5 * j - Math.PI / 2; pts.push((x + r * Math.cos(t)).toFixed(1) + "," + (y + r * Math.sin(t)).toFixed(1)); }
        return `<polygon ${c} points="${pts.join(" ")}" style="fill:var(--leader);stroke:none"/>`;
      }
      case "Timeout": return `<circle ${c} cx="${x}" cy="${y}" r="5" style="fill:#fff;stroke:var(--candidate);stroke-width:2.5"/>`;
      case "StepDown": return `<circle ${c} cx="${x}" cy="${y}" r="5" style="fill:#fff;stroke:var(--leader);stroke-width:2.5"/>`;
      case "Flush": case "FlushTo": return `<rect ${c} x="${x - 5}" y="${y - 5}" width="10" height="10" style="fill:var(--flush)"/>`;
      case "ClientRequest": return `<path ${c} d="M${x} ${y - 6}L${x + 6} ${y}L${x} ${y + 6}L${x - 6} ${y}Z" style="fill:var(--client)"/>`;
      case "AdvanceCommitIndex": return `<circle ${c} cx="${x}" cy="${y}" r="6" style="fill:#1a7f37"/>`;
      case "DropMessage": return `<path ${c} d="M${x - 5} ${y - 5}L${x + 5} ${y + 5}M${x + 5} ${y - 5}L${x - 5} ${y + 5}" style="stroke:var(--crash);stroke-width:2.5"/>`;
      case "DuplicateMessage": return `<g ${c} style="fill:#fff;stroke:#555;stroke-width:1.5"><rect x="${x - 6}" y="${y - 6}" width="8" height="8"/><rect x="${x - 2}" y="${y - 2}" width="8" height="8"/></g>`;
    }
    return `<circle ${c} cx="${x}" cy="${y}" r="4.5" style="fill:${fill || "#555"}"/>`;
  }
  function eventShape(k, x, y) {
    const e = E[k];
    const m = e.i ? M[e.i - 1] : e.o ? M[e.o[0]] : null;
    const fill = m ? ["var(--rvreq)", "var(--rvresp)", "var(--aereq)", "var(--aeresp)"][m.y] : "#555";
    return shape(A[e.a], x, y, `data-k="${k}" class="ev"`, fill);
  }
  const icon = (a, fill) => `<svg width="16" height="16" style="vertical-align:middle">${shape(a, 8, 8, "", fill)}</svg>`;
  // clip keeps an arrow's coordinates near the window (a message may cross
  // 10^5 rows).
  function clipLine(x0, y0, x1, y1, lo, hi) {
    const at = (y) => x0 + (x1 - x0) * ((y - y0) / (y1 - y0 || 1));
    if (y0 < lo && y1 > lo) { x0 = at(lo); y0 = lo; }
    if (y1 > hi && y0 < hi) { x1 = at(hi); y1 = hi; }
    return [x0, y0, x1, y1];
  }
  function draw() {
    const top = topPx();
    svg.style.top = scroll.scrollTop + "px";
    const r0 = Math.max(0, Math.floor(top / ROW) - 1), r1 = Math.min(rows - 1, Math.ceil((top + viewH) / ROW) + 1);
    const Y = (r) => r * ROW + ROW / 2 - top;
    const out = [];
    // rows
    for (let r = r0; r <= r1; r++) {
      const k = r - 1;
      let cls = "rowbg";
      if (k === cur) cls += " cur";
      else if (k === rejected) cls += " rejected";
      else if (invMask.has(k)) cls += " violated";
      out.push(`<rect class="${cls}" data-r="${r}" x="0" y="${Y(r) - ROW / 2}" width="${width}" height="${ROW}"/>`);
    }
    out.push(`<rect id="hover" class="rowbg hover" x="0" y="-100" width="${width}" height="${ROW}" style="pointer-events:none"/>`);
    // lanes, coloured by role
    for (let n = 1; n <= N; n++) {
      const x = laneX(n);
      let k0 = stateAt(n, r0 - 1), role = k0 >= 0 ? E[k0].s.r : 0, from = Y(r0) - ROW;
      const list = sidx[n];
      let p = k0 >= 0 ? spos[k0] + 1 : 0;
      for (; p < list.length && list[p] + 1 <= r1; p++) {
        const st = E[list[p]].s;
        if (st.r !== role) {
          const y = Y(list[p] + 1);
          out.push(`<line class="lane r${role}" data-node="${esc(D.names[n - 1])}" x1="${x}" x2="${x}" y1="${from}" y2="${y}"/>`);
          from = y; role = st.r;
        }
      }
      out.push(`<line class="lane r${role}" data-node="${esc(D.names[n - 1])}" x1="${x}" x2="${x}" y1="${from}" y2="${Y(r1) + ROW}"/>`);
    }
    // arrows
    const lo = -ROW * 2, hi = viewH + ROW * 2;
    const segs = segsIn(r0, r1);
    const hits = [];
    for (const s of segs) {
      const id = segM[s], m = M[id], kind = segK[s];
      const x0 = laneX(m.fr), x1 = laneX(m.to);
      let cls = `arrow t${m.y}`;
      if ((m.y === 1 && !m.g) || (m.y === 3 && !m.ok)) cls += " no";
      if (m.og) cls += " copy";
      if (m.ap) cls += " approx";
      if (kind === K_FLIGHT) cls += " flight";
      if (selMsg >= 0) cls += id === selMsg ? " sel" : " dim";
      let d;
      if (kind === K_STUB) {
        const y = Y(segB[s]);
        const sx = x1 + (x0 === x1 ? 26 : (x0 < x1 ? -28 : 28));
        d = `M${sx} ${y - ROW * 0.7}L${x1} ${y}`;
        out.push(`<text x="${sx}" y="${y - ROW * 0.7}" class="glyph" text-anchor="middle" style="fill:var(--bad)">?</text>`);
      } else {
        const ya = Y(segA[s]), yb = kind === K_FLIGHT ? Y(rows) : Y(segB[s]);
        if (m.fr === m.to) {
          const dx = Math.min(36, W * 0.35);
          d = `M${x0} ${ya}C${x0 + dx} ${ya} ${x1 + dx} ${yb} ${x1} ${yb}`;
        } else {
          const [a0, b0, a1, b1] = clipLine(x0, ya, x1, yb, lo, hi);
          d = `M${a0.toFixed(1)} ${b0.toFixed(1)}L${a1.toFixed(1)} ${b1.toFixed(1)}`;
        }
      }
      const marker = kind === K_FLIGHT ? "" : ` marker-end="url(#h${m.y})"`;
      out.push(`<path class="${cls}" data-m="${id}" data-s="${s}" d="${d}"${marker}/>`);
      hits.push(`<path class="arrow hit" data-m="${id}" d="${d}"/>`);
    }
    out.push(...hits);
    // events, seq numbers, labels
    const lx = LEFT + N * W + 12;
    for (let r = Math.max(r0, 1); r <= r1; r++) {
      const k = r - 1, e = E[k], y = Y(r);
      if (e.n) out.push(eventShape(k, laneX(e.n), y));
      if (e.s && e.n) {
        const p = spos[k], prev = p > 0 ? E[sidx[e.n][p - 1]].s.t : 1;
        if (e.s.t !== prev) out.push(`<text class="termtag" x="${laneX(e.n) + 8}" y="${y - 5}">t${e.s.t}</text>`);
      }
      out.push(`<text class="seqno" x="${LEFT - 8}" y="${y + 4}" text-anchor="end">${num(k)}</text>`);
      out.push(`<text class="label${isNet(A[e.a]) ? " net" : ""}" x="${lx}" y="${y + 4}">${esc(eventText(k))}</text>`);
    }
    if (r0 === 0) out.push(`<text class="label" x="${lx}" y="${Y(0) + 4}">Init: ${esc(configText())}</text>`);
    svg.innerHTML = `<defs>${[0, 1, 2, 3].map((t) => `<marker id="h${t}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" style="fill:var(--${["rvreq", "rvresp", "aereq", "aeresp"][t]})"/></marker>`).join("")}</defs>` + out.join("");
    moveHover();
    drawOverviewWindow();
  }
  function configText() {
    const c = D.config;
    let s = `profile ${c.profile}, ${c.servers} servers`;
    if (c.bugs) s += `, bugs ${c.bugs}`;
    if (c.production) s += ", production";
    if (c.source) s += `, written by ${c.source}`;
    return s;
  }
  function moveHover() {
    const h = document.getElementById("hover");
    if (h) h.setAttribute("y", hoverRow < 0 ? -100 : hoverRow * ROW - topPx());
  }

  // ---- overview -----------------------------------------------------------
  const ov = $("overview");
  let ovBase = null;
  function drawOverview() {
    const h = ov.clientHeight, w = ov.clientWidth;
    ov.width = w; ov.height = h;
    const g = ov.getContext("2d");
    g.clearRect(0, 0, w, h);
    const mark = (k, color) => { g.fillStyle = color; g.fillRect(0, Math.floor((k + 1) / rows * h), w, 2); };
    E.forEach((e, k) => {
      const a = A[e.a];
      if (a === "Crash" || a === "Restart") mark(k, "#d32f2f");
      else if (a === "Corrupt") mark(k, "#7b3f00");
      else if (a === "BecomeLeader") mark(k, "#1f5fbf");
    });
    for (const [k] of invMask) mark(k, "#c2185b");
    if (rejected >= 0) mark(rejected, "#000");
    ovBase = g.getImageData(0, 0, w || 1, h || 1);
  }
  function drawOverviewWindow() {
    if (!ovBase) return;
    const g = ov.getContext("2d"), h = ov.height;
    g.putImageData(ovBase, 0, 0);
    const top = topPx();
    g.strokeStyle = "#444";
    g.strokeRect(0.5, top / totalH * h, ov.width - 1, Math.max(3, viewH / totalH * h));
    g.fillStyle = "#f0b400";
    g.fillRect(0, (cur + 1) / rows * h - 1, ov.width, 3);
  }
  ov.addEventListener("click", (ev) => {
    const r = Math.floor(ev.offsetY / ov.clientHeight * rows);
    go(Math.min(E.length - 1, r - 1));
  });

  // ---- the panel: the selected event and every node's state after it -----
  function termColor(t) { return `hsl(${(t * 67) % 360} 55% 42%)`; }
  function logHTML(n, k, st) {
    const len = st ? st.len : 0;
    if (!len) return `<div class="log"><span class="muted">empty log</span></div>`;
    const SHOW = 48, lo = Math.max(1, len - SHOW + 1);
    const ents = logRange(n, k, lo, len);
    const dur = st.d !== undefined ? st.d : len, ci = st.ci;
    let h = `<div class="log" data-len="${len}">`;
    if (lo > 1) h += `<span class="gap">… ${lo - 1} more</span>`;
    ents.forEach((e, j) => {
      const idx = lo + j;
      const cls = "ent" + (idx > dur ? " unsynced" : "") + (idx <= ci ? " committed" : "");
      h += `<span class="${cls}" title="index ${idx}, term ${e[0]}, value ${e[1]}${idx > dur ? ", not yet fdatasync'd" : ""}${idx <= ci ? ", committed here" : ""}" style="background:${termColor(e[0])}">${e[0]}</span>`;
      if (idx === dur && dur < len) h += `<span class="mark" title="durableLen">| durable</span>`;
    });
    return h + "</div>";
  }
  function nodeHTML(n, k) {
    const sk = stateAt(n, k), st = sk >= 0 ? E[sk].s : null;
    const nm = esc(D.names[n - 1]);
    const role = st ? ROLES[st.r] : "Follower";
    const acting = k >= 0 && E[k].n === n ? " acting" : "";
    let h = `<div class="node${acting}" data-node="${nm}"><div class="head"><span class="name">${nm}</span>` +
      `<span class="role role-${role}">${role}</span><span>term <b class="term">${st ? st.t : 1}</b></span>` +
      `<span>votedFor <b class="votedFor">${st ? esc(name(st.vf)) : "Nil"}</b></span>` +
      `<span>commit <b class="commit">${st ? st.ci : 0}</b></span>`;
    if (!st || st.d !== undefined) h += `<span>durable <b class="durable">${st ? st.d : 0}</b></span>`;
    if (st && st.lc !== undefined) h += `<span>learned <b class="learned">${st.lc}</b></span>`;
    if (st && st.vd) h += `<span class="verdict ${st.vd === "TRUNCATED" ? "bad" : ""}">${st.vd}${st.ta ? " at term " + st.ta : ""}</span>`;
    h += `<span>log <b class="loglen">${st ? st.len : 0}</b></span></div>`;
    h += logHTML(n, sk, st);
    if (st && st.vg) h += `<div class="muted">votes granted {${st.vg.map(name).join(", ")}} of responded {${(st.vr || []).map(name).join(", ")}}</div>`;
    if (st && st.r === 2 && st.mi) h += `<div class="muted">matchIndex ${st.mi.map((v, j) => name(j + 1) + ":" + v).join(" ")}${st.ni ? " · nextIndex " + st.ni.map((v, j) => name(j + 1) + ":" + v).join(" ") : ""}</div>`;
    return h + "</div>";
  }
  function bagAt(k) {
    const out = [];
    for (let id = 0; id < M.length; id++) {
      const m = M[id];
      const born = m.og ? m.da - 1 : m.s;
      if (born <= k && (m.x < 0 || m.x > k) && !(m.s < 0 && (m.h || [])[0] > k)) out.push(id);
    }
    return out;
  }
  function panelHTML() {
    const k = cur;
    let h = `<div class="event"><b>${k < 0 ? "Init" : "event " + num(k)}</b>${D.merged && k >= 0 ? ` <span class="muted">(${esc(D.files[E[k].f || 0].split("/").pop())}, line ${E[k].q})</span>` : ""}<br><code>${esc(eventText(k))}</code>`;
    if (k >= 0) {
      const e = E[k];
      if (e.i) h += `<div>${e.ik === "x" ? "drops" : e.ik === "d" ? "duplicates" : e.ik === "h" ? "handles (the message stays in the bag)" : "consumes"}: <code>${esc(msgText(M[e.i - 1], true))}</code>` +
        `${M[e.i - 1].s >= 0 ? ` <a href="#" data-go="${M[e.i - 1].s}">sent at event ${num(M[e.i - 1].s)}</a>` : ' <span class="bad">no event of this run sent it</span>'}${M[e.i - 1].ap ? ` <span class="muted">(matched by type, ends and term; sent as <code>${esc(msgText(M[e.i - 1].was, true))}</code>)</span>` : ""}</div>`;
      for (const id of e.o || []) h += `<div>sends: <code>${esc(msgText(M[id], true))}</code>${(M[id].h || []).length ? ` <a href="#" data-go="${M[id].h[0]}">handled at ${M[id].h.map(num).join(", ")}</a>` : ' <span class="muted">never handled</span>'}</div>`;
    } else h += `<div class="muted">${esc(configText())}</div>`;
    if (k === rejected) h += `<div class="alert"><b>The spec rejects this event.</b><pre class="mono" style="white-space:pre-wrap">${esc(D.check.reason)}</pre></div>`;
    const mask = invMask.get(k);
    if (mask) h += `<div class="alert"><b>Violated after this step:</b> ${invNames.filter((_, j) => mask & (1 << j)).join(", ")}` +
      (D.inv.first || []).filter((v) => v.event === k).map((v) => `<div class="mono">${esc(v.invariant)}: ${esc(v.detail)}</div>`).join("") + "</div>";
    h += "</div><h3>Nodes after it</h3>";
    for (let n = 1; n <= N; n++) h += nodeHTML(n, k);
    const bag = bagAt(k);
    h += `<h3>In flight after it: ${bag.length}</h3><div class="bag mono">`;
    for (const id of bag.slice(0, 60)) h += `<div title="${esc(msgText(M[id], true))}">${esc(msgText(M[id], false))}${M[id].og ? " (copy)" : ""}</div>`;
    if (bag.length > 60) h += `<div class="muted">… ${bag.length - 60} more</div>`;
    h += "</div>";
    h += `<h3>Legend</h3><div class="legend"><span><i style="background:var(--rvreq)"></i>RequestVote</span><span><i style="background:var(--rvresp)"></i>vote reply</span>` +
      `<span><i style="background:var(--aereq)"></i>AppendEntries</span><span><i style="background:var(--aeresp)"></i>append reply</span><br>` +
      `<span>dashed: denied / failed reply</span><span>long dashes: a duplicate</span><span>dotted: in flight at the end</span><span>? : no send in the run</span><br>` +
      `<span>lane: thin follower, orange candidate, thick blue leader</span><br>` +
      [["Crash", "crash"], ["Corrupt", "corruption"], ["Flush", "flush"], ["ClientRequest", "client request"], ["AdvanceCommitIndex", "commit advances"],
        ["Timeout", "timeout"], ["BecomeLeader", "becomes leader"], ["DropMessage", "dropped"], ["DuplicateMessage", "duplicated"]].map(([a, t]) => `<span>${icon(a)} ${t}</span>`).join("") + "<br>" +
      `<span>log: colour = term, faded dashed = appended but not fdatasync'd, underline = committed</span></div>`;
    return h;
  }
  function renderPanel() {
    panel.innerHTML = panelHTML();
    $("seq").value = num(cur);
  }
  panel.addEventListener("click", (ev) => {
    const t = ev.target.closest("[data-go]");
    if (t) { ev.preventDefault(); go(+t.dataset.go); }
  });

  // ---- navigation ---------------------------------------------------------
  function go(k, keepScroll) {
    cur = Math.max(-1, Math.min(E.length - 1, k));
    const r = cur + 1, top = topPx();
    if (!keepScroll && (r * ROW < top + ROW || r * ROW > top + viewH - 2 * ROW)) scrollToRow(r);
    renderPanel();
    draw();
  }
  function step(d) { go(cur + d); }
  let timer = null;
  function play() {
    if (timer) { clearInterval(timer); timer = null; $("play").textContent = "play"; return; }
    $("play").textContent = "stop";
    timer = setInterval(() => { if (cur >= E.length - 1) play(); else step(1); }, 400);
  }
  function findNext() {
    const q = $("find").value.trim().toLowerCase();
    if (!q) return;
    for (let j = 1; j <= E.length; j++) {
      const k = (cur + j) % E.length;
      if (eventText(k).toLowerCase().includes(q)) { go(k); return; }
    }
  }
  $("first").onclick = () => go(-1);
  $("prev").onclick = () => step(-1);
  $("next").onclick = () => step(1);
  $("last").onclick = () => go(E.length - 1);
  $("play").onclick = play;
  $("findNext").onclick = findNext;
  $("find").addEventListener("keydown", (ev) => { if (ev.key === "Enter") findNext(); });
  $("seq").addEventListener("change", () => {
    const q = +$("seq").value;
    let k = D.merged ? q - 1 : E.findIndex((e) => e.q >= q);
    go(q <= 0 ? -1 : k < 0 ? E.length - 1 : k);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;
    const keys = { ArrowDown: 1, ArrowRight: 1, j: 1, ArrowUp: -1, ArrowLeft: -1, k: -1 };
    if (keys[ev.key]) { ev.preventDefault(); step(keys[ev.key]); }
    else if (ev.key === "Home") { ev.preventDefault(); go(-1); }
    else if (ev.key === "End") { ev.preventDefault(); go(E.length - 1); }
    else if (ev.key === " ") { ev.preventDefault(); play(); }
    else if (ev.key === "PageDown") { ev.preventDefault(); step(Math.floor(viewH / ROW)); }
    else if (ev.key === "PageUp") { ev.preventDefault(); step(-Math.floor(viewH / ROW)); }
  });
  let pending = false;
  scroll.addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  });
  window.addEventListener("resize", () => { layout(); draw(); });

  // hover: a row's event, an arrow's message
  const tip = $("tip");
  function showTip(ev, html) {
    tip.innerHTML = html; tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  svg.addEventListener("mousemove", (ev) => {
    const rect = svg.getBoundingClientRect();
    const r = Math.floor((ev.clientY - rect.top + topPx()) / ROW);
    if (r !== hoverRow) { hoverRow = r; moveHover(); }
    const a = ev.target.closest("[data-m]");
    if (a) {
      const m = M[+a.dataset.m];
      const sent = m.s >= 0 ? `sent at event ${num(m.s)}` : "no event of this run sent it";
      const handled = (m.h || []).map((x) => `${A[E[x].a]} at ${num(x)}`).join(", ");
      showTip(ev, `<b>${esc(msgText(m, true))}</b><br>${sent}${m.og ? " (a duplicate)" : ""}; ${handled ? "handled: " + esc(handled) : "never handled"}${m.x < 0 ? "; still in flight at the end" : m.dr ? "; dropped" : ""}${m.ap ? `<br><i>matched to its send by type, ends and term; sent as ${esc(msgText(m.was, true))}</i>` : ""}`);
    } else if (r >= 1 && r < rows) {
      const k = r - 1, e = E[k];
      let h = `<b>event ${num(k)}</b> <code>${esc(eventText(k))}</code>`;
      if (e.s) h += `<br>${esc(name(e.n))}: ${ROLES[e.s.r]}, term ${e.s.t}, log ${e.s.len}, commit ${e.s.ci}` +
        (e.s.d !== undefined ? `, durable ${e.s.d}` : "") + (e.s.vd ? `, ${e.s.vd}` : "");
      const mask = invMask.get(k);
      if (mask) h += `<br><span class="bad">violated: ${invNames.filter((_, j) => mask & (1 << j)).join(", ")}</span>`;
      if (k === rejected) h += `<br><span class="bad">the spec rejects this event</span>`;
      showTip(ev, h);
    } else tip.hidden = true;
  });
  svg.addEventListener("mouseleave", () => { hoverRow = -1; moveHover(); tip.hidden = true; });
  svg.addEventListener("click", (ev) => {
    const a = ev.target.closest("[data-m]");
    if (a) { const id = +a.dataset.m; selMsg = selMsg === id ? -1 : id; draw(); return; }
    const rect = svg.getBoundingClientRect();
    const r = Math.floor((ev.clientY - rect.top + topPx()) / ROW);
    if (r >= 0 && r < rows) { selMsg = -1; go(r - 1, true); }
  });

  // ---- header -------------------------------------------------------------
  function summary() {
    const s = D.stats;
    let h = `<span class="pill">${esc(configText())}</span><span class="pill">trace v${D.version}</span>` +
      `<span class="pill">${E.length} events</span><span class="pill">${s.messages} messages: ${s.exact} receives matched by content` +
      (s.approx ? `, ${s.approx} by envelope` : "") + (s.unmatched ? `, <span class="bad">${s.unmatched} without a send</span>` : "") +
      `, ${s.drops} dropped, ${s.dups} duplicated, ${s.inFlight} in flight at the end</span>`;
    if (D.check) h += D.check.ok ? `<span class="pill ok">the spec accepts it</span>` :
      `<span class="pill bad">the spec rejects ${D.check.event >= 0 ? "event " + num(D.check.event) : "it"}</span>`;
    if (D.inv) {
      if (D.inv.first && D.inv.first.length) h += D.inv.first.map((v) => `<span class="pill bad">${esc(v.invariant)} breaks at ${v.event < 0 ? "Init" : "event " + num(v.event)}</span>`).join("");
      else if (D.inv.names && D.inv.names.length) h += `<span class="pill ok">invariants hold${D.inv.stop ? " (first " + D.inv.upto + " events)" : ""}</span>`;
      if (D.inv.stop) h += `<span class="pill muted" title="${esc(D.inv.stop)}">invariants: ${esc(D.inv.stop)}</span>`;
    }
    for (const n of D.notes || []) h += `<span class="pill muted">${esc(n)}</span>`;
    $("summary").innerHTML = h;
    const jumps = [];
    if (rejected >= 0) jumps.push(`<button data-go="${rejected}">rejected event</button>`);
    for (const v of (D.inv && D.inv.first) || []) if (v.event >= 0) jumps.push(`<button data-go="${v.event}">${esc(v.invariant)}</button>`);
    $("jumps").innerHTML = jumps.length ? "jump to: " + jumps.join("") : "";
    $("jumps").onclick = (ev) => { const t = ev.target.closest("[data-go]"); if (t) go(+t.dataset.go); };
    $("title").textContent = D.title;
    $("count").textContent = num(E.length - 1);
  }

  // ---- for tests and the curious: window.viz -----------------------------
  window.viz = {
    data: D,
    cur: () => cur,
    go, step,
    info() {
      return {
        lanes: N, names: D.names, events: E.length, messages: M.length, segments: segM.length, cur,
        rendered: {
          lanes: document.querySelectorAll("#lanesHead .lanename[data-node]").length,
          arrows: svg.querySelectorAll("path.arrow:not(.hit)").length,
          events: svg.querySelectorAll("[data-k]").length,
          rows: svg.querySelectorAll("rect.rowbg[data-r]").length,
        },
      };
    },
  };

  summary();
  layout();
  go(-1);
})();
