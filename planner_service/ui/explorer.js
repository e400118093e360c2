// The plan explorer: a form for a scan, POST /explore for its explained plan, the answer drawn as tables
// and bins. Plain DOM (textContent only: no markup from data); the request lives in the URL.
"use strict";

const PAGE = 50;
const $ = (id) => document.getElementById(id);
const state = { request: null, root: "", page: { manifests: 0, files: 0, tasks: 0, rule: null } };

// Snapshot ids are 64-bit: past 2^53 a JavaScript number rounds them, so they are read as BigInt (from the
// number's own text) and written back as their digits.
function parseJson(text) {
  return JSON.parse(text, (key, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source)
      ? BigInt(context.source) : value);
}

function toJson(value) {
  return JSON.stringify(value, (key, v) => (typeof v === "bigint" ? `#bigint#${v}` : v))
    .replace(/"#bigint#(-?\d+)"/g, "$1");
}

function token() {
  return sessionStorage.getItem("scan-planner-token") || "";
}

async function api(path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const response = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers,
    body: body === undefined ? undefined : toJson(body),
  });
  let data = null;
  try {
    data = parseJson(await response.text());
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    const failure = new Error(error.message || `HTTP ${response.status}`);
    failure.status = response.status;
    failure.type = error.type || "";
    throw failure;
  }
  return data;
}

function el(tag, text, attributes, style) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  Object.assign(node.style, style || {}); // (the CSSOM: the page's policy refuses style attributes)
  return node;
}

function status(text, failed) {
  const node = $("status");
  node.textContent = text;
  node.classList.toggle("failed", Boolean(failed));
}

// Where a token comes from, for the authentication the service has (the page is served with it in
// <html data-token-sources>, in the words of its 401s).
function tokenHint() {
  const sources = document.documentElement.dataset.tokenSources || "";
  if (!sources) return "A bearer token this service takes; it stays in this tab.";
  return `A bearer token: ${sources}. It stays in this tab.`;
}

function needsToken(error) {
  if (error.status !== 401) return false;
  $("token-row").hidden = false;
  $("token").focus();
  status(`Refused: ${error.message}. Enter a bearer token, then plan again.`, true);
  return true;
}

// --- the request: form <-> body <-> URL ---------------------------------------------------------------

