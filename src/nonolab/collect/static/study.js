// The participant's study page: consent, tutorial, warm-up, surveys, the puzzles, completion.
// Every text a participant or the plan provides is inserted with textContent (never as HTML).
import { applyAction, createGrid } from "./grid.js";
import { EventQueue } from "./queue.js";

const token = location.pathname.split("/")[2];
const main = document.getElementById("main");
const statusEl = document.getElementById("save-status");
const queue = new EventQueue(token, (s) => {
  statusEl.textContent = { saving: "Saving…", saved: "All changes saved", offline: "Connection lost — retrying (your work is kept)" }[s];
  statusEl.dataset.state = s;
});
// an action the server refused is not sent again: the participant is told plainly and goes on
// from what the server has saved; after repeated refusals the notice also offers a way out
let refusals = 0;
queue.onRefused = (info) => {
  refusals += 1;
  statusEl.textContent = "Your last action was not saved";
  statusEl.dataset.state = "offline";
  const box = el("section", "card notice");
  box.id = "refused-notice";
  box.setAttribute("role", "alert");
  box.appendChild(el("h2", "", "Your last action could not be saved"));
  box.appendChild(el("p", "", "The study server did not accept it, so it is not part of your answers. Everything you did before it is saved."));
  box.appendChild(el("p", "detail", `Reason given by the server: ${info.error}`));
  if (refusals >= 3) {
    box.appendChild(el("p", "", `This has now happened ${refusals} times. You may stop here: what is saved is kept. Please tell the researcher, quoting the reason above.`));
  }
  box.appendChild(button("Continue from what is saved", "primary", () => load(), "refused-continue"));
  clear();
  main.appendChild(box);
};

// client clock: monotonic (performance.now) anchored to the server clock when the page loaded
let anchor = { server: Date.now(), perf: performance.now() };
const now = () => anchor.server + (performance.now() - anchor.perf);

let study = null;
let session = null;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function button(text, cls, onClick, id) {
  const b = el("button", cls, text);
  b.type = "button";
  if (id) b.id = id;
  b.addEventListener("click", onClick);
  return b;
}
function clear() { main.replaceChildren(); window.scrollTo(0, 0); }

async function fetchState() {
  for (let wait = 500; ; wait = Math.min(wait * 2, 5000)) {
    try {
      const t0 = performance.now();
      const r = await fetch(`/api/s/${token}/state`, { cache: "no-store" });
      const t1 = performance.now();
      if (r.status === 404) { clear(); main.appendChild(el("p", "error", "This study link is not valid.")); return null; }
      if (r.ok) {
        const s = await r.json();
        anchor = { server: s.server_now_ms, perf: (t0 + t1) / 2 };
        return s;
      }
    } catch (_) { /* offline: retry */ }
    statusEl.textContent = "Connecting to the study server…";
    statusEl.dataset.state = "offline";
    await new Promise((res) => setTimeout(res, wait));
  }
}

async function sync(ev) {
  const res = await queue.request(ev, now());
  return res;
}

async function load() {
  document.getElementById("refused-notice")?.remove();
  await queue.drain();
  const s = await fetchState();
  if (!s) return;
  queue.setAcked(s.last_seq);
  if (!queue.pending.length) queue.onStatus("saved");
  study = s.study;
  session = s.session;
  document.title = study.title;
  document.getElementById("title").textContent = study.title;
  render(s);
}

function render(s) {
  const step = session.step;
  clear();
  if (step === "consent") return consent();
  if (step === "tutorial") return practice("tutorial");
  if (step === "warmup") return practice("warmup");
  if (step === "pre") return survey("pre", "About you", study.surveys.pre);
  if (step === "puzzle") return puzzle();
  if (step === "rate") return survey(`puzzle_${session.idx + 1}`, `Puzzle ${session.idx + 1} of ${session.n}: your rating`, study.surveys.rate[session.idx]);
  if (step === "post") return survey("post", "Looking back", study.surveys.post);
  if (step === "done") return done(s);
}

