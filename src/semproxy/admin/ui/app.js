// semproxy routing playground. Plain JS, no build step.
// The admin key lives in sessionStorage (this tab only) and goes out as the
// X-API-KEY header on every call: never in a URL, so never in a log line.
"use strict";

const KEY_SLOT = "semproxy-admin-key";
const DEBOUNCE_MS = 250;
const LIVE_ROWS = 200;
const $ = (id) => document.getElementById(id);

const CACHE_REFRESH_MS = 5000;
const state = { routes: [], explainSeq: 0, timer: null, live: null, proposal: null, shown: null,
                status: ["", false], statusTab: null, cacheTimer: null };

// -- small DOM and HTTP helpers ----------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function pct(v) { return v === null || v === undefined ? "n/a" : (100 * v).toFixed(1) + "%"; }
function rate(r) {
  if (!r || r.value === null || r.value === undefined) return "n/a";
  const counts = r.successes === undefined ? `n=${r.n}` : `${r.successes}/${r.n}`;
  return `${pct(r.value)} (${counts}, 95% CI ${pct(r.low)}-${pct(r.high)})`;
}
function num(v, digits = 4) { return v === null || v === undefined ? "-" : Number(v).toFixed(digits); }

// The status line: the connection's state, or for a while the outcome of one tab's
// action ("Done."), which goes when another tab is shown.
function say(text, isError = false, tab = null) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
  if (tab === null) state.status = [text, isError];
  state.statusTab = tab;
}

function shownTab() {
  return document.querySelector("[role=tab][aria-selected=true]")?.dataset.tab ?? null;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.errors = body?.error?.errors || [];
  }
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}), "X-API-KEY": sessionStorage.getItem(KEY_SLOT) || "" };
  const response = await fetch(path, { ...options, headers, cache: "no-store" });
  if (response.status === 401) clearView("The admin key was refused. Enter it again.", true);
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

function route() { return encodeURIComponent($("route").value); }

// -- key and routes ------------------------------------------------------------

async function useKey(event) {
  event?.preventDefault();
  const typed = $("key").value;
  if (typed) sessionStorage.setItem(KEY_SLOT, typed);
  $("key").value = "";
  await loadRoutes();
  if (!$("tab-spend").hidden) loadSpend(); // spend.js
}

// Nothing read with a key stays on screen without it: scores, reports, proposals.
// Bumping explainSeq also drops an explain answer still on its way.
function clearView(message, isError = false) {
  stopLive();
  stopShadow();
  state.explainSeq++;
  state.routes = [];
  state.proposal = null;
  $("route").replaceChildren();
  drawBars(null);
  $("eval-out").hidden = true;
  $("calibrate-out").hidden = true;
  $("apply-result").replaceChildren();
  $("live-table").tBodies[0].replaceChildren();
  clearSpend(); // spend.js
  $("cache-table").tBodies[0].replaceChildren();
  $("cache-records").tBodies[0].replaceChildren();
  $("cache-status").textContent = "";
  say(message, isError);
}

function forgetKey() {
  sessionStorage.removeItem(KEY_SLOT);
  clearView("Key forgotten. Enter the admin key to start.");
}

async function loadRoutes() {
  try {
    const { version, routes } = await api("/admin/routes");
    state.routes = routes.filter((r) => r.algorithm === "semantic");
    const select = $("route");
    const previous = select.value;
    select.replaceChildren(...state.routes.map((r) => el("option", { value: r.id }, `${r.id}  (${r.uri})`)));
    if (state.routes.some((r) => r.id === previous)) select.value = previous;
    say(state.routes.length
      ? `Connected. Config version ${version}; ${state.routes.length} semantic route(s).`
      : "Connected, but no route uses semantic balancing.");
    scheduleExplain(0);
  } catch (err) {
    if (err.status !== 401) say(`Cannot list routes: ${err.message}`, true);
  }
}

// -- Prompt tab ----------------------------------------------------------------

