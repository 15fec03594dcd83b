"use strict";
// The trajectory viewer's script (learner/viewer.py inlines it). Every string from the data becomes a text node or
// an attribute value, never markup: observations are web pages and may hold markup.
const DATA = JSON.parse(document.getElementById("data").textContent);
const EPISODES = DATA.episodes;
const OUTCOMES = ["success", "fail", "unscorable", "infra_error"];
const FOLD_CHARS = 2000; // observations longer than this start folded
const $ = (id) => document.getElementById(id);
const rows = [];

function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function fmt(x) {
  return x === null || x === undefined ? "n/a" : String(Math.round(x * 1000) / 1000);
}

function naturalCompare(a, b) {
  return a.localeCompare(b, undefined, { numeric: true });
}

function addOptions(select, values, counts) {
  for (const v of values) {
    const option = el("option", null, `${v} (${counts[v] || 0})`);
    option.value = v;
    select.append(option);
  }
}

function countBy(key) {
  const counts = {};
  for (const e of EPISODES) counts[e[key]] = (counts[e[key]] || 0) + 1;
  return counts;
}

function buildFilters() {
  $("files").textContent = DATA.files
    .map((f) => (f.shown < f.episodes ? `${f.name}: the last ${f.shown} of ${f.episodes}` : `${f.name}: ${f.episodes}`))
    .join(" · ");
  const files = countBy("file");
  addOptions($("f-file"), DATA.files.map((f) => f.name), files);
  const tasks = countBy("task");
  addOptions($("f-task"), Object.keys(tasks).sort(naturalCompare), tasks);
  addOptions($("f-outcome"), OUTCOMES, countBy("outcome"));
  for (const id of ["f-file", "f-task", "f-outcome"]) $(id).addEventListener("change", applyFilters);
  $("f-text").addEventListener("input", applyFilters);
}

function buildRows() {
  const body = document.createDocumentFragment();
  EPISODES.forEach((e, i) => {
    e.search = `${e.task} ${e.intent}`.toLowerCase();
    const tr = el(
      "tr",
      null,
      el("td", null, e.file),
      el("td", null, e.iteration ?? ""),
      el("td", null, e.task),
      el("td", null, e.sample),
      el("td", e.outcome, e.outcome),
      el("td", null, fmt(e.reward)),
      el("td", null, e.turns.length),
      el("td", null, e.termination),
      el("td", null, e.intent.length > 120 ? e.intent.slice(0, 117) + "..." : e.intent),
    );
    tr.dataset.index = i;
    tr.addEventListener("click", () => showEpisode(i));
    rows.push(tr);
    body.append(tr);
  });
  document.querySelector("#episodes tbody").append(body);
}

function applyFilters() {
  const file = $("f-file").value;
  const task = $("f-task").value;
  const outcome = $("f-outcome").value;
  const words = $("f-text").value.trim().toLowerCase();
  let shown = 0;
  EPISODES.forEach((e, i) => {
    const ok =
      (!file || e.file === file) &&
      (!task || e.task === task) &&
      (!outcome || e.outcome === outcome) &&
      (!words || e.search.includes(words));
    rows[i].hidden = !ok;
    shown += ok ? 1 : 0;
  });
  $("shown").textContent = `${shown} of ${EPISODES.length} episodes`;
}

function checksTable(checks) {
  const table = el("table", "checks", el("thead", null, el("tr", null, el("th", null, "check"),
    el("th", null, "score"), el("th", null, "why"))));
  const body = el("tbody");
  for (const c of checks) {
    body.append(el("tr", null, el("td", null, c.type), el("td", null, fmt(c.score)), el("td", null, c.why)));
  }
  table.append(body);
  return table;
}

function turnBlock(t) {
  const box = el("div", "turn");
  box.append(el("h3", null, `turn ${t.index} · ${t.url} · weights v${t.weight_version}`));
  if (t.infra_error) box.append(el("p", "err", `recovered infrastructure error: ${t.infra_error}`));
  if (t.error) box.append(el("p", "err", `last action error: ${t.error}`));
  const obs = el("details", "observation");
  obs.open = t.observation.length <= FOLD_CHARS;
  const cut = t.truncated ? ", cut to the token budget" : "";
  obs.append(el("summary", null, `observation (${t.observation.length} characters${cut})`),
    el("pre", null, t.observation));
  box.append(obs);
  box.append(el("p", null, el("b", null, "reply"), t.finish_reason === "length" ? " (cut at the token limit)" : ""));
  box.append(el("pre", "reply", t.reply));
  const action = t.action !== null ? el("code", "action", t.action) : el("span", "err", `parse error: ${t.parse_error}`);
  box.append(el("p", null, el("b", null, "action "), action));
  if (t.screenshot) {
    const img = el("img");
    img.src = t.screenshot;
    img.width = 480;
    box.append(img);
  }
  return box;
}

function showEpisode(i) {
  const e = EPISODES[i];
  for (const r of rows) r.classList.remove("open");
  rows[i].classList.add("open");
  const box = $("episode");
  box.replaceChildren();
  box.hidden = false;
  const where = [e.file, e.phase, e.label, e.iteration === null ? null : `iteration ${e.iteration}`, e.source]
    .filter((x) => x !== null && x !== undefined)
    .join(" · ");
  box.append(
    el("h2", null, `task ${e.task} #${e.sample} · `, el("span", e.outcome, e.outcome),
      ` · reward ${fmt(e.reward)} · ${e.termination}`),
    el("p", null, where, e.sites.length ? ` · sites: ${e.sites.join(", ")}` : ""),
    el("p", "intent", el("b", null, "intent "), e.intent),
    el("p", null, el("b", null, "answer "), e.answer ?? "(never stopped)", el("b", null, " · final URL "), e.final_url),
  );
  if (e.failure) box.append(el("p", "err", `infrastructure failure: ${e.failure}`));
  if (e.reward_error) box.append(el("p", "err", `reward checker error: ${e.reward_error}`));
  box.append(el("h3", null, "reward checks (the reward is the product of their scores)"));
  box.append(e.checks.length ? checksTable(e.checks) : el("p", null, "no checks recorded"));
  for (const t of e.turns) box.append(turnBlock(t));
  box.scrollIntoView();
}

buildFilters();
buildRows();
applyFilters();
