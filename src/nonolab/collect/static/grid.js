// The Nonogram grid: clues, cells, mouse / touch (pointer events) and keyboard input.
// Board values: 1 filled, -1 crossed, 0 empty; the board is a flat row-major array.
// applyAction mirrors nonolab.collect.session (the server applies the same rules).

export function applyAction(board, stack, w, a) {
  if (a.kind === "move") {
    const i = a.r * w + a.c;
    stack.push(["move", [[i, board[i]]]]);
    board[i] = a.value;
  } else if (a.kind === "drag") {
    const [r0, r1] = [Math.min(a.start.r, a.end.r), Math.max(a.start.r, a.end.r)];
    const [c0, c1] = [Math.min(a.start.c, a.end.c), Math.max(a.start.c, a.end.c)];
    const snap = [];
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const i = r * w + c;
        const old = board[i];
        snap.push([i, old]);
        board[i] = a.mode === "flip" ? 1 : a.mode === "cross" ? -1 : (old === -1 ? 0 : -1);
      }
    }
    stack.push(["drag", snap]);
  } else if (a.kind === "undo") {
    const top = stack.pop();
    if (top) for (const [i, old] of top[1].slice().reverse()) board[i] = old;
  } else if (a.kind === "reset") {
    const snap = [];
    board.forEach((v, i) => { if (v !== 0) snap.push([i, v]); });
    stack.push(["reset", snap]);
    board.fill(0);
  }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// puzzle: {height, width, rows, columns}; opts: {board, onAction(action), getTool()}
