// The probanon workbench page: every action is one call of the workbench's HTTP API (/api/openapi.json).
"use strict";
(function () {
  const TOKEN = document.querySelector('meta[name="probanon-token"]').content;
  const $ = (id) => document.getElementById(id);
  let session = null;           // the last /api/session
  let offset = 0; const LIMIT = 50; let sortBy = null; let descending = false;
  let currentJob = null;
  let suggestions = {};
  let pendingRoles = {};

  async function api(method, path, body, raw) {
    const headers = { "Authorization": "Bearer " + TOKEN };
    let payload;
    if (raw !== undefined) { payload = raw; headers["Content-Type"] = "application/octet-stream"; }
    else if (body !== undefined) { payload = JSON.stringify(body); headers["Content-Type"] = "application/json"; }
    const response = await fetch(path, { method, headers, body: payload });
    const type = response.headers.get("content-type") || "";
    const data = type.startsWith("application/json") ? await response.json()
      : type.startsWith("image/") ? await response.blob() : await response.text();
    if (!response.ok) {
      const error = new Error(data && data.detail ? data.detail : ("HTTP " + response.status));
      error.field = data && data.field; error.status = response.status;
      throw error;
    }
    return data;
  }

  function clearErrors() { document.querySelectorAll(".error").forEach((e) => { e.textContent = ""; }); }
  // the message beside the field it names (the command line's words), else beside `fallback`
  function showError(error, fallback) {
    const field = error.field && $("error-" + error.field) ? error.field : fallback;
    let target = $("error-" + field) || $("message");
    const panel = target.closest(".panel");
    if (panel && panel.hidden) target = $("error-" + fallback) || $("message");  // beside what was clicked
    target.textContent = error.message;
    if (error.status === 409) { refresh(); }
  }
  function say(text) { $("message").textContent = text; }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }
  const fmt = (v) => v === null || v === undefined ? "" : typeof v === "number"
    ? (Number.isInteger(v) ? v.toLocaleString("en") : (+v.toPrecision(6)).toLocaleString("en", { maximumFractionDigits: 6 })) : String(v);

  // ---- steps (tabs) ----
  function show(step) {
    document.querySelectorAll(".step").forEach((b) => {
      if (b.dataset.step === step) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
    });
    document.querySelectorAll(".panel").forEach((p) => { p.hidden = p.id !== "step-" + step; });
    if (step === "roles") { loadRoles(); }
    if (step === "export") { loadRecipe(); }
  }
  document.querySelectorAll(".step").forEach((b) => b.addEventListener("click", () => show(b.dataset.step)));

  // ---- jobs ----
  async function follow(job, label) {
    currentJob = job;
    $("job").hidden = false; $("job-label").textContent = label;
    const bar = $("job-bar");
    while (true) {
      if (job.total) { bar.max = job.total; bar.value = job.done; } else { bar.removeAttribute("value"); }
      if (job.stage) $("job-label").textContent = label + ": " + job.stage;
      if (job.status !== "running") break;
      await new Promise((r) => setTimeout(r, 150));
      job = await api("GET", "/api/jobs/" + job.id);
    }
    currentJob = null; $("job").hidden = true;
    if (job.status === "failed") { const e = new Error(job.error); e.field = job.field; throw e; }
    if (job.status === "cancelled") { const e = new Error("cancelled"); e.field = null; throw e; }
    return job.result;
  }
  $("job-cancel").addEventListener("click", async () => {
    if (currentJob) { await api("POST", "/api/jobs/" + currentJob.id + "/cancel"); say("cancelled"); }
  });

  // ---- session ----
  async function refresh() {
    session = await api("GET", "/api/session");
    const f = session.file;
    $("file-name").textContent = f ? f.name + (f.records !== null ? " — " + fmt(f.records) + " records" : " — reading…") : "no file open";
    $("undo").disabled = !session.can_undo; $("redo").disabled = !session.can_redo;
    if (f) {
      $("file-info").textContent = f.name + " (" + f.kind + (f.csv && f.csv.sep ? ", separator " + JSON.stringify(f.csv.sep)
        + ", " + f.csv.encoding : "") + "): " + f.columns.length + " columns" + (f.error ? " — " + f.error : "");
    }
    renderPrepare(); renderColumnsSelect(); renderMethods(); renderStrategies(); renderLog();
    if ($("param-seed").value === "") $("param-seed").value = session.seed;
    return session;
  }
  $("undo").addEventListener("click", () => change("/api/undo", {}));
  $("redo").addEventListener("click", () => change("/api/redo", {}));
  async function change(path, body, fallback) {
    clearErrors();
    try {
      await api("POST", path, Object.assign({ version: session.version }, body));
      await refresh(); await loadTable(); loadSummaries(); autoRisk(); return true;
    }
    catch (e) { showError(e, fallback || "message"); return false; }
  }

  // ---- data ----
  async function opened(job) {
    offset = 0; sortBy = null; pendingRoles = {};
    await refresh(); await loadTable();
    try { await follow(job, "reading"); } catch (e) { showError(e, "path"); }
    await refresh(); await loadTable(); await loadSummaries();
  }
  $("open-form").addEventListener("submit", async (ev) => {
    ev.preventDefault(); clearErrors();
    try {
      const job = await api("POST", "/api/open", { path: $("open-path").value, sep: $("open-sep").value,
        encoding: $("open-encoding").value, version: session.version });
      await opened(job);
    } catch (e) { showError(e, "path"); }
  });
  $("upload-form").addEventListener("submit", async (ev) => {
    ev.preventDefault(); clearErrors();
    const file = $("upload-file").files[0];
    if (!file) { $("error-file").textContent = "file: choose a file"; return; }
    try {
      const job = await api("POST", "/api/upload?name=" + encodeURIComponent(file.name) + "&version=" + session.version,
        undefined, file);
      await opened(job);
    } catch (e) { showError(e, "file"); }
  });
  $("recipe-open").addEventListener("click", async () => {
    clearErrors();
    try {
      const job = await api("POST", "/api/recipe/open", { path: $("recipe-path").value, version: session.version });
      await refresh();
      await follow(job, "applying the recipe");
      await refresh(); await loadTable(); await loadSummaries(); say("recipe opened and applied");
    } catch (e) { showError(e, "recipe"); await refresh(); }
  });

  async function loadTable() {
    if (!session || !session.file) return;
    const q = "/api/table?offset=" + offset + "&limit=" + LIMIT + (sortBy ? "&sort=" + encodeURIComponent(sortBy) + "&descending=" + descending : "");
    const page = await api("GET", q);
    const t = $("data-table"); t.textContent = "";
    const head = el("tr", {}, el("th", { scope: "col", text: "#" }));
    page.columns.forEach((c) => {
      const b = el("button", { type: "button", text: c + (sortBy === c ? (descending ? " ▼" : " ▲") : "") });
      b.addEventListener("click", () => { descending = sortBy === c ? !descending : false; sortBy = c; offset = 0; loadTable(); });
      head.append(el("th", { scope: "col" }, b));
    });
    t.append(el("thead", {}, head));
    const body = el("tbody");
    page.rows.forEach((r) => {
      const tr = el("tr", {}, el("td", { class: "num", text: String(r[0]) }));
      r.slice(1).forEach((v) => tr.append(el("td", { class: v === null ? "missing" : typeof v === "number" ? "num" : "", text: v === null ? "missing" : fmt(v) })));
      body.append(tr);
    });
    t.append(body);
    const total = page.total === null ? "…" : fmt(page.total);
    $("page-info").textContent = "rows " + fmt(page.offset + 1) + "–" + fmt(page.offset + page.rows.length) + " of " + total
      + (page.loading ? " (reading the whole file)" : "");
    $("page-prev").disabled = offset === 0;
    $("page-next").disabled = page.total !== null && offset + LIMIT >= page.total;
  }
  $("page-prev").addEventListener("click", () => { offset = Math.max(0, offset - LIMIT); loadTable(); });
  $("page-next").addEventListener("click", () => { offset += LIMIT; loadTable(); });

  let summaries = null;
  async function loadSummaries() {
    const got = await api("GET", "/api/columns");
    summaries = got.summaries; suggestions = got.suggestions || {};
    const box = $("summaries"); box.textContent = "";
    if (!summaries) {
      $("summaries-status").textContent = "computing the column summaries…";
      if (session && session.file && !session.file.error) setTimeout(loadSummaries, 500);
      return;
    }
    $("summaries-status").textContent = summaries.length + " columns";
    summaries.forEach((s) => {
      const card = el("div", { class: "summary" }, el("h4", { text: s.name }),
        el("div", { text: s.type + " · " + fmt(s.missing) + " missing · " + fmt(s.distinct) + " distinct" }));
      if (s.histogram) {
        const max = Math.max(1, ...s.histogram.counts);
        const bars = el("div", { class: "bars", role: "img", "aria-label": "histogram of " + s.name + " from " + fmt(s.min) + " to " + fmt(s.max) });
        s.histogram.counts.forEach((c) => { const d = el("div"); d.style.height = (100 * c / max) + "%"; bars.append(d); });
        card.append(bars, el("div", { class: "hint", text: fmt(s.min) + " … " + fmt(s.max) + ", mean " + fmt(s.mean) }));
      } else if (s.categories) {
        const max = Math.max(1, ...s.categories.map((c) => c.count));
        const cats = el("div", { class: "cats" });
        s.categories.forEach((c) => {
          const bar = el("span", { class: "bar" }); bar.style.width = (80 * c.count / max) + "px";
          cats.append(el("div", {}, bar, el("span", { text: fmt(c.value) + (c.label ? " (" + c.label + ")" : "") + ": " + fmt(c.count) })));
        });
        if (s.others) cats.append(el("div", { text: "others: " + fmt(s.others) }));
        card.append(cats);
      }
      box.append(card);
    });
    if (!$("step-roles").hidden) renderRoles();
  }

  function renderColumnsSelect() {
    const sel = $("recode-column"); const keep = sel.value; sel.textContent = "";
    (session.file ? session.file.columns : []).forEach((c) => sel.append(el("option", { value: c, text: c })));
    if (keep) sel.value = keep;
  }
  const RECODE_HINTS = {
    intervals: ["Width", "equal-width bands aligned on multiples of the width, e.g. 5 (ages 20-25]"],
    breaks: ["Breaks", "comma-separated, e.g. 0,18,65,120 (right-closed, as R's cut)"],
    group: ["Groups", "old=new pairs separated by ';', e.g. 1=low; 2=low; 3=high"],
    missing: ["Values", "comma-separated values to set missing, e.g. 99,98"],
    top: ["Threshold", "values above it replaced by it (or qP: a quantile, e.g. q0.99)"],
    bottom: ["Threshold", "values below it replaced by it (or qP: a quantile, e.g. q0.01)"],
    combine: ["New column and columns", "NEW=A,B e.g. stratum=region,sex"],
  };
  function recodeHint() {
    const [label, hint] = RECODE_HINTS[$("recode-kind").value];
    $("recode-value-label").textContent = label; $("recode-hint").textContent = hint;
  }
  $("recode-kind").addEventListener("change", recodeHint); recodeHint();
  const number = (t) => (t.trim() === "" || isNaN(Number(t)) ? t.trim() : Number(t));
  function recodeStep() {
    const kind = $("recode-kind").value, column = $("recode-column").value, v = $("recode-value").value.trim();
    if (kind === "intervals") return { kind: "intervals", column, width: number(v) };
    if (kind === "breaks") return { kind: "intervals", column, breaks: v.split(",").map(number) };
    if (kind === "group") return { kind: "group", column, mapping: v.split(";").filter((p) => p.trim()).map((p) => p.split("=").map((x) => number(x))) };
    if (kind === "missing") return { kind: "missing", column, values: v.split(",").map(number) };
    if (kind === "top" || kind === "bottom") {
      return v.startsWith("q") ? { kind, column, quantile: number(v.slice(1)) } : { kind, column, threshold: number(v) };
    }
    const [name, cols] = v.split("=");
    return { kind: "combine", column: (name || "").trim(), columns: (cols || "").split(",").map((c) => c.trim()).filter(Boolean) };
  }
  $("recode-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (await change("/api/prepare", { step: recodeStep() }, "step")) { say("step added"); $("recode-value").value = ""; }
  });
  function renderPrepare() {
    const list = $("prepare-list"); list.textContent = "";
    session.prepare.forEach((s) => list.append(el("li", { text: s.kind + " " + s.column + ": " + JSON.stringify(s) })));
  }

  // ---- roles ----
  async function loadRoles() { if (session && session.file) { await loadSummaries(); renderRoles(); loadAudit(); } }
  function currentRoles() { return Object.assign({}, session.roles, pendingRoles); }
  function renderRoles() {
    const t = $("roles-table"); t.textContent = "";
    if (!session.file) return;
    t.append(el("thead", {}, el("tr", {}, ...["column", "type", "role", "suggestion", "audit"].map((h) => el("th", { scope: "col", text: h })))));
    const body = el("tbody"); const roles = currentRoles();
    const byName = {}; (summaries || []).forEach((s) => { byName[s.name] = s; });
    session.file.columns.forEach((c, i) => {
      const sel = el("select", { id: "role-" + i, "data-column": c, "aria-label": "role of " + c });
      sel.append(el("option", { value: "", text: "— no role —" }));
      Object.keys(session.roles_known).forEach((r) => sel.append(el("option", { value: r, text: r, title: session.roles_known[r] })));
      sel.value = roles[c] || "";
      sel.addEventListener("change", () => { pendingRoles[c] = sel.value; });
      const sug = suggestions[c];
      const cell = el("td");
      if (sug) {
        const b = el("button", { type: "button", text: "use " + sug.role, title: sug.why });
        b.addEventListener("click", () => { pendingRoles[c] = sug.role; sel.value = sug.role; });
        cell.append(b, el("span", { class: "hint", text: " " + sug.why }));
      }
      const s = byName[c];
      body.append(el("tr", {}, el("th", { scope: "row", text: c }), el("td", { text: s ? s.type + ", " + fmt(s.distinct) + " distinct" : "" }),
        el("td", {}, sel), cell, el("td", { class: "finding", id: "audit-" + i })));
    });
    t.append(body);
  }
  $("accept-all").addEventListener("click", () => {
    Object.entries(suggestions).forEach(([c, s]) => { pendingRoles[c] = s.role; }); renderRoles();
  });
  $("roles-save").addEventListener("click", async () => {
    const roles = currentRoles(); Object.keys(roles).forEach((c) => { if (!roles[c]) delete roles[c]; });
    if (await change("/api/roles", { roles }, "roles")) { pendingRoles = {}; renderRoles(); say("roles saved"); loadAudit(); }
  });
  async function loadAudit() {
    try {
      const found = await api("GET", "/api/audit");
      const cols = session.file.columns;
      (found.findings || []).forEach((f) => {
        const i = cols.indexOf(f.column);
        if (i >= 0 && $("audit-" + i)) $("audit-" + i).textContent += f.text + " ";
      });
    } catch (e) { /* roles incomplete: nothing to audit yet */ }
  }

  // ---- risk ----
  $("risk-form").addEventListener("submit", async (ev) => {
    ev.preventDefault(); clearErrors();
    try {
      const comb = $("risk-comb").value;
      const job = await api("POST", "/api/risk", { k: Number($("risk-k").value), combinations: comb === "" ? null : Number(comb) });
      renderRisk(await follow(job, "measuring the risk"));
    } catch (e) { showError(e, "risk"); }
  });
  // after every change, the risk again in the background (the header's summary, the Risk step's figures)
  let riskRound = 0;
  async function autoRisk() {
    const roles = Object.values(session.roles || {});
    if (!session.file || !session.file.loaded || !roles.some((r) => r === "key" || r === "categorical key")) {
      $("risk-summary").textContent = ""; return;
    }
    const round = ++riskRound;
    $("risk-summary").textContent = "measuring the risk…";
    try {
      const comb = $("risk-comb").value;
      let job = null;
      while (job === null) {  // one measurement at a time: wait for the running one, then measure this state
        try { job = await api("POST", "/api/risk", { k: Number($("risk-k").value), combinations: comb === "" ? null : Number(comb) }); }
        catch (e) { if (!/is running/.test(e.message) || round !== riskRound) throw e; await new Promise((r) => setTimeout(r, 300)); }
      }
      while (job.status === "running") { await new Promise((r) => setTimeout(r, 100)); job = await api("GET", "/api/jobs/" + job.id); }
      if (round !== riskRound) return;  // a newer change measures again
      if (job.status !== "done") { $("risk-summary").textContent = ""; return; }
      const r = job.result;
      $("risk-summary").textContent = "k achieved " + fmt(r.k_achieved) + " · sample uniques " + fmt(r.sample_uniques)
        + " · " + fmt(r.seconds) + " s";
      renderRisk(r);
    } catch (e) { if (round === riskRound) $("risk-summary").textContent = ""; }
  }

  function figureTable(rows) {
    const t = el("table"); rows.forEach(([a, b, cls]) => t.append(el("tr", {}, el("th", { scope: "row", text: a }), el("td", { class: cls || "num", text: fmt(b) }))));
    return t;
  }
  function renderRisk(r) {
    const out = $("risk-out"); out.textContent = "";
    const f = r.frequency || {};
    out.append(figureTable([["records", r.records], ["keys", r.keys.join(", "), ""],
      ["k achieved", r.k_achieved, r.k_achieved >= r.k ? "good" : "bad"], ["sample uniques", r.sample_uniques],
      ["records below k = " + r.k + " (some key combination)", (r.k_violations || {}).violating_records], ["expected re-identifications", f.expected_reidentifications],
      ["records above the main risk level " + fmt(r.main_risk_level), r.records_above_main_level],
      ["seconds", r.seconds]]));
    (r.violations_lines || []).forEach((l) => out.append(el("p", { text: l })));
    const h = r.household_risk;
    if (h) {
      out.append(el("p", { text: "household risk: " + fmt(h.households) + " households; expected re-identifications "
        + fmt(h.expected_reidentifications) + " (" + fmt(h.hierarchical_risk_pct) + " % of the records: sdcMicro's hierarchical risk); "
        + "expected households re-identified " + fmt(h.expected_households) + "; largest household risk " + fmt(h.max_household_risk) }));
    }
    (r.attribute_disclosure || []).forEach((l) => out.append(el("p", { text: "attribute disclosure: " + l })));
    const most = r.most_at_risk;
    out.append(el("h3", { text: "Records most at risk (the office's view only)" }));
    const t = el("table"); t.append(el("tr", {}, ...most.columns.map((c) => el("th", { scope: "col", text: c }))));
    most.rows.forEach((row) => t.append(el("tr", {}, ...row.map((v) => el("td", { class: typeof v === "number" ? "num" : "", text: fmt(v) })))));
    out.append(el("div", { class: "scroll" }, t));
  }

  // ---- treat ----
  function renderMethods() {
    const sel = $("treat-method");
    if (sel.options.length) return;
    Object.entries(session.methods).forEach(([id, m]) => sel.append(el("option", { value: id, text: m.label })));
    sel.addEventListener("change", renderParams); renderParams();
  }
  function renderParams() {
    const box = $("treat-params"); box.textContent = "";
    session.methods[$("treat-method").value].params.forEach((p) => {
      const id = "param-" + p.name;
      let input;
      if (p.type === "choice") { input = el("select", { id }); p.choices.forEach((c) => input.append(el("option", { value: c, text: c }))); input.value = p.default; }
      else if (p.type === "boolean") { input = el("input", { id, type: "checkbox" }); input.checked = !!p.default; }
      else if (p.type === "columns") { input = el("input", { id, type: "text", size: "40", autocomplete: "off" }); }
      else { input = el("input", { id, type: "number", step: p.type === "integer" ? "1" : "any" }); if (p.min !== null && p.min !== undefined) input.min = p.min; if (p.max !== null && p.max !== undefined) input.max = p.max; if (p.default !== null) input.value = p.default; }
      input.dataset.param = p.name; input.dataset.type = p.type;
      box.append(el("label", { for: id, text: p.label, title: p.help }), input, el("p", { class: "error", id: "error-" + p.name, role: "alert" }));
    });
  }
  $("treat-form").addEventListener("submit", async (ev) => {
    ev.preventDefault(); clearErrors();
    const params = {};
    document.querySelectorAll("#treat-params [data-param]").forEach((i) => {
      params[i.dataset.param] = i.dataset.type === "boolean" ? i.checked : i.dataset.type === "choice" || i.dataset.type === "columns"
        ? (i.value === "" && i.dataset.type === "columns" ? null : i.value) : (i.value === "" ? null : i.value);
    });
    params.seed = $("param-seed").value;
    $("treat-apply").disabled = true;  // one application at a time from this page
    try {
      const job = await api("POST", "/api/apply", { method: $("treat-method").value, params, version: session.version });
      const result = await follow(job, "applying");
      await refresh(); say("strategy " + result.strategy + " applied: k achieved " + result.figures.k_achieved);
    } catch (e) { showError(e, "apply"); } finally { $("treat-apply").disabled = false; }
  });
  function strategyRows(t, strategies) {
    t.textContent = "";
    t.append(el("tr", {}, ...["strategy", "k achieved", "guarantee", "information loss (%)", "record linkage",
      "categorical information lost (%)", "sample uniques", "expected re-identifications", "notes"].map((h) => el("th", { scope: "col", text: h }))));
    strategies.forEach((g) => {
      const f = g.figures;
      t.append(el("tr", {}, el("th", { scope: "row", text: g.label }), el("td", { class: "num", text: fmt(f.k_achieved) }),
        el("td", { class: f.guarantee === "none" ? "bad" : "good", text: f.guarantee }), el("td", { class: "num", text: fmt(f.information_loss) }),
        el("td", { class: "num", text: fmt(f.record_linkage) }), el("td", { class: "num", text: fmt(f.categorical_information_loss) }),
        el("td", { class: "num", text: fmt(f.sample_uniques) }),
        el("td", { class: "num", text: fmt(f.expected_reidentifications) }), el("td", { text: (g.notes || []).join("; ") })));
    });
  }
  function renderStrategies() {
    strategyRows($("strategies-table"), session.strategies);
    strategyRows($("compare-table"), session.strategies);
    const sel = $("export-strategy"); const keep = sel.value; sel.textContent = "";
    session.strategies.forEach((g) => sel.append(el("option", { value: String(g.id), text: g.label })));
    if (keep && session.strategies.some((g) => String(g.id) === keep)) sel.value = keep;
  }

  // ---- compare ----
  $("compare-button").addEventListener("click", async () => {
    clearErrors();
    try {
      const k = $("compare-k").value;
      const blob = await api("GET", "/api/compare.png" + (k ? "?k=" + encodeURIComponent(k) : ""));
      const img = $("compare-map"); if (img.src) URL.revokeObjectURL(img.src);
      img.src = URL.createObjectURL(blob); img.hidden = false;
    } catch (e) { showError(e, "compare"); }
  });

  // ---- export ----
  async function loadRecipe() {
    try { $("recipe-text").textContent = await api("GET", "/api/recipe" + ($("export-strategy").value ? "?strategy=" + $("export-strategy").value : "")); }
    catch (e) { $("recipe-text").textContent = e.message; }
  }
  $("export-strategy").addEventListener("change", loadRecipe);
  $("export-form").addEventListener("submit", async (ev) => {
    ev.preventDefault(); clearErrors();
    $("export-button").disabled = true;
    try {
      const job = await api("POST", "/api/export", { strategy: $("export-strategy").value, folder: $("export-folder").value,
        name: $("export-name").value, force: $("export-force").checked, version: session.version });
      const result = await follow(job, "exporting");
      const out = $("export-out"); out.textContent = "";
      out.append(el("p", { class: "good", text: "written into " + result.folder + ":" }));
      const ul = el("ul"); result.files.forEach((f) => ul.append(el("li", { text: f }))); out.append(ul);
    } catch (e) { showError(e, "export"); } finally { $("export-button").disabled = false; }
  });
  function renderLog() {
    const t = $("log-table"); t.textContent = "";
    t.append(el("tr", {}, ...["time (UTC)", "step", "seconds", "figures"].map((h) => el("th", { scope: "col", text: h }))));
    session.log.forEach((e) => t.append(el("tr", {}, el("td", { text: e.time }), el("td", { text: e.what }),
      el("td", { class: "num", text: e.seconds === null ? "" : fmt(e.seconds) }), el("td", { text: JSON.stringify(e.figures) }))));
  }

  // ---- start ----
  (async () => {
    await refresh();
    if (session.file) {
      await loadTable();
      while (!session.file.loaded) { await new Promise((r) => setTimeout(r, 300)); await refresh(); }
      await loadTable(); await loadSummaries();
    }
  })();
})();