// A prompt, or a messages array / chat body pasted as JSON.
function explainBody(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[") || trimmed.startsWith("{")) {
    try {
      const parsed = JSON.parse(trimmed);
      if (Array.isArray(parsed)) return { messages: parsed };
      if (Array.isArray(parsed.messages)) return { messages: parsed.messages };
    } catch { /* not JSON (yet): treat it as text */ }
  }
  return { prompt: text };
}

function scheduleExplain(delay = DEBOUNCE_MS) {
  clearTimeout(state.timer);
  state.timer = setTimeout(explainNow, delay);
}

async function explainNow() {
  const text = $("prompt").value;
  if (!$("route").value || !text.trim()) { drawBars(null); return; }
  const seq = ++state.explainSeq;
  try {
    const result = await api(`/admin/routes/${route()}/explain`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(explainBody(text)),
    });
    if (seq === state.explainSeq) drawBars(result);  // drop answers that arrive out of order
  } catch (err) {
    if (seq === state.explainSeq) { drawBars(null); say(`Explain failed: ${err.message}`, true, "prompt"); }
  }
}

function drawBars(result) {
  state.shown = result;
  const chart = $("bars");
  chart.replaceChildren();
  $("pick").textContent = result ? result.pick : "-";
  $("reason").textContent = result ? result.reason : "-";
  $("margin").textContent = result ? num(result.margin) : "-";
  // Conversation routing: each user turn read, oldest first, with its weight.
  $("turns").textContent = result && result.context
    ? result.context.map((t) => `${t.weight} "${t.turn.slice(0, 40)}"`).join(" / ") : "-";
  const rows = result ? result.scores : [];
  // Drawn at the chart's own width (CSS: 100% of the page, at most 720 px), so a
  // narrow window gets a narrower plot instead of a chart running off the page.
  const width = Math.max(240, Math.min(720, chart.clientWidth || 720));
  const labelW = Math.min(150, Math.round(width * 0.3)), valueW = 52, rowH = 28, top = 8;
  const plotW = width - labelW - valueW;
  const height = Math.max(40, top * 2 + rows.length * rowH);
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  chart.setAttribute("height", height);
  if (!rows.length) {
    const note = result ? "no scores (no user text, or the embedding failed)" : "type a prompt";
    chart.append(svg("text", { x: 12, y: 25, class: "empty" }, note));
    return;
  }
  // Cosine scores can be negative; the axis starts at 0 unless a value is below it.
  const low = Math.min(0, ...rows.map((r) => Math.min(r.score, r.threshold)));
  const x = (v) => labelW + plotW * (v - low) / (1 - low);
  chart.append(svg("line", { x1: x(0), x2: x(0), y1: 0, y2: top * 2 + rows.length * rowH, class: "axis" }));
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const kind = r.instance === result.pick ? "pick" : r.cleared ? "cleared" : "below";
    const bar = svg("rect", {
      x: Math.min(x(0), x(r.score)), y: y + 4, height: rowH - 8,
      width: Math.max(1, Math.abs(x(r.score) - x(0))), class: `bar ${kind}`,
      "data-instance": r.instance, "data-score": r.score,
    });
    bar.append(svg("title", {}, `${r.instance}: ${r.score} (threshold ${r.threshold})`));
    chart.append(
      svg("text", { x: 8, y: y + rowH / 2 + 4 }, r.instance),
      bar,
      svg("line", { x1: x(r.threshold), x2: x(r.threshold), y1: y + 1, y2: y + rowH - 1,
                    class: "threshold", "data-threshold": r.threshold }),
      svg("text", { x: width - valueW + 6, y: y + rowH / 2 + 4 }, num(r.score, 3)),
    );
  });
}

// -- Batch tab -----------------------------------------------------------------

function showBatchError(err) {
  const box = $("batch-error");
  box.hidden = !err;
  box.textContent = err ? err.message : "";
}

async function batchCall(kind, query = "") {
  showBatchError(null);
  const body = $("batch-text").value;
  if (!body.trim()) { showBatchError(new Error("Paste or load labelled JSONL first.")); return null; }
  say(kind === "eval" ? "Evaluating..." : "Calibrating...", false, "batch");
  try {
    const result = await api(`/admin/routes/${route()}/${kind}${query}`, {
      method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body,
    });
    say("Done.", false, "batch");
    return result;
  } catch (err) {
    showBatchError(err);
    say("The batch was refused.", true, "batch");
    return null;
  }
}

function table(target, head, rows) {
  target.replaceChildren(
    el("tr", {}, ...head.map((h) => el("th", {}, h))),
    ...rows.map((row) => el("tr", {}, ...row.map((v) => (v instanceof Node ? v : el("td", {}, v))))),
  );
}