async function next(ev) {
  clear();
  main.appendChild(el("p", "wait", "Saving…"));
  const res = await sync(ev);
  if (res.refused) return; // the notice is shown instead
  await load();
}

function consent() {
  const box = el("section", "card");
  box.appendChild(el("h2", "", "Consent"));
  study.consent.split(/\n\s*\n/).forEach((p) => box.appendChild(el("p", "", p)));
  const lab = el("label", "agree");
  const cb = el("input");
  cb.type = "checkbox";
  cb.id = "agree";
  lab.append(cb, " I have read the text above and agree to take part.");
  box.appendChild(lab);
  const go = button("Continue", "primary", () => next({ kind: "step", from: "consent" }), "consent-continue");
  go.disabled = true;
  cb.addEventListener("change", () => { go.disabled = !cb.checked; });
  box.appendChild(go);
  main.appendChild(box);
}

function toolbar(handlers, ids) {
  const bar = el("div", "toolbar");
  let tool = "fill";
  const fill = button("■ Fill", "tool active", () => setTool("fill"), ids + "tool-fill");
  const cross = button("✕ Cross", "tool", () => setTool("cross"), ids + "tool-cross");
  function setTool(t) {
    tool = t;
    fill.classList.toggle("active", t === "fill");
    cross.classList.toggle("active", t === "cross");
    fill.setAttribute("aria-pressed", String(t === "fill"));
    cross.setAttribute("aria-pressed", String(t === "cross"));
  }
  bar.append(fill, cross);
  for (const [label, fn, id] of handlers) bar.appendChild(button(label, "", fn, ids + id));
  return { bar, getTool: () => tool };
}

const INSTRUCTIONS = [
  "Fill the cells so that each row and column shows the blocks its numbers give, in order, " +
    "with at least one empty cell between blocks.",
  "Click (or tap) a cell to fill it; click again to clear it. With the Cross tool (or a right " +
    "click, or the X key) you mark a cell you know is empty.",
  "Press and drag across cells to fill (or cross) a whole rectangle at once.",
  "Keyboard: arrow keys move, Space fills, X crosses, Delete clears; hold Shift with the " +
    "arrow keys to select a rectangle, then Space or X fills or crosses it (Escape drops it).",
  "Undo reverses your last change, Reset clears the board, Hint points at a wrong cell, " +
    "Check tells you whether the puzzle is solved, Skip gives up on a puzzle.",
];

// the practice (tutorial) and warm-up puzzles: played in the page, not logged
function practice(which) {
  const spec = which === "tutorial" ? study.practice : study.warmup;
  const box = el("section", "card");
  box.appendChild(el("h2", "", which === "tutorial" ? "How to play" : "Warm-up"));
  if (which === "tutorial") INSTRUCTIONS.forEach((t) => box.appendChild(el("p", "", t)));
  else box.appendChild(el("p", "", "Solve this puzzle to get used to the controls. It is not part of the study's results."));
  const timer = el("p", "timer");
  const msg = el("p", "message");
  const board = new Array(spec.height * spec.width).fill(0);
  const stack = [];
  const key = `nonolab:${token}:${which}`;
  const saved = JSON.parse(localStorage.getItem(key) || "null");
  if (saved) { saved.board.forEach((v, i) => { board[i] = v; }); stack.push(...saved.stack); }
  const persist = () => localStorage.setItem(key, JSON.stringify({ board, stack, start: started }));
  let started = saved?.start ?? Date.now();
  const solved = () => board.every((v, i) => (v === 1 ? 1 : 0) === spec.solution[Math.floor(i / spec.width)][i % spec.width]);
  let grid;
  const { bar, getTool } = toolbar([
    ["Undo", () => { applyAction(board, stack, spec.width, { kind: "undo" }); persist(); grid.render(); }, "undo"],
    ["Reset", () => { applyAction(board, stack, spec.width, { kind: "reset" }); persist(); grid.render(); }, "reset"],
    ["Check", () => { msg.textContent = solved() ? "Solved — well done!" : "Not solved yet."; }, "check"],
  ], which + "-");
  box.appendChild(bar);
  const area = el("div", "");
  box.appendChild(area);
  grid = createGrid(area, spec, { board, getTool, onAction: (a) => { applyAction(board, stack, spec.width, a); persist(); } });
  box.append(msg, timer);
  const go = button(which === "tutorial" ? "Continue to the warm-up" : "Finish the warm-up", "primary", () => {
    clearInterval(tick);
    next({ kind: "step", from: which });
  }, which + "-continue");
  box.appendChild(go);
  let tick = null;
  if (which === "warmup") {
    persist();
    const limit = spec.time_limit_s * 1000;
    const update = () => {
      const left = Math.max(0, limit - (Date.now() - started));
      timer.textContent = `Time left: ${Math.floor(left / 60000)}:${String(Math.floor((left % 60000) / 1000)).padStart(2, "0")}`;
      if (left <= 0) { clearInterval(tick); next({ kind: "step", from: "warmup" }); }
    };
    update();
    tick = setInterval(update, 500);
  }
  main.appendChild(box);
}

