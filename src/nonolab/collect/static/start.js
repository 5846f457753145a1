// The start page: create a session (keeping a recruitment site's id from the query) and go to it.
const btn = document.getElementById("start");
btn.addEventListener("click", async () => {
  btn.disabled = true;
  const q = new URLSearchParams(location.search);
  const ext = q.get("PROLIFIC_PID") || q.get("participant") || null;
  try {
    const r = await fetch("/api/join", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ external_id: ext }),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    location.replace(body.url);
  } catch (e) {
    document.getElementById("start-error").textContent = `Could not start: ${e.message}. Please try again.`;
    btn.disabled = false;
  }
});