async function runEval() {
  const r = await batchCall("eval");
  if (!r) return;
  $("eval-out").hidden = false;
  const fallbacks = Object.entries(r.fallback_rate).map(([k, v]) => [`fallback rate: ${k}`, pct(v)]);
  const rates = r.rates;
  table($("figures"), ["figure", "value (count, 95% interval)"], [
    ["prompts", r.prompts], ["accuracy", rate(rates.accuracy)],
    ["balanced accuracy", rate(rates.balanced_accuracy)], ["in-scope accuracy", rate(rates.in_scope_accuracy)],
    ["top-1 ignoring thresholds", rate(r.top1_rate)], ["catchall recall", rate(rates.catchall_recall)],
    ["routed precision", rate(rates.routed_precision)],
    ...(fallbacks.length ? fallbacks : [["fallback rate", "0.0%"]]),
    ...r.warnings.map((w) => ["warning", w]),
  ]);
  const { labels, counts } = r.confusion;
  table($("confusion"), ["expected \\ picked", ...labels], counts.map((row, i) => [
    el("th", {}, labels[i]),
    ...row.map((n, j) => el("td", { class: i === j ? "diag" : n ? "off" : "" }, n)),
  ]));
  table($("per-instance-table"), ["instance", "threshold", "precision", "recall", "support"],
    Object.entries(r.instances).map(([name, s]) => [
      name, name in r.thresholds ? num(r.thresholds[name]) : "catchall",
      pct(s.precision), pct(s.recall), s.support]));
  const catchall = labels[labels.length - 1];
  // A miss meant for a specialist can become one of its examples in one click.
  const addCell = (m) => (m.expected === catchall || m.truncated ? ""
    : el("td", {}, addButton($("route").value, m.expected, m.prompt, `add to ${m.expected}`)));
  table($("misses"), ["prompt", "expected", "picked", "reason", "top score", ""], r.misses.length
    ? r.misses.map((m) => [m.prompt.slice(0, 300), m.expected, m.pick, m.reason, num(m.top_score),
      addCell(m)])
    : [["none: every prompt reached its instance", "", "", "", "", ""]]);
}

async function runCalibrate() {
  const query = new URLSearchParams({
    objective: $("objective").value, folds: $("folds").value,
    per_instance: $("per-instance").checked ? "1" : "0",
  });
  const r = await batchCall("calibrate", `?${query}`);
  if (!r) return;
  state.proposal = { ...r, routeId: $("route").value };
  $("apply").textContent = r.in_place
    ? "Apply to the config file and the running gateway\u2026"
    : "Apply to the running gateway\u2026";
  $("calibrate-out").hidden = false;
  $("apply-result").replaceChildren();
  $("proposal-summary").textContent = `Objective ${r.objective}: ${r.folds}-fold cross-validation ` +
    `over ${r.prompts} prompts (each fold judged by thresholds fitted on the others). ` +
    `Proposed balancer threshold, fitted on all: ${num(r.threshold)}.` +
    r.warnings.map((w) => ` Warning: ${w}.`).join("");
  table($("proposal"), ["thresholds", "accuracy", "balanced", "in-scope", "catchall recall", "precision"],
    r.measured.map((m) => [m.name, rate(m.accuracy), rate(m.balanced_accuracy),
      rate(m.in_scope_accuracy), rate(m.catchall_recall), rate(m.routed_precision)]));
  const perInstance = Object.entries(r.per_instance);
  table($("proposal-thresholds"), ["written to the config", "threshold"],
    [["balancer threshold", num(r.threshold)], ...perInstance.map(([n, t]) => [`instance ${n}`, num(t)])]);
}

