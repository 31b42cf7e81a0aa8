// The bli-memory page: browse, search, history, edit, forget (with undo), pins and the ops view.
// Everything goes through the door's JSON API as the signed-in device; state-changing requests
// carry the session's CSRF token. No library, no inline script or style (the door's CSP forbids
// them); text is always set with textContent, never parsed as HTML.

const PAGE_SIZE = 20;
const SEARCH_LIMIT = 20;
// The CLI's and the search_memory tool's floor (SEARCH_MIN_SIMILARITY in bli_memory/tools.py): a hit
// whose cosine similarity is below it is no match and is not listed; one found by keyword alone has no
// cosine and is kept. The door applies it (`threshold`), so the page shows what the CLI shows.
const SEARCH_MIN_SIMILARITY = 0.25;
const GLOBAL = "\u0000global"; // the space picker's value for the person's global space
const SVG = "http://www.w3.org/2000/svg";
const VERDICTS = ["win", "loss", "noise"];
const OUTCOMES = ["ok", "skipped", "failed"];
const HOOK_WINDOWS_DAYS = [7, 30];

const state = {
  csrf: null,
  spaces: [],
  space: null, // a project tag, or GLOBAL
  cursor: null,
  searching: false,
};

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET" && state.csrf) headers["X-CSRF-Token"] = state.csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  let answer = {};
  try {
    answer = await response.json();
  } catch (_) {
    answer = {};
  }
  if (!response.ok) throw new ApiError(response.status, answer.error, answer.message);
  return answer;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function notify(text, isError = false) {
  const notice = $("notice");
  notice.textContent = text;
  notice.classList.toggle("error", isError);
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) return showSignin(error.message);
  notify(error.message || String(error), true);
}

// -- where the page reads and writes ---------------------------------------------------------------

function isGlobal() {
  return state.space === GLOBAL;
}

// A request needs a project tag even when it reads the global space (which the door derives from
// the signed-in person, never from a tag).
function containerTag() {
  if (!isGlobal()) return state.space;
  return state.spaces[0] || "default";
}

function scope() {
  return isGlobal() ? "global" : "project";
}

function kindLabel(kind) {
  return kind === "memory" || kind === "fact" ? "fact" : "document";
}

function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 16) + " UTC" : "";
}

// -- views -----------------------------------------------------------------------------------------

function showView(name) {
  for (const view of ["signin", "browse", "history", "ops"]) $(view).hidden = view !== name;
  const current = { "show-browse": name === "browse" || name === "history", "show-ops": name === "ops" };
  for (const [id, on] of Object.entries(current)) {
    if (on) $(id).setAttribute("aria-current", "page");
    else $(id).removeAttribute("aria-current");
  }
}

function showSignin(reason) {
  $("nav").hidden = true;
  $("who").textContent = "";
  if (reason) $("signin-reason").textContent = reason;
  showView("signin");
  document.body.dataset.ready = "signin";
}

// -- one memory ------------------------------------------------------------------------------------

