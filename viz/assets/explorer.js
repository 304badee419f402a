// raftspec serve: walks the model's state space through the JSON API of
// viz.Explorer. The state is the path in the URL (#path=3.0.12).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  let model = null, view = null, path = [];

  async function api(url, body) {
    const r = await fetch(url, body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }
  function pathFromHash() {
    const m = /path=([0-9.]*)/.exec(location.hash);
    return m && m[1] ? m[1].split(".").map(Number) : [];
  }
  async function go(p, push) {
    try {
      const v = await api("/api/state?path=" + p.join("."));
      view = v; path = v.path;
      const h = "#path=" + path.join(".");
      if (push !== false && location.hash !== h) history.pushState(null, "", h);
      render();
    } catch (e) { $("status").textContent = "error: " + e.message; }
  }
  function termColor(t) { return `hsl(${(t * 67) % 360} 55% 42%)`; }
  function logHTML(log, dur, ci) {
    if (!log || !log.length) return `<span class="muted">empty log</span>`;
    return `<div class="log">` + log.map((e, j) => {
      const idx = j + 1;
      const cls = "ent" + (dur !== undefined && idx > dur ? " unsynced" : "") + (idx <= ci ? " committed" : "");
      return `<span class="${cls}" title="index ${idx}, term ${e.term}, value ${e.value}" style="background:${termColor(e.term)}">${e.term}:${e.value}</span>`;
    }).join("") + `</div>`;
  }
  const map = (o) => (o ? Object.entries(o).map(([k, v]) => `${k}:${v}`).join(" ") : "");
  function serverHTML(s) {
    const v = s.vars;
    let h = `<div class="server" data-server="${esc(s.name)}"><div class="head"><span class="name">${esc(s.name)}</span>` +
      `<span class="role role-${v.state}">${v.state}</span><span>currentTerm <b class="currentTerm">${v.currentTerm}</b></span>` +
      `<span>votedFor <b>${esc(v.votedFor)}</b></span><span>commitIndex <b class="commitIndex">${v.commitIndex}</b></span>`;
    if (v.durableLen !== undefined) h += `<span>durableLen <b class="durableLen">${v.durableLen}</b></span><span>learnedCommit <b>${v.learnedCommit}</b></span>` +
      `<span class="${v.verdict === "TRUNCATED" ? "bad" : ""}">verdict ${v.verdict}${v.truncatedAtTerm ? " (truncatedAtTerm " + v.truncatedAtTerm + ")" : ""}</span>`;
    h += `</div><div>log (${(v.log || []).length})</div>` + logHTML(v.log, v.durableLen, v.commitIndex);
    h += `<div class="mono muted">votesResponded {${(v.votesResponded || []).join(", ")}} votesGranted {${(v.votesGranted || []).join(", ")}}` +
      ` nextIndex ${map(v.nextIndex)} matchIndex ${map(v.matchIndex)}</div>`;
    if (s.voterLog && s.voterLog !== "()") h += `<div class="mono muted">voterLog ${esc(s.voterLog)}</div>`;
    // Variables this page does not know by name (a newer spec's) are shown as they come.
    const known = new Set(["currentTerm", "state", "votedFor", "log", "commitIndex", "votesResponded", "votesGranted",
      "nextIndex", "matchIndex", "durableLen", "learnedCommit", "verdict", "truncatedAtTerm"]);
    const other = Object.entries(v).filter(([k]) => !known.has(k));
    if (other.length) h += `<div class="mono">${other.map(([k, x]) => `${esc(k)} ${esc(JSON.stringify(x))}`).join(" · ")}</div>`;
    if (s.staleLog) h += `<div class="mono">staleLog (a crash may bring it back) ${esc(s.staleLog.map((e) => e.term + ":" + e.value).join(" "))}</div>`;
    return h + `</div>`;
  }
  function render() {
    const v = view;
    $("depth").textContent = `depth ${path.length}, fingerprint ${v.fingerprint}` + (v.inBounds ? "" : " — outside the bounds");
    $("back").disabled = path.length === 0;
    $("invs").innerHTML = v.invariants.map((i) => `<span class="pill inv ${i.ok ? "ok" : "bad"}" data-inv="${i.name}">${i.ok ? "✓" : "✗"} ${i.name}</span>`).join("") +
      v.invariants.filter((i) => !i.ok).map((i) => `<div class="invdetail">${esc(i.name)}: ${esc(i.detail)}</div>`).join("");
    $("servers").innerHTML = v.servers.map(serverHTML).join("") +
      (v.budgets ? `<div class="muted">crashesLeft ${v.budgets.crashesLeft}, corruptionsLeft ${v.budgets.corruptionsLeft}</div>` : "");
    $("nmsg").textContent = `(${v.messages.length})`;
    $("bag").innerHTML = v.messages.length ? `<tr><th>count</th><th>message</th><th>mlog</th></tr>` +
      v.messages.map((b) => `<tr><td>${b.count}</td><td>${esc(b.text)}</td><td>${b.mlog.length ? esc(b.mlog.map((e) => e.term + ":" + e.value).join(" ")) : "<<>>"}</td></tr>`).join("") : `<tr><td class="muted">empty</td></tr>`;
    $("history").innerHTML = `<div><b>elections</b> ${v.elections.length ? v.elections.map((e) => `<div class="mono">term ${e.term}: ${esc(e.leader)} with votes {${e.votes.join(", ")}}, log ${esc(e.log.map((x) => x.term + ":" + x.value).join(" ") || "<<>>")}</div>`).join("") : '<span class="muted">none</span>'}</div>` +
      (model.profile === "durable" ? `<div><b>committed</b> ${v.committed.length ? v.committed.map((c) => `[index ${c.index}, term ${c.term}, cterm ${c.commitTerm}]`).join(" ") : '<span class="muted">none</span>'}</div>` : "") +
      `<details><summary><b>allLogs</b> (${v.allLogs.length})</summary><div class="mono">${v.allLogs.map((l) => esc(l.map((x) => x.term + ":" + x.value).join(" ") || "<<>>")).join("<br>")}</div></details>`;
    renderSuccessors();
    $("steps").innerHTML = `<li data-depth="0" class="${path.length === 0 ? "here" : ""}">Init</li>` +
      v.steps.map((s, k) => `<li data-depth="${k + 1}" class="${k + 1 === path.length ? "here" : ""}">${esc(s)}</li>`).join("");
    $("steps").start = 0;
  }
  function renderSuccessors() {
    const q = $("filter").value.trim().toLowerCase();
    const list = view.successors.filter((s) => !q || s.label.toLowerCase().includes(q));
    $("nsucc").textContent = `(${view.successors.length}${q ? ", " + list.length + " shown" : ""})`;
    $("succ").innerHTML = list.map((s) => `<li value="${s.index}" data-index="${s.index}" class="${s.inBounds ? "" : "oob"} ${s.violates ? "breaks" : ""}">${esc(s.label)}` +
      (s.inBounds ? "" : `<span class="tag muted">outside the bounds</span>`) +
      (s.violates ? `<span class="tag bad">breaks ${s.violates.join(", ")}</span>` : "") + `</li>`).join("") ||
      `<li class="muted">no action is enabled (a deadlock, or every bound reached)</li>`;
  }
  async function check(mode) {
    const inv = $("inv").value;
    $("status").textContent = `${mode === "explore" ? "exploring" : "simulating"}…`;
    $("explore").disabled = $("simulate").disabled = true;
    try {
      const r = await api("/api/check", { mode, invariant: inv });
      $("status").textContent = `${r.summary} (${r.seconds} s)` + (r.violation ? ` — ${r.invariant}: ${r.detail}` : "");
      if (r.violation) go(r.path);
    } catch (e) { $("status").textContent = "error: " + e.message; }
    $("explore").disabled = $("simulate").disabled = false;
  }

  $("succ").addEventListener("click", (ev) => {
    const li = ev.target.closest("[data-index]");
    if (li) go(path.concat(+li.dataset.index));
  });
  $("steps").addEventListener("click", (ev) => {
    const li = ev.target.closest("[data-depth]");
    if (li) go(path.slice(0, +li.dataset.depth));
  });
  $("init").onclick = () => go([]);
  $("back").onclick = () => go(path.slice(0, -1));
  $("explore").onclick = () => check("explore");
  $("simulate").onclick = () => check("simulate");
  $("filter").addEventListener("input", renderSuccessors);
  $("trace").onclick = () => go(model.trace);
  window.addEventListener("popstate", () => go(pathFromHash(), false));
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    if (ev.key === "Backspace" || ev.key === "ArrowLeft") { ev.preventDefault(); if (path.length) go(path.slice(0, -1)); }
    else if (ev.key === "Home") { ev.preventDefault(); go([]); }
  });

  // For tests and the curious.
  window.explorer = {
    view: () => view, path: () => path.slice(), go,
    take: (i) => go(path.concat(i)), back: () => go(path.slice(0, -1)), check,
  };

  (async () => {
    model = await api("/api/model");
    $("config").textContent = model.config;
    for (const n of model.invariants) $("inv").insertAdjacentHTML("beforeend", `<option>${esc(n)}</option>`);
    if (model.trace) { $("trace").hidden = false; $("trace").textContent = "open the trace " + (model.traceName || ""); }
    await go(pathFromHash(), false);
    document.body.dataset.ready = "1";
  })();
})();