function downloadConfig() {
  const config = state.proposal?.config;
  if (!config) return;
  const link = el("a", { href: URL.createObjectURL(new Blob([config.text], { type: "text/yaml" })),
                         download: config.name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

async function applyProposal() {
  const p = state.proposal;
  if (!p) return;
  const out = $("apply-result");
  if (!confirm(`Replace route "${p.routeId}" on the running gateway with threshold ${num(p.threshold)}?`)) return;
  // A config file gets the thresholds written into it in place, comments kept (as
  // Download does); a config in etcd gets the patched route through PUT.
  const [path, method, body] = p.in_place
    ? [`/admin/routes/${encodeURIComponent(p.routeId)}/thresholds`, "POST",
       { threshold: p.threshold, per_instance: p.per_instance }]
    : [`/admin/routes/${encodeURIComponent(p.routeId)}`, "PUT", p.route];
  try {
    const r = await api(path, {
      method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    out.replaceChildren(el("p", { class: "ok" }, `Applied: config version ${r.version}` +
      (r.applied ? " is live." : " saved; the reload watcher will apply it.")));
    await loadRoutes();
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, `Rejected: ${err.message}`),
      el("ul", { class: "error" }, ...err.errors.map((e) => el("li", {}, e))));
  }
}

// -- Adding examples (Batch and Live tabs) -------------------------------------

function addButton(routeId, instance, prompt, label, pickInstance = null) {
  const button = el("button", { type: "button", class: "add-example" }, label);
  button.addEventListener("click", () => addExample(routeId, pickInstance ? pickInstance() : instance,
                                                    prompt, button));
  return button;
}

// POST /admin/routes/{id}/examples: validated, saved and hot-reloaded by the gateway.
async function addExample(routeId, instance, prompt, button) {
  button.disabled = true;
  try {
    const r = await api(`/admin/routes/${encodeURIComponent(routeId)}/examples`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ instance, examples: [prompt] }),
    });
    button.textContent = r.added.length ? `added to ${instance}` : `already in ${instance}`;
    button.classList.add("done");
    say(r.added.length ? `Added as an example of ${instance}: config version ${r.version}` +
      (r.applied ? " is live." : " saved; the reload watcher will apply it.")
      : `${instance} already has this example.`, false, shownTab());
    scheduleExplain(0);
  } catch (err) {
    button.disabled = false;
    say(`Not added: ${err.message}`, true, shownTab());
  }
}

function liveAddCell(d) {
  if (!d.prompt || d.prompt_truncated) return el("td", { class: "hint" }, d.prompt ? "too long" : "");
  const names = state.routes.find((r) => r.id === d.route)?.instances ?? [];
  if (!names.length) return el("td", {}, "");
  const select = el("select", { "aria-label": "instance" }, ...names.map((n) => el("option", { value: n }, n)));
  select.value = names.includes(d.pick) ? d.pick : names[0];
  return el("td", { class: "add" }, select, addButton(d.route, null, d.prompt, "add as example", () => select.value));
}

// -- Live tab ------------------------------------------------------------------

function stopLive() {
  state.live?.abort();
  state.live = null;
  $("live-status").textContent = "not connected";
}

// EventSource cannot send headers, so the stream is read with fetch().
async function startLive() {
  stopLive();
  const control = new AbortController();
  state.live = control;
  $("live-table").tBodies[0].replaceChildren();
  try {
    const response = await fetch("/admin/decisions/stream", {
      headers: { "X-API-KEY": sessionStorage.getItem(KEY_SLOT) || "" }, signal: control.signal,
    });
    if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
    $("live-status").textContent = "connected: new requests appear at the top";
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const events = buffer.split("\n\n");
      buffer = events.pop();
      for (const event of events) {
        const data = event.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (!data) continue;
        const entry = JSON.parse(data);
        if (entry.kind === "shadow") addShadow(entry); else addLiveRow(entry);
      }
    }
    if (state.live === control) $("live-status").textContent = "the gateway closed the stream";
  } catch (err) {
    if (err.name !== "AbortError") $("live-status").textContent = `disconnected: ${err.message}`;
  }
}

// Conversation routing: how much each user turn weighed, oldest first ("-" otherwise).
function turnWeights(context) {
  return context && context.length ? context.join(" / ") : "-";
}

// Budget-aware routing read the decision again: the tier and whether the prompt moved.
function budgetNote(budget) {
  if (!budget) return "";
  return budget.moved ? ` \u2192 budget tier ${budget.tier}: moved to ${budget.served}`
    : ` (budget tier ${budget.tier}: kept)`;
}