// A memory's text with each `span` in backticks as code (and ```fenced``` blocks as a code block):
// text nodes and <code> elements built with textContent, never parsed as HTML.
function richText(tag, attrs, text) {
  const node = el(tag, attrs);
  const code = /```\n?([\s\S]+?)```|`([^`\n]+)`/g;
  let last = 0;
  for (const match of text.matchAll(code)) {
    if (match.index > last) node.append(text.slice(last, match.index));
    const block = match[1] !== undefined;
    node.append(el("code", { class: block ? "block" : "inline", text: block ? match[1] : match[2] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) node.append(text.slice(last));
  return node;
}

function memoryItem(memory, { pinned = false, rank = 0 } = {}) {
  const kind = kindLabel(memory.kind);
  const item = el("li", { class: "memory", "data-id": memory.id, "data-kind": kind });
  const labels = el("div", { class: "meta" });
  labels.append(el("span", { class: `label ${kind}`, text: kind }));
  if (pinned) labels.append(el("span", { class: "label pin", text: "pin" }));
  if (memory.scope === "global") labels.append(el("span", { class: "label global", text: "global" }));
  if ("similarity" in memory) {
    // a hit is listed in the door's order, best first: its place and the fused score that order
    // follows come first; the cosine is one of the signals fused, not the order
    if (rank) labels.append(el("span", { class: "rank", text: `#${rank} · score ${memory.score.toPrecision(3)}` }));
    const similarity = memory.similarity === null ? "none (keyword match)" : memory.similarity.toFixed(2);
    labels.append(el("span", { class: "similarity", text: `cosine similarity ${similarity}` }));
    if (memory.matchedBy && memory.matchedBy.length) {
      labels.append(el("span", { text: `matched by ${memory.matchedBy.join(" + ")}` }));
    }
  }
  labels.append(el("span", { text: `v${memory.version} · ${when(memory.updatedAt)}` }));
  if (!isGlobal() && memory.containerTag && memory.containerTag !== state.space && memory.scope !== "global") {
    labels.append(el("span", { text: memory.containerTag }));
  }
  const content = richText("p", { class: "content" }, memory.content);
  const actions = el("div", { class: "actions" });
  actions.append(el("button", { type: "button", text: "History", onclick: () => openHistory(memory.id) }));
  if (pinned) {
    actions.append(el("button", { type: "button", text: "Unpin", onclick: () => unpin(memory, item) }));
  } else {
    actions.append(el("button", { type: "button", text: "Edit", onclick: () => edit(memory, item, content) }));
    actions.append(el("button", { type: "button", text: "Pin", onclick: () => pinMemory(memory, item) }));
  }
  actions.append(el("button", { type: "button", text: "Forget", onclick: () => forget(memory, item, pinned) }));
  item.append(labels, content, actions);
  return item;
}

function edit(memory, item, content) {
  const box = el("textarea", { "aria-label": "memory text" });
  box.value = memory.content;
  const form = el("div", { class: "actions" });
  const done = () => {
    box.remove();
    form.remove();
    content.hidden = false;
  };
  form.append(
    el("button", {
      type: "button",
      text: "Save",
      onclick: async () => {
        const text = box.value.trim();
        if (!text || text === memory.content) return done();
        try {
          const answer = await api("POST", "/api/memory/update", { id: memory.id, content: text });
          Object.assign(memory, { id: answer.id, version: answer.version, content: text });
          delete memory.similarity; // measured for the old text: no figure is shown for the new one
          delete memory.score;
          item.replaceWith(memoryItem(memory));
          notify(`Saved as version ${answer.version}; the old text stays in its history.`);
        } catch (error) {
          failed(error);
        }
      },
    }),
    el("button", { type: "button", text: "Cancel", onclick: done }),
  );
  content.hidden = true;
  item.insertBefore(form, content.nextSibling);
  item.insertBefore(box, form);
  box.focus();
}

async function forget(memory, item, pinned) {
  try {
    await api("POST", "/api/memory/forget", { containerTag: containerTag(), id: memory.id, scope: memory.scope || scope() });
  } catch (error) {
    return failed(error);
  }
  const gone = el("li", { class: "memory gone", "data-id": memory.id });
  gone.append(
    richText("p", { class: "content" }, memory.content),
    el("div", { class: "meta" }, el("span", { text: "Forgotten. Undo saves this text again as a new memory; the forgotten one stays in history." })),
    el("div", { class: "actions" }, el("button", { type: "button", text: "Undo", onclick: () => undo(memory, gone, pinned) })),
  );
  item.replaceWith(gone);
  notify("Forgotten.");
}

async function undo(memory, gone, pinned) {
  const global = memory.scope === "global";
  const tag = global ? containerTag() : memory.containerTag || containerTag();
  try {
    const answer = pinned
      ? await api("POST", "/api/memory/pin", { content: memory.content, containerTag: tag, scope: global ? "global" : "project" })
      : await api("POST", "/api/memory/save", {
          content: memory.content,
          containerTag: tag,
          scope: global ? "global" : "project",
          kind: kindLabel(memory.kind) === "fact" ? "memory" : "document",
        });
    const restored = { ...memory, id: answer.id, version: 1, updatedAt: new Date().toISOString() };
    delete restored.similarity;
    gone.replaceWith(memoryItem(restored, { pinned }));
    notify("Restored as a new memory.");
  } catch (error) {
    failed(error);
  }
}

async function pinMemory(memory, item) {
  try {
    await api("POST", "/api/memory/pin", {
      content: memory.content,
      containerTag: memory.scope === "global" ? containerTag() : memory.containerTag || containerTag(),
      scope: memory.scope === "global" ? "global" : "project",
    });
    await api("POST", "/api/memory/forget", { containerTag: containerTag(), id: memory.id, scope: memory.scope || scope() });
    item.remove();
    notify("Pinned: it is now loaded at every session start (the unpinned copy was retired).");
    await loadPins();
  } catch (error) {
    failed(error);
  }
}

