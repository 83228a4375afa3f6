// semproxy playground, Spend tab: spend over time from the ledger, and what is left of
// each limit a consumer is held to. Plain JS, no build step; uses app.js's helpers
// (api, el, svg, table, $). Amounts are in the currency of the instances' pricing.
"use strict";

const SPEND_STEPS = {
  minute: { points: 60, label: "last 60 minutes" },
  hour: { points: 24, label: "last 24 hours" },
  day: { points: 30, label: "last 30 days" },
  week: { points: 12, label: "last 12 weeks" },
  month: { points: 12, label: "last 12 months" },
};
const SPEND_MEASURES = {
  cost: { label: "cost", of: (r) => r.cost },
  requests: { label: "requests", of: (r) => r.requests },
  tokens: { label: "tokens (input + output)", of: (r) => r.input_tokens + r.output_tokens },
};
const SPEND_SERIES = 6; // keys drawn apart; the rest are summed as "other"
const SPEND_COLORS = ["#2f6fde", "#e07b39", "#3b9a5b", "#a05bc4", "#c9a227", "#d04f7a", "#9aa3b2"];
const spend = { seq: 0, points: null };

function money(v) {
  const text = Number(v).toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = text.split(".");
  return `${Number(whole).toLocaleString("en")}.${frac.padEnd(2, "0")}`;
}

function amount(measure, v) {
  return measure === "cost" ? money(v) : Math.round(v).toLocaleString("en");
}

function spendLabel(iso, step) {
  const t = iso.replace("T", " ").replace(/:00Z$/, "");
  if (step === "minute" || step === "hour") return t.slice(11, 16);
  if (step === "month") return t.slice(0, 7);
  return t.slice(5, 10);
}

function clearSpend() {
  spend.seq++;
  spend.points = null;
  drawSpend();
  $("spend-table").replaceChildren();
  $("allowance-table").replaceChildren();
  $("spend-consumer").replaceChildren();
  $("spend-status").textContent = "";
}

async function loadSpend() {
  const seq = ++spend.seq;
  const by = $("spend-by").value;
  const step = $("spend-step").value;
  $("spend-status").textContent = "Reading the ledger...";
  try {
    const found = await api(`/admin/spend/series?by=${by}&step=${step}&points=${SPEND_STEPS[step].points}`);
    if (seq !== spend.seq) return;
    spend.points = found.points;
    $("spend-status").textContent = found.ledger
      ? `Ledger: ${found.ledger}. ${SPEND_STEPS[step].label}, per ${by}, UTC.`
      : "No spend ledger: the config has no limits or prices, or governance.ledger is none.";
    drawSpend();
    spendTotals();
    await loadConsumers();
  } catch (err) {
    if (seq === spend.seq) $("spend-status").textContent = `Cannot read spend: ${err.message}`;
  }
}

// The keys with the most of the measure over the window, then "other".
function spendKeys(measure) {
  const totals = new Map();
  for (const p of spend.points) {
    for (const r of p.rows) totals.set(r.key, (totals.get(r.key) || 0) + SPEND_MEASURES[measure].of(r));
  }
  const ranked = [...totals.entries()].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).map(([k]) => k);
  return ranked.length > SPEND_SERIES ? [...ranked.slice(0, SPEND_SERIES - 1), null] : ranked;
}

function stacks(keys, measure) {
  const named = new Set(keys.filter((k) => k !== null));
  return spend.points.map((p) => keys.map((k) => p.rows
    .filter((r) => (k === null ? !named.has(r.key) : r.key === k))
    .reduce((sum, r) => sum + SPEND_MEASURES[measure].of(r), 0)));
}