function integer(text, name) {
  if (!/^-?\d+$/.test(text.trim())) throw new Error(`${name} is a whole number, not ${JSON.stringify(text)}`);
  const value = BigInt(text.trim());
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

function requestFromForm() {
  const body = { table: $("table").value.trim() };
  const at = $("at").value;
  const value = $("at-value").value.trim();
  if (at === "snapshot") body["snapshot-id"] = integer(value, "The snapshot id");
  if (at === "ref") body.ref = value;
  if (at === "time") {
    const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    if (Number.isNaN(ms)) throw new Error(`Not a time: ${JSON.stringify(value)} (ISO 8601 or epoch ms)`);
    body["as-of-timestamp-ms"] = ms;
  }
  const filter = $("filter").value.trim();
  if (filter) body.filter = filter;
  const select = $("select").value.split(",").map((c) => c.trim()).filter(Boolean);
  if (select.length) body.select = select;
  const options = {};
  for (const name of ["split-size", "lookback", "file-open-cost"]) {
    const text = $(name).value.trim();
    if (text) options[name] = integer(text, name);
  }
  if (Object.keys(options).length) body.options = options;
  if ($("grouping").value !== "none") body.grouping = $("grouping").value;
  return body;
}

function formFromRequest(body) {
  $("table").value = body.table || "";
  const choice = "snapshot-id" in body ? ["snapshot", body["snapshot-id"]]
    : "ref" in body ? ["ref", body.ref]
    : "as-of-timestamp-ms" in body ? ["time", new Date(body["as-of-timestamp-ms"]).toISOString()]
    : ["current", ""];
  $("at").value = choice[0];
  $("at-value").value = String(choice[1]);
  $("at-value").disabled = choice[0] === "current";
  $("filter").value = body.filter || "";
  $("select").value = (body.select || []).join(", ");
  for (const name of ["split-size", "lookback", "file-open-cost"]) {
    $(name).value = body.options && name in body.options ? body.options[name] : "";
  }
  const groupings = [...$("grouping").options].map((option) => option.value);
  $("grouping").value = groupings.includes(body.grouping) ? body.grouping : "none";
}

function requestFromUrl() {
  const text = new URLSearchParams(location.search).get("request");
  if (!text) return null;
  try {
    const body = parseJson(text);
    return body && typeof body === "object" && typeof body.table === "string" ? body : null;
  } catch (_) {
    return null;
  }
}

function permalink(body) {
  return `/ui?request=${encodeURIComponent(toJson(body))}`;
}

function shellQuote(text) {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

function curl(body) {
  const auth = token() ? " -H 'Authorization: Bearer $SCAN_PLANNER_TOKEN'" : "";
  return `curl -s -X POST ${location.origin}/plan -H 'Content-Type: application/json'${auth} -d ${shellQuote(toJson(body))}`;
}

// --- tables and snapshots ------------------------------------------------------------------------------

async function loadTables() {
  const list = $("tables");
  const seen = [];
  const queue = [null];
  while (queue.length && seen.length < 200) {
    const parent = queue.shift();
    const query = parent ? `?parent=${encodeURIComponent(parent.join("\u001f"))}` : "";
    const { namespaces } = await api(`/v1/namespaces${query}`);
    for (const namespace of namespaces) {
      seen.push(namespace);
      if (namespace.length < 3) queue.push(namespace);
    }
  }
  list.replaceChildren();
  for (const namespace of seen) {
    const { identifiers } = await api(`/v1/namespaces/${encodeURIComponent(namespace.join("\u001f"))}/tables`);
    for (const id of identifiers) list.append(el("option", undefined, { value: [...id.namespace, id.name].join(".") }));
  }
  if (list.options.length === 1 && !$("table").value) $("table").value = list.options[0].value;  // the only one
}

async function loadHistory(table, body) {
  const [snapshots, refs] = await Promise.all([
    api(`/tables/${encodeURIComponent(table)}/snapshots`),
    api(`/tables/${encodeURIComponent(table)}/refs`),
  ]);
  const names = {};
  for (const [name, ref] of Object.entries(refs.refs)) (names[ref["snapshot-id"]] ||= []).push(`${ref.type} ${name}`);
  const chosen = body["snapshot-id"] ?? (body.ref ? refs.refs[body.ref]?.["snapshot-id"] : snapshots["current-snapshot-id"]);
  const timeline = $("timeline");
  timeline.replaceChildren();
  for (const snapshot of snapshots.snapshots) {
    const id = snapshot["snapshot-id"];
    const button = el("button", undefined, { type: "button", "aria-current": String(id === chosen) });
    for (const name of names[id] || []) button.append(el("span", name, { class: "ref" }));
    const when = new Date(snapshot["timestamp-ms"]).toISOString().replace("T", " ").replace(".000Z", "Z");
    button.append(el("span", ` ${snapshot.summary?.operation || "snapshot"} ${id}`), el("br"), el("small", when));
    button.setAttribute("aria-label", `Plan snapshot ${id}, ${snapshot.summary?.operation || ""} at ${when}`);
    button.addEventListener("click", () => {
      $("at").value = "snapshot";
      $("at-value").disabled = false;
      $("at-value").value = String(id);
      plan(true);
    });
    timeline.append(el("li").appendChild(button).parentNode);
  }
  $("history").hidden = false;
}

// --- the plan ------------------------------------------------------------------------------------------

function showFilterError(message) {
  const box = $("filter-error");
  const found = /line (\d+), column (\d+)/.exec(message);
  const filter = $("filter").value;
  if (!found || !filter) {
    box.textContent = message;
  } else {
    const column = Number(found[2]);
    const line = filter.split("\n")[Number(found[1]) - 1] || "";
    box.textContent = `${line}\n${" ".repeat(Math.max(column - 1, 0))}^\n${message}`;
    const offset = filter.split("\n").slice(0, Number(found[1]) - 1).join("\n").length + (found[1] > 1 ? 1 : 0);
    $("filter").setSelectionRange(offset + column - 1, offset + column);
  }
  box.hidden = false;
  $("filter").setAttribute("aria-invalid", "true");
  $("filter").focus();
}

function checkedRequest() {
  // the form's request, or null with the form's mistake in the status line
  try {
    return requestFromForm();
  } catch (error) {
    status(error.message, true);
    return null;
  }
}

async function plan(pushHistory) {
  const body = checkedRequest();
  if (!body) return;
  if (!body.table) {
    status("Choose a table first.", true);
    $("table").focus();
    return;
  }
  state.request = body;
  state.page = { manifests: 0, files: 0, tasks: 0, rule: null };
  const link = permalink(body);
  $("permalink").href = link;
  if (pushHistory) history.pushState(null, "", link);
  $("curl").hidden = true;
  await explore();
  loadHistory(body.table, body).catch(() => {});
}

let explorations = 0; // each /explore request's number: only the newest one's answer is shown

async function explore() {
  const mine = ++explorations;
  const body = state.request;
  const { manifests, files, tasks, rule } = state.page;
  const request = { ...body, "manifests-offset": manifests, "files-offset": files, "tasks-offset": tasks, "page-size": PAGE };
  if (rule) request["files-rule"] = rule;
  $("filter-error").hidden = true;
  $("filter").removeAttribute("aria-invalid");
  status("Planning…");
  const started = performance.now();
  try {
    const answer = await api("/explore", request);
    if (mine !== explorations) return; // a newer request was made meanwhile: its answer is the one to show
    render(answer);
    const cached = answer.fresh ? "" : " (from the plan cache: planned earlier, same snapshot)";
    status(`Planned ${answer.table} in ${Math.round(performance.now() - started)} ms${cached}.`);
  } catch (error) {
    if (mine !== explorations || needsToken(error)) return;
    if (/filter/i.test(error.message) && error.status === 400) showFilterError(error.message);
    status(`${error.status || ""} ${error.type || "Error"}: ${error.message}`.trim(), true);
  }
}

function count(n, thing) {
  return `${number(n)} ${thing}${n === 1 ? "" : "s"}`;
}

function number(n) {
  return Number(n).toLocaleString("en-US");
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = Number(n);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

// A file's location below the table's directory is shown from there ("…/data/x.parquet"); the whole in its title.
function short(path) {
  return state.root && path.startsWith(state.root) ? `…/${path.slice(state.root.length)}` : path;
}

function pathCell(path) {
  return el("td", short(path), { class: "path", title: path });
}

function render(answer) {
  $("result").hidden = false;
  const location = answer["metadata-location"] || "";
  const at = location.lastIndexOf("/metadata/");
  state.root = at > 0 ? location.slice(0, at + 1) : "";
  const m = answer.metrics;
  const facts = [
    ["snapshot", answer["snapshot-id"] ?? "none"],
    ["data files planned", `${number(m["scanned-data-files"])} of ${number(answer.files.total)}`],
    ["manifests read", `${number(m["total-data-manifests"] - m["skipped-data-manifests"])} of ${number(m["total-data-manifests"])}`],
    ["tasks", number(answer["task-count"])],
    ["bytes to read", bytes(m["total-file-size-bytes"])],
    ["delete files", number(m["total-delete-files"])],
    ["planning", `${m["planning-time-ms"]} ms`],
    ["plan id", answer["plan-id"].slice(0, 16) + "…"],
  ];
  $("summary").replaceChildren(...facts.map(([k, v]) => {
    const div = el("div");
    div.append(el("dt", k), el("dd", v));
    return div;
  }));
  $("stages").tBodies[0].replaceChildren(...Object.entries(m["stage-time-ms"]).map(([stage, ms]) => row([stage, ms], [1])));
  const caches = Object.entries(answer["cache-hits"]).map(([name, c]) => `${name}: ${c.hits} hits, ${c.misses} misses`);
  $("caches").textContent = answer.fresh ? (caches.length ? `Caches: ${caches.join("; ")}.` : "No cache used.") : "";
  renderManifests(answer.manifests);
  renderFiles(answer.files);
  $("residuals").tBodies[0].replaceChildren(
    ...(answer.residuals.length ? answer.residuals.map(residualRow) : [row(["(no files planned)", ""])]));
  $("deletes").tBodies[0].replaceChildren(
    ...(answer["delete-files"].length
      ? answer["delete-files"].map((d) => {
        const tr = row([d.content, number(d["record-count"] ?? 0), number(d["applies-to-files"])], [1, 2]);
        tr.prepend(pathCell(d["file-path"]));
        const listed = el("td", undefined, { class: "path" });
        const more = d["applies-to-files"] - d["data-files"].length;
        listed.append(...d["data-files"].map((path) => el("div", short(path), { title: path })));
        if (more > 0) listed.append(el("div", `and ${number(more)} more`));
        tr.append(listed);
        return tr;
      })
      : [row(["(none)", "", "", "", ""])]));
  renderTasks(answer.tasks);
}

function row(cells, numeric, paths) {
  const tr = el("tr");
  cells.forEach((cell, i) => {
    const td = el("td", cell);
    if ((numeric || []).includes(i)) td.className = "num";
    if ((paths || []).includes(i)) td.className = "path";
    tr.append(td);
  });
  return tr;
}

// A residual as the filter string people write, its REST JSON (what a reader is sent) in the title.
function residualRow(r) {
  const tr = el("tr");
  tr.append(el("td", r["residual-text"], { class: "filter", title: toJson(r.residual) }),
    el("td", number(r.files), { class: "num" }));
  return tr;
}

function ruleCell(rule) {
  return el("td", rule, { class: "rule" });
}

function reasonCell(reason) {
  return el("td", reason, { class: "reason" });
}

function keptCell(kept) {
  return el("td", kept ? "kept" : "skipped", { class: kept ? "kept" : "skipped" });
}

function renderManifests(manifests) {
  const counts = Object.entries(manifests["by-rule"]).map(([rule, n]) => `${rule}: ${number(n)}`);
  $("manifest-rules").textContent = `${number(manifests.kept)} of ${number(manifests.total)} kept. ${counts.join(", ")}`;
  $("manifests").tBodies[0].replaceChildren(...manifests.items.map((item) => {
    const tr = el("tr");
    tr.append(pathCell(item["manifest-path"]), el("td", item.content), keptCell(item.kept), ruleCell(item.rule), reasonCell(item.reason));
    return tr;
  }));
  pager("manifests-pager", manifests.offset, manifests.total, (offset) => { state.page.manifests = offset; explore(); });
}

const RULE_WORDS = {
  "no-filter": "kept: no filter",
  "might-match": "kept: might match",
  "partition-value": "skipped by partition value",
  "empty-file": "skipped: empty",
  "column-bounds": "skipped by column bounds",
  "null-counts": "skipped by null counts",
  "nan-counts": "skipped by NaN counts",
};

function renderFiles(files) {
  const group = $("file-rules");
  const kept = files.kept && files.kept < files.total ? ", kept first" : "";
  const all = el("button", `all ${number(files.total)}${kept}`, { type: "button", "aria-pressed": String(!files.rule), "data-rule": "" });
  const buttons = [all, ...Object.entries(files["by-rule"]).map(([rule, n]) =>
    el("button", `${RULE_WORDS[rule] || rule}: ${number(n)}`, { type: "button", "aria-pressed": String(files.rule === rule), "data-rule": rule }))];
  for (const button of buttons) {
    button.addEventListener("click", () => {
      state.page.rule = button.dataset.rule || null;
      state.page.files = 0;
      explore();
    });
  }
  group.replaceChildren(...buttons);
  $("files").tBodies[0].replaceChildren(...files.items.map((f) => {
    const tr = el("tr");
    tr.append(pathCell(f["file-path"]), keptCell(f.kept), ruleCell(f.rule), reasonCell(f.reason),
      el("td", number(f["file-size-in-bytes"]), { class: "num" }), el("td", number(f["record-count"]), { class: "num" }));
    return tr;
  }));
  const total = files.rule ? files["by-rule"][files.rule] || 0 : files.total;
  pager("files-pager", files.offset, total, (offset) => { state.page.files = offset; explore(); });
}

function renderTasks(tasks) {
  const target = tasks["split-size"];
  $("bins-legend").textContent = `${count(tasks.count, "task")} packed to the split size ${bytes(target)} (dashed line), `
    + `lookback ${tasks.lookback}; a piece weighs at least the open-file cost ${bytes(tasks["open-file-cost"])} (amber).`;
  const histogram = tasks["fill-histogram"];
  const most = Math.max(1, ...histogram);
  const fill = $("fill");
  const buckets = histogram.map((n, i) => `${fillBucket(i, histogram.length)}: ${count(n, "task")}`);
  fill.setAttribute("aria-label", `Tasks by how full they are (weight over the split size): ${buckets.join(", ")}`);
  fill.replaceChildren(...histogram.map((n, i) =>
    el("span", undefined, { title: buckets[i] }, { height: `${(100 * n) / most}%` })));
  $("fill-most").textContent = count(most, "task");
  const scale = Math.max(target, ...tasks.items.map((t) => t.weight));
  $("bins").replaceChildren(...tasks.items.map((task) => {
    const li = el("li");
    const label = el("span", `task ${task.index}: ${task.files} file${task.files === 1 ? "" : "s"}, ${bytes(task["size-bytes"])}`
      + grouped(task));
    const bar = el("div", undefined, { class: "bar", role: "img",
      "aria-label": `Task ${task.index}: ${task.pieces.length} pieces weighing ${bytes(task.weight)} of ${bytes(target)}` });
    for (const piece of task.pieces) {
      const small = piece.weight > piece.length;
      bar.append(el("span", undefined, { class: small ? "small" : "",
        title: `${short(piece["file-path"])} [${piece.start}, +${piece.length}) weighs ${bytes(piece.weight)}` },
      { width: `${(100 * piece.weight) / scale}%` }));
    }
    bar.append(el("i", undefined, { class: "target" }, { left: `${(100 * target) / scale}%` }));
    li.append(label, bar);
    return li;
  }));
  pager("tasks-pager", tasks.offset, tasks.count, (offset) => { state.page.tasks = offset; explore(); });
}

// Bucket i of n of the fill histogram, as a range of the split size: weights from i/n of it up to (i+1)/n,
// the last bucket also fuller (a task may weigh more than the split size).
function fillBucket(i, n) {
  const percent = (k) => Math.round((100 * k) / n);
  return i === n - 1 ? `${percent(i)}% or more` : `${percent(i)}-${percent(i + 1)}%`;
}

function grouped(task) {
  // a grouped plan's task: its partition key and, ordered by the table's sort order, its key range
  // (toJson: a key parsed as BigInt, above 2^53, is written as its digits; JSON.stringify would throw)
  let text = "grouping-key" in task ? `; key ${toJson(task["grouping-key"])}` : "";
  if ("key-range" in task) {
    const range = task["key-range"];
    text += range ? `; sort key ${toJson(range.first)} to ${toJson(range.last)}` : "; no bounds";
  }
  return text;
}

function pager(id, offset, total, go) {
  const nav = $(id);
  nav.replaceChildren();
  if (total <= PAGE) return;
  const previous = el("button", "Previous", { type: "button" });
  const next = el("button", "Next", { type: "button" });
  previous.disabled = offset === 0;
  next.disabled = offset + PAGE >= total;
  previous.addEventListener("click", () => go(Math.max(0, offset - PAGE)));
  next.addEventListener("click", () => go(offset + PAGE));
  nav.append(previous, el("span", `${number(offset + 1)}-${number(Math.min(offset + PAGE, total))} of ${number(total)}`), next);
}

// --- wiring --------------------------------------------------------------------------------------------

function start() {
  $("token-help").textContent = tokenHint();
  $("token").value = token();
  $("token").addEventListener("change", () => {
    sessionStorage.setItem("scan-planner-token", $("token").value.trim());
    loadTables().catch(() => {});
  });
  $("at").addEventListener("change", () => {
    $("at-value").disabled = $("at").value === "current";
    if (!$("at-value").disabled) $("at-value").focus();
  });
  $("scan").addEventListener("submit", (event) => {
    event.preventDefault();
    plan(true);
  });
  $("copy-curl").addEventListener("click", async () => {
    const body = checkedRequest();
    if (!body) return;
    const command = curl(body);
    $("curl").textContent = command;
    $("curl").hidden = false;
    try {
      await navigator.clipboard.writeText(command);
      status("Copied the curl command.");
    } catch (_) {
      status("The curl command is below (select it to copy).");
    }
  });
  window.addEventListener("popstate", () => {
    const body = requestFromUrl();
    if (body) {
      formFromRequest(body);
      plan(false);
    }
  });
  loadTables().catch((error) => { needsToken(error); });
  const body = requestFromUrl();
  if (body) {
    formFromRequest(body);
    plan(false);
  }
}

document.addEventListener("DOMContentLoaded", start);