async function unpin(memory, item) {
  try {
    await api("POST", "/api/memory/unpin", { id: memory.id });
    item.remove();
    notify("Unpinned: it is an ordinary memory again, searched like any other.");
    if (!state.searching) await loadPage(true);
  } catch (error) {
    failed(error);
  }
}

// -- browse, search, pins ----------------------------------------------------------------------------

async function loadPins() {
  const list = $("pin-list");
  const answer = await api("POST", "/api/memory/pins", { containerTag: containerTag() });
  const pins = answer.pins.filter((pin) => (isGlobal() ? pin.scope === "global" : true));
  list.replaceChildren(...pins.map((pin) => memoryItem(pin, { pinned: true })));
}

async function loadPage(fresh) {
  if (fresh) state.cursor = null;
  const body = { containerTag: containerTag(), limit: PAGE_SIZE, scope: scope() };
  if (state.cursor) body.cursor = state.cursor;
  const answer = await api("POST", "/api/memory/list", body);
  const list = $("memories");
  const items = answer.memories.map((memory) => memoryItem(memory));
  if (fresh) list.replaceChildren(...items);
  else list.append(...items);
  state.cursor = answer.nextCursor;
  $("more").hidden = !state.cursor;
  $("empty").hidden = list.children.length > 0;
}

async function browse() {
  state.searching = false;
  $("q").value = "";
  $("clear-search").hidden = true;
  $("list-title").textContent = "Newest first";
  $("pins").hidden = false;
  await Promise.all([loadPage(true), loadPins()]);
}

async function search(query) {
  const answer = await api("POST", "/api/memory/search", {
    q: query,
    containerTag: containerTag(),
    scope: scope(),
    limit: SEARCH_LIMIT,
    threshold: SEARCH_MIN_SIMILARITY,
  });
  state.searching = true;
  $("clear-search").hidden = false;
  $("pins").hidden = true;
  $("more").hidden = true;
  $("list-title").textContent =
    `${answer.results.length} found for \u201c${query}\u201d, best first (cosine below ${SEARCH_MIN_SIMILARITY} left out)`;
  const list = $("memories");
  list.replaceChildren(...answer.results.map((hit, index) => memoryItem(hit, { rank: index + 1 })));
  $("empty").hidden = answer.results.length > 0;
}

async function openHistory(id) {
  try {
    const answer = await api("GET", `/api/memory/${encodeURIComponent(id)}/history`);
    const versions = [...answer.versions].sort((a, b) => b.version - a.version);
    $("versions").replaceChildren(
      ...versions.map((version) =>
        el(
          "li",
          { class: version.status === "current" ? "version" : "version gone" },
          el(
            "div",
            { class: "meta" },
            el("span", { class: "label status", text: version.status }),
            el("span", { text: `v${version.version} · saved ${when(version.createdAt)}` }),
            version.supersededAt ? el("span", { text: `ended ${when(version.supersededAt)}` }) : null,
          ),
          richText("p", { class: "content" }, version.content),
        ),
      ),
    );
    showView("history");
  } catch (error) {
    failed(error);
  }
}

// -- ops -------------------------------------------------------------------------------------------

function totalsByStore(window) {
  const stores = {};
  for (const [store, people] of Object.entries(window || {})) {
    const total = { win: 0, loss: 0, noise: 0 };
    for (const counts of Object.values(people)) for (const verdict of VERDICTS) total[verdict] += counts[verdict] || 0;
    stores[store] = total;
  }
  return stores;
}