function addLiveRow(d) {
  const body = $("live-table").tBodies[0];
  const kind = d.status >= 400 ? "failed" : d.reason && d.reason !== "matched" ? "fallback" : "";
  // The prompt is only in the feed for routes with logging.payloads on.
  body.prepend(el("tr", { class: kind, "data-seq": d.seq, "data-route": d.route,
                         "data-served": d.instance },
    ...[new Date(d.at * 1000).toLocaleTimeString(), d.route, d.pick, d.instance, d.status,
        num(d.top_score), (d.reason ?? "-") + budgetNote(d.budget), turnWeights(d.context), `${d.latency_ms} ms`, ""]
      .map((v) => el("td", {}, v)), el("td", { class: "prompt" }, d.prompt ?? ""), liveAddCell(d)));
  while (body.rows.length > LIVE_ROWS) body.lastElementChild.remove();
}

// A shadow decision completes after its request's row: it fills the oldest row of
// its route (same serving instance) still waiting, since the shadow queue is FIFO.
function addShadow(d) {
  const rows = [...$("live-table").tBodies[0].rows].reverse();
  const row = rows.find((r) => r.dataset.route === d.route && r.dataset.served === d.serving
                        && !r.dataset.shadow);
  if (row) {
    row.dataset.shadow = d.shadow_pick;
    const mark = d.agree === null ? " (not scored)" : d.agree ? " = served" : " \u2260 served";
    row.cells[9].textContent = `${d.shadow_pick} ${num(d.shadow_score)}${mark}`;
  }
  const c = d.counts;
  const scored = c.agree + c.disagree;
  const share = scored ? `${(100 * c.agree / scored).toFixed(1)}%` : "-";
  $("live-shadow").textContent = `shadow agreement on ${d.route}: ${share} of ${scored} ` +
    `scored decisions (${c.errors} not scored, ${c.dropped} dropped)`;
}

// -- Cache tab (shadow mode) ------------------------------------------------------

async function loadShadow() {
  try {
    const { routes, records } = await api("/admin/cache/shadow");
    $("cache-table").tBodies[0].replaceChildren(...routes.map((r) => el("tr", { "data-route": r.route },
      ...[r.route, r.requests, rate(r.would_hit), r.hits.exact ?? 0, r.hits.semantic ?? 0,
          rate(r.wrong_hits)].map((v) => el("td", {}, v)))));
    $("cache-records").tBodies[0].replaceChildren(...records.slice().reverse().map((d) =>
      el("tr", { class: d.wrong ? "failed" : "", "data-route": d.route },
        ...[new Date(d.at * 1000).toLocaleTimeString(), d.route, d.layer, num(d.prompt_similarity),
            num(d.answer_similarity), d.wrong ? "wrong" : "right", `${d.age} s`]
          .map((v) => el("td", {}, v)))));
    $("cache-status").textContent = routes.length
      ? `updated ${new Date().toLocaleTimeString()}` : "no route runs its cache in shadow mode";
  } catch (err) {
    if (err.status !== 401) $("cache-status").textContent = `cannot read: ${err.message}`;
  }
}

function startShadow() {
  stopShadow();
  loadShadow();
  state.cacheTimer = setInterval(loadShadow, CACHE_REFRESH_MS);
}

function stopShadow() {
  clearInterval(state.cacheTimer);
  state.cacheTimer = null;
}

// -- wiring --------------------------------------------------------------------

function showTab(name) {
  for (const button of document.querySelectorAll("[role=tab]")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${name}`;
  if (state.statusTab !== null && state.statusTab !== name) say(...state.status);
  if (name === "live") startLive(); else stopLive();
  if (name === "spend") loadSpend(); // spend.js
  if (name === "cache") startShadow(); else stopShadow();
}

function loadFile(event) {
  const file = event.target.files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => { $("batch-text").value = reader.result; };
  reader.readAsText(file);
}

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", useKey);
  $("key-forget").addEventListener("click", forgetKey);
  $("route").addEventListener("change", () => scheduleExplain(0));
  $("prompt").addEventListener("input", () => scheduleExplain());
  $("batch-file").addEventListener("change", loadFile);
  $("eval-btn").addEventListener("click", runEval);
  $("calibrate-btn").addEventListener("click", runCalibrate);
  $("download").addEventListener("click", downloadConfig);
  $("apply").addEventListener("click", applyProposal);
  $("cache-refresh").addEventListener("click", loadShadow);
  for (const button of document.querySelectorAll("[role=tab]")) {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  }
  window.addEventListener("resize", () => drawBars(state.shown));
  drawBars(null);
  if (sessionStorage.getItem(KEY_SLOT)) loadRoutes();
});