function puzzle() {
  const p = session.puzzle;
  const board = session.board.slice();
  const stack = session.undo_stack.map((x) => [x[0], x[1].map((y) => y.slice())]);
  const box = el("section", "card");
  box.appendChild(el("h2", "", `Puzzle ${session.idx + 1} of ${session.n}`));
  const msg = el("p", "message");
  msg.id = "message";
  msg.setAttribute("aria-live", "polite");
  let busy = false;
  let grid;
  const act = (a) => {
    applyAction(board, stack, p.width, a);
    queue.push(a, now());
  };
  async function hint() {
    busy = true;
    msg.textContent = "Looking for a hint…";
    delete msg.dataset.kind;
    const res = await sync({ kind: "hint" });
    busy = false;
    if (res.refused) return;
    if (res.hint) { grid.showHint(res.hint); msg.textContent = `Hint: the highlighted cell is wrong (${res.hints_left} hints left).`; msg.dataset.kind = "hint"; }
    else msg.textContent = res.reason === "limit" ? "No hints left for this puzzle." : "Nothing to hint: every filled cell is right.";
  }
  async function check() {
    busy = true;
    msg.textContent = "Checking…";
    const res = await sync({ kind: "check" });
    busy = false;
    if (res.refused) return;
    if (res.solved) { msg.textContent = "Solved!"; await load(); }
    else msg.textContent = "Not solved yet — keep going.";
  }
  async function skip() {
    if (!confirm("Give up on this puzzle and move on?")) return;
    busy = true;
    const res = await sync({ kind: "skip" });
    if (res.refused) return;
    await load();
  }
  function reset() {
    if (!confirm("Clear the whole board?")) return;
    act({ kind: "reset" });
    grid.render();
  }
  const { bar, getTool } = toolbar([
    ["Undo", () => { act({ kind: "undo" }); grid.render(); }, "undo"],
    ["Reset", reset, "reset"],
    ["Hint", hint, "hint"],
    ["Check", check, "check"],
    ["Skip", skip, "skip"],
  ], "");
  box.appendChild(bar);
  const area = el("div", "");
  box.appendChild(area);
  // the hint's message goes with its highlight (once the hinted cell is changed)
  const onHintCleared = () => { if (msg.dataset.kind === "hint") { msg.textContent = ""; delete msg.dataset.kind; } };
  grid = createGrid(area, p, { board, getTool, onAction: act, disabled: () => busy, onHintCleared });
  box.appendChild(msg);
  main.appendChild(box);
}
function undoKey(e) {
  if ((e.ctrlKey || e.metaKey) && e.key === "z" && session.step === "puzzle") {
    e.preventDefault();
    document.getElementById("undo")?.click();
  }
}

