// The respondent page (/respond/{id}): verify the survey document (everything the survey asks,
// issue 40.4) against the digest of the respondent's letter and the published specification on
// this device, compute the respondent's cell locally (her quasi-identifiers never leave the
// browser), show the exact message, and send it (contract: POST /api/surveys/{id}/submissions).
(function () {
  "use strict";
  const S = globalThis.ProbanonSurvey;
  const $ = (id) => document.getElementById(id);
  const idPart = (name) => String(name).replace(/\s/g, "_"); // element ids have no blanks

  let survey = null; // GET /api/surveys/{id}, then what its verified document says (the form is built from the document)
  let letter = { digest: null, checked: false, skipped: false }; // the letter's digest (issue 40.5): given, matched, or skipped
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
    let response, documentBytes;
    try {
      response = await fetch("/api/surveys/" + id, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!response.ok) return refuse("The survey could not be loaded: " + (await detail(response)));
      survey = await response.json();
      document.title = survey.title;
      $("title").textContent = survey.title;
      setStatus("Checking the survey document and its specification on this device…");
      response = await fetch("/api/surveys/" + id + "/document", { cache: "no-store" });
      if (!response.ok) return refuse("The survey document could not be loaded: " + (await detail(response)));
      documentBytes = await response.arrayBuffer();
      response = await fetch("/api/surveys/" + id + "/spec/canonical", { cache: "no-store" });
      if (!response.ok) return refuse("The survey specification could not be loaded: " + (await detail(response)));
    } catch (e) {
      return refuse("The server could not be reached: " + e.message);
    }
    const checked = await checkDocument(documentBytes);
    $("digest").textContent = checked.digest;
    $("verification").hidden = false;
    const problems = checked.problems.slice();
    let result = null;
    if (checked.document !== null) {
      result = await S.verifySpec(await response.arrayBuffer(), checked.document.specification.digest);
      problems.push(...result.problems);
    }
    const fromLink = new URLSearchParams(location.search).get("digest");
    if (fromLink !== null) {
      try {
        letter.digest = S.parseDigest(fromLink);
        if (letter.digest !== checked.digest) {
          problems.unshift("the digest in your invitation link, " + letter.digest + ", differs from this survey's " + checked.digest);
        } else letter.checked = true;
      } catch (e) {
        problems.unshift("the digest in your invitation link is not readable: " + e.message);
      }
    }
    if (problems.length) return refuse("This survey failed verification on your device.", problems);

    spec = result.spec;
    adoptDocument(checked.document);
    showDocument(checked.document);
    const g = spec.guarantee;
    $("verified").className = "ok";
    $("verified").textContent = "Verified on this device: the survey document has this digest, its specification " +
      "matches the document. Each of its " + spec.cells.length + " cells keeps at least k = " + g.k +
      " respondents, or none, with probability at least 1 − " + g.risk + ".";
    setupLetter(checked.digest);

    if (survey.status !== "open") {
      const when = survey.status === "scheduled" ? "It opens on " + survey.opens + "." : "It closed on " + survey.closes + ".";
      return setStatus("This survey is not open. " + when);
    }
    const qi = spec.function.columns || [];
    const asked = (survey.answers || []).find((a) => S.sameAsKey(a.name, qi) !== null);
    if (asked) {  // the quasi-identifiers never leave this device, whatever the collector's form asks
      return refuse("The collector asks for " + asked.name + ", a value that must stay on your device (the key " +
        S.sameAsKey(asked.name, qi) + "), as an answer. Do not answer this survey.");
    }
    buildForm();
    letterGate();
  }

  // ------------------------------------------------------------------ the survey document and the letter (issues 40.4, 40.5)

  // The document served, read and compared with the survey's description: {digest, document, problems}.
  async function checkDocument(bytes) {
    const read = await S.readDocument(bytes);
    if (read.document === null) return read;
    const contradictions = S.documentContradictions(survey, read.document, read.digest);
    return { digest: read.digest, document: read.document, problems: read.problems.concat(contradictions) };
  }

  // From here on the survey is asked as its document says (the description agreed with it).
  function adoptDocument(doc) {
    survey = Object.assign({}, survey, { title: doc.title, answers: doc.answers, questions: doc.questions,
      opens: doc.opens, release: doc.release, frame: doc.frame, requires_token: !doc.open, open: doc.open });
  }

  // What the document says, shown before anything is asked.
  function showDocument(doc) {
    const rows = [
      ["Title", doc.title],
      ["Open", doc.opens + " to " + doc.closes],
      ["Who may answer", doc.open ? "anyone: no invitation is needed (not protected against ballot stuffing)" :
        "one answer per invitation letter; at most " + doc.frame + " people are invited"],
      ["Release", (doc.release.interim && doc.release.interim.length ?
        doc.release.interim.length + " interim release(s) before the close (" + doc.release.interim.join(", ") + ")" :
        "nothing is released before the close") + "; a group with fewer than k answers is " +
        (doc.release.small_cells === "flag" ? "released flagged" : "left out")],
    ];
    for (const column of Object.keys(doc.questions)) {
      const q = doc.questions[column] || {};
      rows.push(["Kept on this device", (q.label || column) + (q.unit ? " (" + q.unit + ")" : "")]);
    }
    for (const a of doc.answers) {
      const kind = a.type === "category" ? "one of " + (a.categories || []).join(", ") :
        a.type + (a.min !== null || a.max !== null ? " from " + (a.min ?? "−∞") + " to " + (a.max ?? "∞") : "");
      rows.push(["Asked and sent", (a.label || a.name) + " (" + kind + (a.required === false ? ", optional" : "") + ")"]);
    }
    rows.push(["Specification", doc.specification.digest]);
    rows.push(["Page files", Object.keys(doc.page).sort().map((name) => name + " " + doc.page[name].slice(7, 19)).join(", ")]);
    $("document-summary").replaceChildren(...rows.flatMap(([term, text]) => {
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = text;
      return [dt, dd];
    }));
  }

  // Without ?digest= in the address, ask for the letter's digest: nothing can be reviewed or sent
  // until it is given and matches, or the respondent says she has no letter (then the page says so).
  function setupLetter(digest) {
    if (letter.checked) {
      $("letter-status").className = "ok";
      $("letter-status").textContent = "Checked against your letter: the digest in your invitation link is this survey's.";
      return;
    }
    $("letter").hidden = false;
    $("letter-check").addEventListener("click", () => {
      let given;
      try {
        given = S.parseDigest($("letter-digest").value);
      } catch (e) {
        $("letter-status").className = "error";
        $("letter-status").textContent = "Not a digest: " + e.message;
        return;
      }
      letter.digest = given;
      if (given !== digest) {
        return refuse("This is not the survey of your letter.", ["the digest in your letter, " + given +
          ", differs from this survey's " + digest + " (if you mistyped it, reload the page and type it again)"]);
      }
      letter.checked = true;
      $("letter").hidden = true;
      letterGate();
    });
    $("letter-skip").addEventListener("change", () => {
      letter.skipped = $("letter-skip").checked;
      if (!letter.skipped) invalidate();
      letterGate();
    });
  }

  // The letter's state, said plainly, and the Review button enabled only once the letter is checked or skipped.
  function letterGate() {
    const status = $("letter-status");
    if (letter.checked) {
      status.className = "ok";
      status.textContent = "Checked against your letter: its digest is this survey's.";
    } else {
      status.className = "warning";
      status.textContent = letter.skipped ?
        "Not checked against your letter: you chose to answer without it." :
        "Not checked against your letter: type the digest printed in your letter above and choose Check (or say you have no letter).";
    }
    if ($("review")) $("review").disabled = !(letter.checked || letter.skipped);
    if (!tree && survey.status === "open" && !$("survey-form").hidden) {
      setStatus(letter.checked ? "Verified. Please fill in the form, then choose Review." :
        "Not checked against your letter. " + (letter.skipped ? "Please fill in the form, then choose Review." :
          "Give your letter's digest above before you answer."));
    }
  }

  function letterAllows() {
    return letter.checked || letter.skipped;
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
      (letter.checked ? "Verified." : "Not checked against your letter.") + " Please answer the questions about you, one at a time.";
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
    if (!letterAllows()) return; // the letter's digest first (issue 40.5)
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