export function createGrid(container, puzzle, opts) {
  const h = puzzle.height, w = puzzle.width;
  const board = opts.board;
  const wrap = el("div", "grid-wrap");
  const table = el("div", "grid");
  table.style.setProperty("--cols", String(w));
  table.style.setProperty("--rows", String(h));
  table.tabIndex = 0;
  table.setAttribute("role", "grid");
  table.setAttribute("aria-label", `Puzzle grid, ${h} rows by ${w} columns. Arrow keys move, ` +
    "Shift with arrow keys selects a rectangle, Space fills, X crosses, Delete clears, " +
    "Escape drops the selection.");
  table.appendChild(el("div", "corner"));
  puzzle.columns.forEach((clue) => {
    const d = el("div", "clue col-clue");
    (clue.length ? clue : [0]).forEach((n) => d.appendChild(el("span", "", String(n))));
    table.appendChild(d);
  });
  const cells = [];
  for (let r = 0; r < h; r++) {
    const rc = el("div", "clue row-clue");
    (puzzle.rows[r].length ? puzzle.rows[r] : [0]).forEach((n) => rc.appendChild(el("span", "", String(n))));
    table.appendChild(rc);
    for (let c = 0; c < w; c++) {
      const d = el("div", "cell");
      d.dataset.r = String(r);
      d.dataset.c = String(c);
      d.setAttribute("role", "gridcell");
      if (c % 5 === 4 && c !== w - 1) d.classList.add("edge-r");
      if (r % 5 === 4 && r !== h - 1) d.classList.add("edge-b");
      table.appendChild(d);
      cells.push(d);
    }
  }
  wrap.appendChild(table);
  container.appendChild(wrap);

  let cursor = { r: 0, c: 0 };
  let keyboard = false; // the cursor is drawn only while the keyboard is in use
  let hint = null;
  function render() {
    cells.forEach((d, i) => {
      const v = board[i];
      d.classList.toggle("filled", v === 1);
      d.classList.toggle("crossed", v === -1);
      const r = Math.floor(i / w), c = i % w;
      d.classList.toggle("cursor", keyboard && r === cursor.r && c === cursor.c && document.activeElement === table);
      d.classList.toggle("hinted", hint !== null && hint.r === r && hint.c === c);
      d.setAttribute("aria-label", `row ${r + 1} column ${c + 1}: ${v === 1 ? "filled" : v === -1 ? "crossed" : "empty"}`);
    });
  }
  function cellAt(x, y) {
    const t = document.elementFromPoint(x, y);
    if (!t || !t.classList || !t.classList.contains("cell") || !table.contains(t)) return null;
    return { r: Number(t.dataset.r), c: Number(t.dataset.c) };
  }
  function clickValue(r, c, tool) {
    const v = board[r * w + c];
    if (tool === "cross") return v === -1 ? 0 : -1;
    return v === 1 ? 0 : 1;
  }
  function emit(a) {
    if (hint && (a.kind !== "move" || (a.r === hint.r && a.c === hint.c))) { hint = null; opts.onHintCleared?.(); }
    opts.onAction(a);
    render();
  }

  let press = null;
  let anchor = null; // keyboard selection: Shift+arrow keys stretch a rectangle from this cell
  function clearPreview() { cells.forEach((d) => d.classList.remove("preview")); }
  function preview(a, b) {
    clearPreview();
    const [r0, r1] = [Math.min(a.r, b.r), Math.max(a.r, b.r)];
    const [c0, c1] = [Math.min(a.c, b.c), Math.max(a.c, b.c)];
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) cells[r * w + c].classList.add("preview");
  }
  table.addEventListener("contextmenu", (e) => e.preventDefault());
  table.addEventListener("pointerdown", (e) => {
    const at = cellAt(e.clientX, e.clientY);
    if (!at || opts.disabled?.()) return;
    e.preventDefault();
    keyboard = false;
    anchor = null;
    table.focus({ preventScroll: true });
    cursor = at;
    const tool = e.button === 2 ? "cross" : opts.getTool();
    press = { start: at, end: at, tool, id: e.pointerId };
    try { table.setPointerCapture(e.pointerId); } catch (_) { /* synthetic events */ }
    preview(at, at);
  });
  table.addEventListener("pointermove", (e) => {
    if (!press || e.pointerId !== press.id) return;
    const at = cellAt(e.clientX, e.clientY);
    if (at) { press.end = at; preview(press.start, at); }
  });
  function finish(e) {
    if (!press || e.pointerId !== press.id) return;
    const p = press;
    press = null;
    clearPreview();
    if (e.type === "pointercancel") { render(); return; }
    if (p.start.r === p.end.r && p.start.c === p.end.c) {
      emit({ kind: "move", r: p.start.r, c: p.start.c, value: clickValue(p.start.r, p.start.c, p.tool) });
    } else {
      emit({ kind: "drag", mode: p.tool === "cross" ? "cross" : "flip", start: p.start, end: p.end });
    }
  }
  table.addEventListener("pointerup", finish);
  table.addEventListener("pointercancel", finish);
  table.addEventListener("focus", render);
  table.addEventListener("blur", render);
  // Space / Enter / X on a keyboard selection is what releasing a mouse drag over the same
  // rectangle is (one `drag` action from the anchor to the cursor); on one cell, a click.
  function keyAct(tool) {
    const a = anchor;
    anchor = null;
    clearPreview();
    if (a && (a.r !== cursor.r || a.c !== cursor.c)) {
      emit({ kind: "drag", mode: tool === "cross" ? "cross" : "flip", start: a, end: { ...cursor } });
    } else {
      emit({ kind: "move", r: cursor.r, c: cursor.c, value: clickValue(cursor.r, cursor.c, tool) });
    }
  }
  table.addEventListener("keydown", (e) => {
    if (opts.disabled?.()) return;
    keyboard = true;
    const k = e.key;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[k]) {
      if (e.shiftKey && !anchor) anchor = { ...cursor };
      if (!e.shiftKey && anchor) { anchor = null; clearPreview(); }
      cursor = { r: Math.min(h - 1, Math.max(0, cursor.r + moves[k][0])),
                 c: Math.min(w - 1, Math.max(0, cursor.c + moves[k][1])) };
      e.preventDefault();
      if (anchor) preview(anchor, cursor);
      render();
    } else if (k === " " || k === "Enter") {
      e.preventDefault();
      keyAct(opts.getTool());
    } else if (k === "x" || k === "X") {
      e.preventDefault();
      keyAct("cross");
    } else if (k === "Escape" && anchor) {
      e.preventDefault();
      anchor = null;
      clearPreview();
      render();
    } else if (k === "Delete" || k === "Backspace") {
      e.preventDefault();
      anchor = null;
      clearPreview();
      emit({ kind: "move", r: cursor.r, c: cursor.c, value: 0 });
    }
  });
  render();
  return {
    render,
    showHint(cell) { hint = cell; render(); },
    element: table,
  };
}