function drawSpend() {
  const chart = $("spend-chart");
  chart.replaceChildren();
  $("spend-legend").replaceChildren();
  const width = Math.max(320, chart.clientWidth || 720);
  const height = 240, left = 70, bottom = 22, top = 10;
  chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
  if (!spend.points) return;
  const measure = $("spend-measure").value;
  const keys = spendKeys(measure);
  const values = stacks(keys, measure);
  const highest = Math.max(0, ...values.map((v) => v.reduce((a, b) => a + b, 0)));
  if (!highest) {
    chart.append(svg("text", { x: 12, y: 30, class: "empty" }, `no ${SPEND_MEASURES[measure].label} in this window`));
    return;
  }
  const step = $("spend-step").value;
  const slot = (width - left - 8) / spend.points.length;
  const y = (v) => height - bottom - (v / highest) * (height - bottom - top);
  chart.append(
    svg("line", { x1: left, x2: width - 8, y1: y(0), y2: y(0), class: "axis" }),
    svg("text", { x: 4, y: top + 10 }, amount(measure, highest)),
    svg("text", { x: 4, y: y(0) }, "0"),
  );
  spend.points.forEach((p, i) => {
    let base = 0;
    keys.forEach((k, j) => {
      const v = values[i][j];
      if (!v) return;
      const bar = svg("rect", {
        x: left + i * slot + 1, width: Math.max(1, slot - 2), y: y(base + v), height: y(base) - y(base + v),
        class: "spend-bar", fill: SPEND_COLORS[j], "data-key": k === null ? "(other)" : k,
        "data-value": v, "data-start": p.start,
      });
      bar.append(svg("title", {}, `${k === null ? "other" : k || "(none)"}, ${p.start}: ${amount(measure, v)}`));
      chart.append(bar);
      base += v;
    });
    const every = Math.ceil(spend.points.length / 8);
    if (i % every === 0) {
      chart.append(svg("text", { x: left + i * slot, y: height - 6, class: "tick-label" }, spendLabel(p.start, step)));
    }
  });
  $("spend-legend").append(...keys.map((k, j) => {
    const swatch = svg("svg", { width: 12, height: 12 });
    swatch.append(svg("rect", { width: 12, height: 12, fill: SPEND_COLORS[j] }));
    return el("span", { class: "key", "data-key": k === null ? "(other)" : k }, swatch,
      ` ${k === null ? "other" : k || "(none)"}`);
  }));
}

function spendTotals() {
  const sums = new Map();
  for (const p of spend.points) {
    for (const r of p.rows) {
      const s = sums.get(r.key) || { requests: 0, input: 0, output: 0, cached: 0, cost: 0 };
      s.requests += r.requests; s.input += r.input_tokens; s.output += r.output_tokens;
      s.cached += r.cached_input_tokens; s.cost += r.cost;
      sums.set(r.key, s);
    }
  }
  const rows = [...sums.entries()].sort((a, b) => b[1].cost - a[1].cost);
  table($("spend-table"), [$("spend-by").value, "requests", "input tokens", "output tokens", "cached input", "cost"],
    rows.length ? rows.map(([k, s]) => [k || "(none)", s.requests.toLocaleString("en"),
      s.input.toLocaleString("en"), s.output.toLocaleString("en"), s.cached.toLocaleString("en"), money(s.cost)])
      : [["nothing spent in this window", "", "", "", "", ""]]);
}

async function loadConsumers() {
  const { consumers } = await api("/admin/limits");
  const select = $("spend-consumer");
  const previous = select.value;
  select.replaceChildren(...consumers.map((c) => el("option", { value: c.username },
    c.group_id ? `${c.username} (${c.group_id})` : c.username)));
  if (consumers.some((c) => c.username === previous)) select.value = previous;
  await loadAllowance();
}

async function loadAllowance() {
  const name = $("spend-consumer").value;
  if (!name) {
    table($("allowance-table"), ["limit"], [["no consumers in the config"]]);
    return;
  }
  const seq = spend.seq;
  const found = await api(`/admin/consumers/${encodeURIComponent(name)}/allowance`);
  if (seq !== spend.seq) return;
  const show = (a, v) => (v === null ? "per process" : a.unit === "money" ? money(v) : Math.round(v).toLocaleString("en"));
  table($("allowance-table"), ["limit", "counts for", "window", "used", "of", "left", "", "resets (UTC)"],
    found.allowances.length ? found.allowances.map((a) => {
      const bar = el("progress", { max: a.amount, value: a.used ?? 0, "data-limit": a.limit });
      const owner = a.route && a.scope !== "route" ? `${a.scope} ${a.owner} on ${a.route}` : `${a.scope} ${a.owner}`;
      const unit = a.unit === "money" ? "" : ` ${a.unit.replace("_", " ")}`;
      return [a.limit, owner, a.window, show(a, a.used), show(a, a.amount) + unit,
        show(a, a.remaining), el("td", {}, bar), a.resets_at ? a.resets_at.replace("T", " ").replace(":00Z", "") : "-"];
    }) : [["no limit applies to this consumer", "", "", "", "", "", "", ""]]);
}

document.addEventListener("DOMContentLoaded", () => {
  const steps = $("spend-step");
  steps.replaceChildren(...Object.entries(SPEND_STEPS).map(([k, s]) => el("option", { value: k }, s.label)));
  steps.value = "hour";
  $("spend-measure").replaceChildren(...Object.entries(SPEND_MEASURES).map(([k, m]) => el("option", { value: k }, m.label)));
  for (const id of ["spend-by", "spend-step"]) $(id).addEventListener("change", loadSpend);
  $("spend-measure").addEventListener("change", drawSpend);
  $("spend-refresh").addEventListener("click", loadSpend);
  $("spend-consumer").addEventListener("change", () => loadAllowance().catch((err) => {
    $("spend-status").textContent = `Cannot read the allowance: ${err.message}`;
  }));
  window.addEventListener("resize", drawSpend);
});