function svgNode(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// One stacked bar per store: wins, losses and noise, scaled to the largest total.
function verdictChart(title, stores) {
  const names = Object.keys(stores).sort();
  const rowHeight = 26;
  const width = 360;
  const labelWidth = 90;
  const height = Math.max(1, names.length) * rowHeight + 24;
  const most = Math.max(1, ...names.map((name) => VERDICTS.reduce((sum, v) => sum + stores[name][v], 0)));
  const svg = svgNode("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  names.forEach((name, row) => {
    const y = row * rowHeight + 4;
    svg.append(svgNode("text", { x: 0, y: y + 14 }, name));
    let x = labelWidth;
    for (const verdict of VERDICTS) {
      const count = stores[name][verdict];
      const barWidth = (count / most) * (width - labelWidth - 40);
      if (count > 0) {
        const bar = svgNode("rect", { x, y, width: Math.max(barWidth, 1), height: 18, class: `bar-${verdict}` });
        bar.append(svgNode("title", {}, `${verdict} ${count}`));
        svg.append(bar);
      }
      x += barWidth;
    }
    svg.append(svgNode("text", { x: x + 4, y: y + 14 }, VERDICTS.map((v) => stores[name][v]).join("/")));
  });
  if (!names.length) svg.append(svgNode("text", { x: 0, y: 16 }, "no opinions in this window"));
  let legendX = 0;
  for (const verdict of VERDICTS) {
    svg.append(svgNode("rect", { x: legendX, y: height - 14, width: 10, height: 10, class: `bar-${verdict}` }));
    svg.append(svgNode("text", { x: legendX + 14, y: height - 5 }, verdict));
    legendX += 60;
  }
  return el("figure", {}, svg, el("figcaption", { text: title }));
}

function bucketLabel(name) {
  const [kind, edge] = name.split("_");
  return kind === "le" ? `≤ ${edge} ms` : `> ${edge} ms`;
}

