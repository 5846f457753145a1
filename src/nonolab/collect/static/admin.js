// The researcher dashboard. Every value from the server (participant-provided ids, refusal
// reasons, file names) is inserted with textContent, never as HTML.
let token = sessionStorage.getItem("nonolab-admin") || "";
const $ = (id) => document.getElementById(id);

async function api(path, opts = {}) {
  const r = await fetch(path, { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, cache: "no-store" });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function cell(tag, text) { const c = document.createElement(tag); c.textContent = String(text ?? ""); return c; }
function table(el, header, rows) {
  el.replaceChildren();
  const tr = document.createElement("tr");
  header.forEach((h) => tr.appendChild(cell("th", h)));
  el.appendChild(tr);
  rows.forEach((r) => { const t = document.createElement("tr"); r.forEach((v) => t.appendChild(cell("td", v))); el.appendChild(t); });
}

async function refresh() {
  const s = await api("/api/admin/summary");
  const idle = s.plan.replace_after_s >= 120 ? `${Math.round(s.plan.replace_after_s / 60)} min` : `${s.plan.replace_after_s} s`;
  const owed = s.owed.length;
  $("stats").replaceChildren(...[["links", "links made"], ["started", "started"], ["in_progress", "in progress"], ["finished", "finished"], ["dropped", `dropped (idle ${idle})`], ["owed", "owed a replacement", owed], ["excluded", "excluded"], ["events", "events stored"], ["rejections", "events refused"]].map(([k, label, v]) => {
    const d = cell("div", ""); d.className = "stat"; d.id = `stat-${k}`; d.appendChild(cell("b", v ?? s[k])); d.append(label); return d;
  }));
  $("owed-note").textContent = owed ?
    `Schedule entr${owed === 1 ? "y" : "ies"} ${s.owed.join(", ")} (counted from 0) ${owed === 1 ? "is" : "are"} owed a replacement: served to the next participant${owed === 1 ? "" : "s"} who start${owed === 1 ? "s" : ""}. ${s.excluded} session${s.excluded === 1 ? "" : "s"} excluded by the researcher.` :
    `No schedule entry is owed a replacement. ${s.excluded} session${s.excluded === 1 ? "" : "s"} excluded by the researcher.`;
  const order = ["consent", "tutorial", "warmup", "pre", "puzzle", "rate", "post", "done"];
  table($("steps"), ["step", "sessions"], order.filter((k) => s.per_step[k]).map((k) => [k, s.per_step[k]]));
  const pos = s.balance.finished_per_puzzle_position;
  const n = s.plan.per_session;
  table($("balance"), ["puzzle", ...Array.from({ length: n }, (_, k) => `position ${k + 1}`)], Object.entries(pos).map(([p, v]) => [p, ...v]));
  const [lo, hi] = s.balance.position_count_range;
  $("balance-note").textContent = `Each puzzle x position cell counts finished sessions; range ${lo}-${hi} (equal when balanced). Schedule: ${s.plan.sessions} sessions of ${n} puzzles.`;
  $("rejections").textContent = `${s.rejections} refused events; rate-limited requests since start: ${s.server.rate_limited}; failed researcher logins: ${s.server.unauthorised}.`;
  $("rejection-list").replaceChildren(...s.latest_rejections.map((r) => cell("li", r)));
  const p = await api("/api/admin/participants");
  table($("participants"), ["participant", "external id", "schedule", "step", "events", "last activity (UTC)"],
    p.participants.map((r) => [r.label, r.external_id, r.schedule_idx, r.step, r.last_seq, new Date(r.updated_at * 1000).toISOString().slice(0, 19)]));
}

async function open() {
  try {
    await refresh();
    sessionStorage.setItem("nonolab-admin", token);
    $("login").hidden = true;
    $("dash").hidden = false;
    setInterval(() => refresh().catch(() => {}), 5000);
  } catch (e) {
    $("login-error").textContent = e.message;
  }
}
$("login-go").addEventListener("click", () => { token = $("admin-token").value.trim(); open(); });
$("validate").addEventListener("click", async () => {
  $("validate-result").textContent = "Running…";
  try {
    const v = await api("/api/admin/validate");
    $("validate-result").textContent = v.usable === null ? "No finished session yet." :
      `${v.finished} finished session${v.finished === 1 ? "" : "s"}: ${v.problems} problem${v.problems === 1 ? "" : "s"}${v.usable ? " — usable as it is" : ""}.`;
    $("validate-problems").replaceChildren(...v.first_problems.map((t) => cell("li", t)));
  } catch (e) { $("validate-result").textContent = e.message; }
});
$("export").addEventListener("click", async () => {
  $("export-result").textContent = "Exporting…";
  try {
    const x = await api("/api/admin/export", { method: "POST", body: "{}" });
    $("export-result").textContent = `Wrote ${x.folder}: ${x.finished} finished and ${x.incomplete} unfinished sessions, ${x.lines} log lines.`;
  } catch (e) { $("export-result").textContent = e.message; }
});
if (token) open();