function survey(type, heading, items) {
  const form = el("form", "card survey");
  form.noValidate = true;
  form.appendChild(el("h2", "", heading));
  const get = {};
  for (const it of items) {
    const f = el("fieldset", "item");
    f.dataset.item = it.id;
    f.appendChild(el("legend", "", it.prompt));
    const err = el("p", "error");
    if (it.type === "single" || it.type === "multi") {
      const inputs = it.options.map((o) => {
        const lab = el("label", "opt");
        const inp = el("input");
        inp.type = it.type === "single" ? "radio" : "checkbox";
        inp.name = it.id;
        inp.value = o.value;
        lab.append(inp, " ", o.label);
        f.appendChild(lab);
        return inp;
      });
      let other = null;
      if (it.allow_other) {
        other = el("input", "other");
        other.type = "text";
        other.name = `${it.id}_other`;
        other.placeholder = "Other (please say)";
        f.appendChild(other);
      }
      get[it.id] = () => {
        const on = inputs.filter((i) => i.checked).map((i) => i.value);
        const v = it.type === "single" ? (on[0] ?? null) : on;
        const out = { [it.id]: v };
        if (other && other.value.trim()) out[`${it.id}_other`] = other.value.trim();
        return out;
      };
    } else if (it.type === "scale") {
      const row = el("div", "scale");
      const vals = [];
      for (let v = it.min; v <= it.max; v++) vals.push(v);
      if (it.na !== undefined) vals.push(it.na);
      const pre = it.prefill ? session.ratings[it.prefill] : undefined;
      const inputs = vals.map((v) => {
        const lab = el("label", "opt");
        const inp = el("input");
        inp.type = "radio";
        inp.name = it.id;
        inp.value = String(v);
        if (pre !== undefined && pre === v) inp.checked = true;
        lab.append(inp, " ", v === it.na ? "N/A" : String(v));
        row.appendChild(lab);
        return inp;
      });
      f.appendChild(row);
      get[it.id] = () => {
        const on = inputs.find((i) => i.checked);
        return { [it.id]: on ? Number(on.value) : null };
      };
    } else {
      const ta = el("textarea");
      ta.name = it.id;
      ta.rows = 3;
      ta.maxLength = 5000;
      f.appendChild(ta);
      get[it.id] = () => (ta.value.trim() ? { [it.id]: ta.value.trim() } : {});
    }
    f.appendChild(err);
    form.appendChild(f);
  }
  const submit = el("button", "primary", "Continue");
  submit.type = "submit";
  submit.id = "survey-submit";
  form.appendChild(submit);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let answers = {};
    let ok = true;
    for (const it of items) {
      const part = get[it.id]();
      const f = form.querySelector(`fieldset[data-item="${CSS.escape(it.id)}"]`);
      const required = it.required ?? it.type !== "text";
      const missing = required && (part[it.id] === null || part[it.id] === undefined);
      f.querySelector(".error").textContent = missing ? "Please answer this question." : "";
      if (missing) ok = false;
      answers = { ...answers, ...part };
    }
    if (!ok) { form.querySelector(".error:not(:empty)")?.scrollIntoView({ block: "center" }); return; }
    next({ kind: "survey", survey_type: type, answers });
  });
  main.appendChild(form);
}

async function done(s) {
  const box = el("section", "card");
  box.appendChild(el("h2", "", "Finished"));
  const note = el("p", "wait", "Saving your last answers…");
  box.appendChild(note);
  main.appendChild(box);
  await queue.drain();
  note.remove();
  const c = s.completion || {};
  box.appendChild(el("p", "", c.message || "Thank you!"));
  if (c.code) {
    const p = el("p", "code");
    p.append("Your completion code: ");
    const code = el("strong", "", c.code);
    code.id = "completion-code";
    p.appendChild(code);
    box.appendChild(p);
  }
  if (c.redirect_url) {
    box.appendChild(el("p", "", "You will be taken back to the recruitment site in a few seconds."));
    setTimeout(() => location.assign(c.redirect_url), 3000);
  }
  for (const k of ["tutorial", "warmup"]) localStorage.removeItem(`nonolab:${token}:${k}`);
}

document.addEventListener("keydown", undoKey);
window.addEventListener("online", () => queue.flush());
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") queue.flush(); });
load();