// One hook of one window: its runs as a bar of ok/skipped/failed, and the duration histogram with
// the p50 and p95 buckets marked.
function hookChart(hook, days, figures) {
  const width = 300;
  const height = 150;
  const title = `${hook}, last ${days} days`;
  const svg = svgNode("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  const runs = Math.max(1, figures.runs);
  let x = 0;
  for (const outcome of OUTCOMES) {
    const count = figures[outcome] || 0;
    const barWidth = (count / runs) * width;
    if (count > 0) {
      const bar = svgNode("rect", { x, y: 18, width: Math.max(barWidth, 1), height: 14, class: `bar-${outcome}` });
      bar.append(svgNode("title", {}, `${outcome} ${count}`));
      svg.append(bar);
    }
    x += barWidth;
  }
  svg.append(svgNode("text", { x: 0, y: 12, class: "runs" },
    `runs ${figures.runs}: ok ${figures.ok}, skipped ${figures.skipped}, failed ${figures.failed}`));
  const names = Object.keys(figures.buckets || {});
  const most = Math.max(1, ...names.map((name) => figures.buckets[name]));
  const slot = width / Math.max(1, names.length);
  const elapsed = figures.elapsedMs || {};
  names.forEach((name, index) => {
    const count = figures.buckets[name];
    const barHeight = (count / most) * 60;
    const marks = [name === elapsed.p50 ? "p50" : "", name === elapsed.p95 ? "p95" : ""].filter(Boolean);
    const bar = svgNode("rect", { x: index * slot + 2, y: 104 - barHeight, width: slot - 4, height: Math.max(barHeight, count ? 1 : 0), class: ["bucket", ...marks].join(" ") });
    bar.append(svgNode("title", {}, `${bucketLabel(name)}: ${count}${marks.length ? ` (${marks.join(", ")})` : ""}`));
    svg.append(bar);
  });
  const p50 = elapsed.p50 ? bucketLabel(elapsed.p50) : "-";
  const p95 = elapsed.p95 ? bucketLabel(elapsed.p95) : "-";
  svg.append(svgNode("text", { x: 0, y: 122, class: "quantiles" }, `p50 ${p50} · p95 ${p95} · max ${elapsed.max ?? "-"} ms`));
  const via = figures.via || {};
  svg.append(svgNode("text", { x: 0, y: 140, class: "via" }, `via daemon ${via.daemon || 0}, direct ${via.direct || 0}`));
  return el("figure", { "data-hook": hook, "data-days": String(days) }, svg, el("figcaption", { text: title }));
}

async function loadHookFigures() {
  const answers = await Promise.all(HOOK_WINDOWS_DAYS.map((days) => api("GET", `/api/ops/hook-stats?days=${days}`)));
  // one row per window, so a 7-day chart never sits between two 30-day ones when the row wraps
  const rows = [];
  answers.forEach((answer, index) => {
    const days = HOOK_WINDOWS_DAYS[index];
    const figures = Object.entries(answer.hooks || {}).map(([hook, counts]) => hookChart(hook, days, counts));
    if (figures.length) {
      rows.push(el("div", { class: "hook-window", "data-days": String(days) },
        el("h3", { text: `Last ${days} days` }), el("div", { class: "hook-row" }, ...figures)));
    }
  });
  $("hook-charts").replaceChildren(...(rows.length ? rows : [el("p", { text: "No hook figures sent yet: they arrive with each machine's bli-memory-mcp sync." })]));
  const month = answers[answers.length - 1];
  $("hook-note").textContent = `Last ${month.days} days: ${month.hours} hours from ${month.devices} machine(s). ${month.note || ""}`;
}

async function loadOps() {
  showView("ops");
  try {
    const answer = await api("GET", "/api/ops/memory-usage");
    const experience = answer.experience || {};
    const windows = experience.windows || {};
    $("charts").replaceChildren(
      ...["7d", "30d"].map((key) => verdictChart(`last ${key.replace("d", " days")}: win/loss/noise per store`, totalsByStore(windows[key]))),
    );
    const reasons = [];
    for (const [store, entries] of Object.entries(experience.lastReasons || {})) {
      for (const entry of entries) {
        reasons.push(el("li", {}, el("div", { class: "meta" }, el("span", { class: "label status", text: `${store}: ${entry.verdict}` }), el("span", { text: entry.person })), el("p", { class: "content", text: entry.reason })));
      }
    }
    $("reasons").replaceChildren(...(reasons.length ? reasons : [el("li", { text: "No reasons recorded in the last 30 days." })]));
    const rows = experience.rows || {};
    $("rows-read").textContent = `Rows read: ${rows.returned} of ${rows.requested}${rows.capped ? " (capped)" : ""}${rows.failed ? ` (read failed: ${rows.failed})` : ""}. ${experience.note || ""}`;
    await loadHookFigures();
  } catch (error) {
    failed(error);
  }
}

// -- start -----------------------------------------------------------------------------------------

function fillSpaces() {
  const picker = $("space");
  const options = state.spaces.map((tag) => el("option", { value: tag, text: tag }));
  options.push(el("option", { value: GLOBAL, text: "my global space" }));
  picker.replaceChildren(...options);
  picker.value = state.space;
}

async function start() {
  let session;
  try {
    session = await api("GET", "/api/web/session");
  } catch (error) {
    const used = location.pathname === "/login";
    return showSignin(used ? "That sign-in link was already used, opened in another browser, or has expired." : error.message);
  }
  if (location.pathname !== "/") history.replaceState(null, "", "/");
  state.csrf = session.csrfToken;
  $("who").textContent = `${session.person} · team ${session.team}`;
  $("nav").hidden = false;
  const { spaces } = await api("GET", "/api/memory/spaces");
  state.spaces = spaces;
  const wanted = new URLSearchParams(location.hash.slice(1)).get("space");
  state.space = wanted && (spaces.includes(wanted) || wanted === "global") ? (wanted === "global" ? GLOBAL : wanted) : spaces[0] || GLOBAL;
  fillSpaces();
  showView("browse");
  await browse();
  document.body.dataset.ready = "1";
  performance.mark("bli-interactive");
}

function wire() {
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = $("q").value.trim();
    (query ? search(query) : browse()).catch(failed);
  });
  $("clear-search").addEventListener("click", () => browse().catch(failed));
  $("more").addEventListener("click", () => loadPage(false).catch(failed));
  $("pin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("pin-text").value.trim();
    if (!text) return;
    try {
      await api("POST", "/api/memory/pin", { content: text, containerTag: containerTag(), scope: scope() });
      $("pin-text").value = "";
      notify("Pinned.");
      await loadPins();
    } catch (error) {
      failed(error);
    }
  });
  $("space").addEventListener("change", () => {
    state.space = $("space").value;
    notify("");
    showView("browse");
    browse().catch(failed);
  });
  $("show-browse").addEventListener("click", () => {
    showView("browse");
    browse().catch(failed);
  });
  $("history-back").addEventListener("click", () => showView("browse"));
  $("show-ops").addEventListener("click", () => loadOps());
  $("logout").addEventListener("click", async () => {
    try {
      await api("POST", "/api/web/logout");
    } catch (_) {
      // signed out either way
    }
    state.csrf = null;
    showSignin("Signed out.");
  });
}

wire();
start().catch(failed);
