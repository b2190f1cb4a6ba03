// The respondent page (/respond/{id}): verify the published specification on this device,
// compute the respondent's cell locally (her quasi-identifiers never leave the browser),
// show the exact message, and send it (contract: POST /api/surveys/{id}/submissions).
(function () {
  "use strict";
  const S = globalThis.ProbanonSurvey;
  const $ = (id) => document.getElementById(id);
  const idPart = (name) => String(name).replace(/\s/g, "_"); // element ids have no blanks

  let survey = null; // GET /api/surveys/{id}
  let spec = null; // the verified specification
  let columns = []; // quasi-identifier columns, in the function's order
  let tree = null; // a decision-tree survey: {answers (true: yes), cell (null until a leaf is reached)}
  let payloadText = null; // the reviewed body, sent byte for byte

  function surveyId() {
    const m = /\/respond\/(\d+)\/?$/.exec(location.pathname);
    return m ? m[1] : null;
  }

  async function detail(response) {
    try {
      const body = await response.json();
      if (body && typeof body.detail === "string") return body.detail;
    } catch (e) { /* not JSON */ }
    return "HTTP " + response.status + (response.statusText ? " " + response.statusText : "");
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  // Verification failed (or the survey cannot be shown): say why, show no form.
  function refuse(summary, problems) {
    const box = $("error");
    box.replaceChildren();
    const p = document.createElement("p");
    p.textContent = summary;
    box.append(p);
    if (problems && problems.length) {
      const ul = document.createElement("ul");
      for (const problem of problems) {
        const li = document.createElement("li");
        li.textContent = problem;
        ul.append(li);
      }
      box.append(ul);
    }
    box.hidden = false;
    $("survey-form").hidden = true;
    $("review-section").hidden = true;
    setStatus("Do not answer this survey.");
  }

  // ------------------------------------------------------------------ loading and verifying

  async function start() {
    const id = surveyId();
    if (id === null) return refuse("This address does not name a survey (expected /respond/<number>).");
    let response;
    try {
      response = await fetch("/api/surveys/" + id, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!response.ok) return refuse("The survey could not be loaded: " + (await detail(response)));
      survey = await response.json();
      document.title = survey.title;
      $("title").textContent = survey.title;
      setStatus("Checking the survey specification on this device…");
      response = await fetch("/api/surveys/" + id + "/spec/canonical", { cache: "no-store" });
      if (!response.ok) return refuse("The survey specification could not be loaded: " + (await detail(response)));
    } catch (e) {
      return refuse("The server could not be reached: " + e.message);
    }
    const result = await S.verifySpec(await response.arrayBuffer(), survey.digest);
    $("digest").textContent = result.digest;
    $("verification").hidden = false;

    const problems = result.problems.slice();
    const fromLink = new URLSearchParams(location.search).get("digest");
    let linkChecked = false;
    if (fromLink !== null) {
      try {
        const expected = S.parseDigest(fromLink);
        if (expected !== result.digest) {
          problems.unshift("the digest in your invitation link, " + expected + ", differs from this survey's " + result.digest);
        } else linkChecked = true;
      } catch (e) {
        problems.unshift("the digest in your invitation link is not readable: " + e.message);
      }
    }
    if (problems.length) return refuse("This survey failed verification on your device.", problems);

    spec = result.spec;
    const g = spec.guarantee;
    $("verified").className = "ok";
    $("verified").textContent = "Verified on this device: the specification matches this digest" +
      (linkChecked ? " and the digest in your invitation link" : "") + ". Each of its " + spec.cells.length +
      " cells keeps at least k = " + g.k + " respondents, or none, with probability at least 1 − " + g.risk + ".";

    if (survey.status !== "open") {
      const when = survey.status === "scheduled" ? "It opens on " + survey.opens + "." : "It closed on " + survey.closes + ".";
      return setStatus("This survey is not open. " + when);
    }
    const qi = spec.function.columns || [];
    const asked = (survey.answers || []).find((a) => qi.includes(a.name));
    if (asked) {  // the quasi-identifiers never leave this device, whatever the collector's form asks
      return refuse("The collector asks for " + asked.name + ", a value that must stay on your device, as an " +
        "answer. Do not answer this survey.");
    }
    buildForm();
    if (!tree) setStatus("Verified. Please fill in the form, then choose Review.");
  }

  // ------------------------------------------------------------------ the form

  function field(container, id, labelText, control, unit) {
    const div = document.createElement("div");
    div.className = "field";
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = labelText + (unit ? " (" + unit + ")" : "") + (control.required ? "" : " (optional)");
    control.id = id;
    control.name = id;
    div.append(label, control);
    if (unit) {
      const span = document.createElement("span");
      span.className = "unit";
      span.setAttribute("aria-hidden", "true"); // already in the label
      span.textContent = unit;
      div.append(span);
    }
    container.append(div);
  }

  function input(type, attributes) {
    const el = document.createElement("input");
    el.type = type;
    for (const [key, value] of Object.entries(attributes)) {
      if (value !== null && value !== undefined && value !== false) el.setAttribute(key, value === true ? "" : String(value));
    }
    return el;
  }

  // A decimal number as typed (a point as decimal separator); null otherwise.
  function parseDecimal(text) {
    const t = text.trim();
    return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) && Number.isFinite(Number(t)) ? Number(t) : null;
  }

  function buildForm() {
    const f = spec.function;
    columns = f.columns || f.standardization.mean.map((_, j) => "x" + (j + 1));
    const questions = survey.questions || {};
    if (f.kind === "decision-tree") buildTree();
    for (const column of tree ? [] : columns) {
      const q = questions[column] || {};
      const el = input("text", { inputmode: "decimal", required: true, autocomplete: "off", spellcheck: "false" });
      el.addEventListener("input", () => {
        el.setCustomValidity(el.value.trim() === "" || parseDecimal(el.value) !== null ? "" :
          "Enter a number, e.g. 42 or 3.5 (with a point as decimal separator).");
      });
      field($("qi-fields"), "qi-" + idPart(column), q.label || column, el, q.unit);
    }
    for (const a of survey.answers || []) {
      let el;
      if (a.type === "category") {
        el = document.createElement("select");
        el.required = Boolean(a.required);
        const blank = document.createElement("option");
        blank.value = "";
        blank.textContent = "Choose…";
        el.append(blank);
        for (const c of a.categories || []) {
          const option = document.createElement("option");
          option.value = c;
          option.textContent = c;
          el.append(option);
        }
      } else {
        const integer = a.type === "integer";
        const bound = (v, round) => (v === null || v === undefined ? null : integer ? round(v) : v);
        el = input("number", {
          step: integer ? "1" : "any", inputmode: integer ? "numeric" : "decimal", required: Boolean(a.required),
          min: bound(a.min, Math.ceil), max: bound(a.max, Math.floor), autocomplete: "off",
        });
      }
      field($("answer-fields"), "answer-" + idPart(a.name), a.label || a.name, el, null);
    }
    if (!(survey.answers || []).length) $("answer-fields").hidden = true;
    if (survey.requires_token) {
      const el = input("text", { required: true, autocomplete: "off", spellcheck: "false" });
      field($("token-field"), "token", "Invitation code (printed in your invitation)", el, null);
    }
    if (!survey.requires_token) { // issue 40.1: an open survey says what it does not protect against
      $("open-note").textContent = "Note: " + (survey.note ||
        "this survey takes no invitations: it is not protected against ballot stuffing.");
      $("open-note").hidden = false;
    }
    const form = $("survey-form");
    form.hidden = false;
    form.addEventListener("submit", review);
    form.addEventListener("input", invalidate); // an edited form needs a new review
    form.addEventListener("change", invalidate);
    $("send").addEventListener("click", send);
    if (tree) showTree();
  }

  // ------------------------------------------------------------------ the questions of a decision tree
  // Untrusted respondents (issue 18.1): the cell is found by yes/no questions, one at a time, as
  // on the printed questionnaire; the answers stay on this device, only the cell is sent.

  function buildTree() {
    tree = { answers: [], cell: null };
    $("qi-note").textContent = "Your answers to these questions stay on this device: they only choose your group " +
      "(cell), and only the cell number is sent.";
    $("tree").hidden = false;
    $("tree-yes").addEventListener("click", () => answerTree(true));
    $("tree-no").addEventListener("click", () => answerTree(false));
    $("tree-back").addEventListener("click", () => answerTree(null));
  }

  function answerTree(yes) { // null: back one question
    if (yes === null) tree.answers.pop();
    else tree.answers.push(yes);
    invalidate();
    showTree();
  }

  // The shortest decimal text that reads back as x (JavaScript's String, as Python's repr), written
  // without an exponent: thresholds are shown exactly.
  function decimal(x) {
    const text = String(x);
    const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
    if (m === null) return text;
    const digits = m[2] + (m[3] || ""), exponent = Number(m[4]);
    return m[1] + (exponent < 0 ? "0." + "0".repeat(-exponent - 1) + digits : digits + "0".repeat(exponent - digits.length + 1));
  }

  // "your age" from the label "Age", "Your age" or "age" (an acronym such as "BMI" keeps its case).
  function yourLabel(label) {
    const t = label.trim().replace(/^your\s+/i, "");
    return "your " + (/^[A-Z][a-z]/.test(t) ? t[0].toLowerCase() + t.slice(1) : t);
  }

  // The question of a split node (function.py "decision-tree": yes goes left), in the survey's words.
  function questionText(node) {
    const q = (survey.questions || {})[columns[node.column]] || {};
    const who = yourLabel(q.label || columns[node.column]);
    // each category quoted: a category may itself hold a comma ("West, coast")
    if (node.categories) return "Is " + who + " one of: " + node.categories.map((c) => "\u201c" + String(c) + "\u201d").join(", ") + "?";
    return "Is " + who + " under " + decimal(node.threshold) + (q.unit ? " " + q.unit : "") + "?";
  }

  function showTree() {
    const nodes = spec.function.rule.nodes;
    const walk = S.treeWalk(spec.function, tree.answers);
    tree.cell = walk.cell;
    const done = walk.cell !== null;
    $("tree-answers").replaceChildren(...walk.asked.map((i, depth) => {
      const li = document.createElement("li");
      li.textContent = questionText(nodes[i]) + " " + (tree.answers[depth] ? "Yes" : "No");
      return li;
    }));
    $("tree-question").textContent = done ? "Your cell: " + walk.cell : questionText(nodes[walk.node]);
    const focused = document.activeElement;
    $("tree-yes").hidden = $("tree-no").hidden = done;
    $("tree-back").hidden = tree.answers.length === 0;
    if (focused && focused.hidden) $("tree-question").focus(); // its button went away
    $("answer-fields").hidden = !done || !(survey.answers || []).length;
    $("token-field").hidden = !done;
    $("review").hidden = !done;
    const status = done ? "Your cell is found. Please answer the questions below, then choose Review." :
      "Verified. Please answer the questions about you, one at a time.";
    if ($("status").textContent !== status) setStatus(status);
  }

  function invalidate() {
    if (payloadText === null) return;
    payloadText = null;
    $("review-section").hidden = true;
    $("result").textContent = "";
  }

  // 32 random bytes, base64url without padding (43 characters).
  function idempotencyKey() {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // ------------------------------------------------------------------ review and send

  function review(event) {
    event.preventDefault();
    const form = $("survey-form");
    if (!form.reportValidity()) return;
    let cell;
    try {
      if (tree && tree.cell === null) throw new Error("answer the questions about you first.");
      cell = tree ? tree.cell : S.assignCell(spec.function, columns.map((c) => parseDecimal($("qi-" + idPart(c)).value)));
    } catch (e) { // function.py's rule, on this device
      $("result").textContent = "Your cell could not be computed: " + e.message;
      return;
    }
    const answers = {};
    for (const a of survey.answers || []) {
      const el = $("answer-" + idPart(a.name));
      if (el.value === "") continue; // an optional question left blank
      answers[a.name] = a.type === "category" ? el.value : Number(el.value);
    }
    const payload = { digest: survey.digest, cell: cell, answers: answers, idempotency_key: idempotencyKey() };
    if (survey.requires_token) payload.token = $("token").value.trim();
    payloadText = JSON.stringify(payload, null, 2);

    const centroid = spec.function.centroids[cell];
    const shown = columns.map((c, j) => {
      const q = (survey.questions || {})[c] || {};
      const value = typeof centroid[j] === "number" ? Number(centroid[j].toPrecision(4)) : centroid[j]; // or a category
      return (q.label || c) + " " + value + (q.unit ? " " + q.unit : "");
    });
    $("cell-note").textContent = "Your group is cell " + cell + " of " + spec.cells.length +
      ". Your own values stay on this device; the published results show the group's averages (" + shown.join(", ") + ").";
    $("payload").textContent = payloadText;
    $("result").textContent = "";
    $("send").disabled = false;
    $("review-section").hidden = false;
    $("review-heading").focus();
  }

  async function send() {
    if (payloadText === null) return;
    const body = payloadText;
    $("send").disabled = true;
    $("result").className = "";
    $("result").textContent = "Sending…";
    let response;
    try {
      response = await fetch("/api/surveys/" + survey.id + "/submissions", {
        method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: body,
      });
    } catch (e) {
      $("result").className = "error";
      $("result").textContent = "Not sent: the server could not be reached. Your answers are still here; choose Send to try again.";
      $("send").disabled = false;
      return;
    }
    if (response.status === 201 || response.status === 200) {
      $("result").className = "ok";
      $("result").textContent = response.status === 201 ? "Thank you: your answers were stored." :
        "Thank you: your answers had already been stored.";
      for (const el of $("survey-form").elements) el.disabled = true;
      setStatus("Done.");
      return;
    }
    $("result").className = "error";
    $("result").textContent = "Not stored: " + (await detail(response));
    $("send").disabled = false;
  }

  document.addEventListener("DOMContentLoaded", () => {
    start().catch((e) => refuse("Something went wrong: " + e.message));
  });
})();
