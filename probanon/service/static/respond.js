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
  let issuer = null; // the survey's token key (blindrsa.js importIssuer), when it takes invitations
  let credential = null; // the unblinded token: {digest, key_id, nonce, signature, idempotency_key}

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
    if (survey.requires_token) return invitationStep(); // issue 40.3: the code is redeemed first
    showQuestions();
  }

  function showQuestions() {
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
      opens: doc.opens, release: doc.release, frame: doc.frame, requires_token: !doc.open, open: doc.open,
      issuer: doc.issuer, receipt_key: doc.receipt_key }); // the token key is the one the letter's digest covers
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
  // until it is given and matches, or, on an open survey, the respondent says she has no letter
  // (then the page says so). A survey with invitations (its document: "open": false) offers no
  // such choice: the letter that carries the code carries the digest, and without it the listed
  // digest proves nothing (a collector could serve this one respondent a document of its own).
  function setupLetter(digest) {
    if (letter.checked) {
      $("letter-status").className = "ok";
      $("letter-status").textContent = "Checked against your letter: the digest in your invitation link is this survey's.";
      return;
    }
    $("letter").hidden = false;
    $("letter-skip-row").hidden = !skipAllowed();
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
      if (!$("invitation").hidden && credential === null) setStatus("Verified. Please enter the invitation code printed in your invitation.");
    });
    $("letter-skip").addEventListener("change", () => {
      letter.skipped = skipAllowed() && $("letter-skip").checked;
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
        "Not checked against your letter: type the digest printed in your letter above and choose Check" +
        (skipAllowed() ? " (or say you have no letter)." : ": this survey takes invitations, and your letter gives its digest.");
    }
    if ($("review")) $("review").disabled = !letterAllows();
    if (!tree && survey.status === "open" && !$("survey-form").hidden) {
      setStatus(letter.checked ? "Verified. Please fill in the form, then choose Review." :
        "Not checked against your letter. " + (letter.skipped ? "Please fill in the form, then choose Review." :
          "Give your letter's digest above before you answer."));
    }
  }

  function letterAllows() {
    return letter.checked || (letter.skipped && skipAllowed());
  }

  // "I have no letter" is offered on an open survey only (audit of issue 40, finding 5).
  function skipAllowed() {
    return survey.open === true;
  }

  // ------------------------------------------------------------------ the invitation (issue 40.3)
  // The letter's code is redeemed on this device for a blindly signed token (RFC 9474
  // RSABSSA-SHA384-PSS-Deterministic, RFC 9578 token input; blindrsa.js) BEFORE the questions:
  // POST /api/surveys/{id}/issuance {"code", "blinded_msg"} -> {"blind_sig"}. The collector sees the
  // code and a blinded message; the submission carries the unblinded {"nonce", "signature"}, which
  // it cannot match to the code. The request (while pending) and then the token are kept in this
  // tab's sessionStorage, so a lost answer or a reload sends the same blinded message again (the
  // collector answers the same blind signature for the same code and message) and a token is
  // never drawn twice.

  const B = () => globalThis.ProbanonBlindRSA;

  function storageKey() {
    return "probanon/token/" + survey.id;
  }

  // What this tab keeps for the survey: a pending request {code, nonce, blinded_msg, inv} or a
  // token {nonce, signature, idempotency_key}; both carry the digest and key id they belong to.
  function loadSaved() {
    try {
      const saved = JSON.parse(sessionStorage.getItem(storageKey()));
      if (saved && saved.digest === survey.digest && saved.key_id === survey.issuer.key_id) return saved;
    } catch (e) { /* no storage, or not ours */ }
    return null;
  }

  function save(value) {
    try {
      if (value === null) sessionStorage.removeItem(storageKey());
      else sessionStorage.setItem(storageKey(), JSON.stringify(value));
    } catch (e) { /* storage refused: the page still works, without surviving a reload */ }
  }

  function invitationMessage(text, ok) {
    $("invitation-result").className = ok ? "ok" : "error";
    $("invitation-result").textContent = text;
  }

  async function invitationStep() {
    if (!B()) return refuse("This page could not load its token code (blindrsa.js).");
    try {
      issuer = await B().importIssuer(survey.issuer);
    } catch (e) {
      return refuse("This survey's invitation key cannot be used: " + e.message + ".");
    }
    const code = input("text", { required: true, autocomplete: "off", spellcheck: "false" });
    field($("invitation-fields"), "invitation-code", "Invitation code (printed in your invitation)", code, null);
    $("invitation").hidden = false;
    const saved = loadSaved();
    if (saved && saved.signature) return useCredential(saved, "Your invitation code was already exchanged on this device for an anonymous token.");
    if (saved && saved.code) $("invitation-code").value = saved.code; // a request left pending
    $("invitation-form").addEventListener("submit", redeem);
    letterGate();
    setStatus(letter.checked ? "Verified. Please enter the invitation code printed in your invitation." :
      "Not checked against your letter. Give your letter's digest above before you use your code.");
  }

  // The pending request for this code: the saved one (same code), else a new nonce, blinded.
  async function pendingRequest(code) {
    const saved = loadSaved();
    if (saved && !saved.signature && saved.code === code) return saved;
    const r = await B().request(issuer, survey.digest);
    const pending = { digest: survey.digest, key_id: survey.issuer.key_id, code: code,
      nonce: B().b64urlEncode(r.nonce), blinded_msg: B().b64urlEncode(r.blindedMsg), inv: r.inv.toString(16) };
    save(pending);
    return pending;
  }

  async function redeem(event) {
    event.preventDefault();
    if (!letterAllows()) { // no code is spent on a survey not checked against the letter (issue 40.5)
      return invitationMessage("Give your letter's digest above before you use your code.", false);
    }
    const code = $("invitation-code").value.trim();
    if (code === "") return invitationMessage("Enter the invitation code printed in your invitation.", false);
    $("redeem").disabled = true;
    try {
      await redeemCode(code);
    } catch (e) {
      invitationMessage("Your invitation code could not be used: " + e.message, false);
    } finally {
      if (credential === null) $("redeem").disabled = false;
    }
  }

  async function redeemCode(code) {
    const pending = await pendingRequest(code);
    invitationMessage("Exchanging your invitation code…", true);
    let response;
    try {
      response = await fetch("/api/surveys/" + survey.id + "/issuance", {
        method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ code: code, blinded_msg: pending.blinded_msg }), cache: "no-store",
      });
    } catch (e) {
      return invitationMessage("The collector could not be reached. Your code is kept on this device: choose " +
        "\u201cUse my invitation code\u201d to try again (the same request is sent again).", false);
    }
    if (response.status === 403) {
      save(null); // the next code gets a fresh request
      return invitationMessage("This invitation code is unknown or has already been used: check the code printed " +
        "in your invitation (the collector said: " + (await detail(response)) + ").", false);
    }
    if (response.status === 409) {
      return invitationMessage("This survey does not take answers now: " + (await detail(response)) + ".", false);
    }
    if (!response.ok) {
      return invitationMessage("Your invitation code could not be used: " + (await detail(response)) + ".", false);
    }
    let blindSig;
    try {
      blindSig = B().b64urlDecode((await response.json()).blind_sig);
    } catch (e) {
      return invitationMessage("The collector's answer is not readable; choose \u201cUse my invitation code\u201d " +
        "to try again.", false);
    }
    let token;
    try { // RFC 9474 Finalize: refused unless the signature verifies with the survey's published key
      token = await B().token(issuer, survey.digest, B().b64urlDecode(pending.nonce), blindSig, BigInt("0x" + pending.inv));
    } catch (e) {
      return invitationMessage("The collector's answer does not verify with this survey's published key (" +
        e.message + "): answers sent with it would not count. Do not answer this survey.", false);
    }
    const value = { digest: survey.digest, key_id: survey.issuer.key_id, nonce: token.nonce,
      signature: token.signature, idempotency_key: idempotencyKey() };
    save(value); // the code, the blinded message and the blind are forgotten
    useCredential(value, "Your invitation code was exchanged on this device for an anonymous token.");
  }

  function useCredential(value, text) {
    credential = value;
    for (const el of $("invitation-form").elements) el.disabled = true;
    $("invitation-form").hidden = true;
    invitationMessage(text + " The collector cannot tell which invitation your answers come from.", true);
    showQuestions();
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
    const payload = { digest: survey.digest, cell: cell, answers: answers,
      idempotency_key: credential ? credential.idempotency_key : idempotencyKey() };
    if (survey.requires_token) payload.token = { nonce: credential.nonce, signature: credential.signature };
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
      let reply = null;
      try { reply = await response.json(); } catch (e) { /* no JSON: no receipt */ }
      $("result").className = "ok";
      $("result").textContent = response.status === 201 ? "Thank you: your answers were stored." :
        "Thank you: your answers had already been stored.";
      for (const el of $("survey-form").elements) el.disabled = true;
      if (credential) save(null); // the token is spent
      setStatus("Done.");
      await showReceipt(JSON.parse(body), reply && typeof reply === "object" ? reply.receipt ?? null : null);
      return;
    }
    $("result").className = "error";
    $("result").textContent = "Not stored: " + (await detail(response));
    $("send").disabled = false;
  }

  // The receipt of the stored answers (receipts.py, issue 40.10), verified on this device with the
  // survey document's receipt_key (Ed25519, WebCrypto) and shown with the command that checks it
  // against the release report; a browser without Ed25519 shows it unverified and says so.
  async function showReceipt(sent, receipt) {
    if (!survey.receipt_key) return; // a survey published before receipts
    let check;
    try {
      check = await S.verifyReceipt(survey.receipt_key, survey.id, sent, receipt);
    } catch (e) {
      check = { verified: false, problem: e.message };
    }
    const status = $("receipt-status");
    if (check.verified === true) {
      status.className = "ok";
      status.textContent = "Receipt verified on this device: it is this survey's signature (its receipt key, in the " +
        "survey document) of exactly the answers you sent. Keep it.";
    } else if (check.verified === null) {
      status.className = "warning";
      status.textContent = "Receipt not verified: " + check.problem + ". Keep it and check it with the command below.";
    } else {
      status.className = "error";
      status.textContent = "The collector's receipt does not verify: " + check.problem + ". Keep this page's " +
        "receipt and tell the survey office.";
    }
    $("receipt").value = receipt === null || receipt === undefined ? "" : JSON.stringify(receipt);
    $("receipt-command").textContent = "probanon survey receipt --report release_report.json --receipt receipt.json " +
      "--key=" + survey.receipt_key; // "=": a key may begin with "-"
    $("receipt-copy").hidden = $("receipt").value === "";
    $("receipt-copy").onclick = () => {
      $("receipt").select();
      if (navigator.clipboard) navigator.clipboard.writeText($("receipt").value).catch(() => {});
    };
    $("receipt-section").hidden = false;
  }

  document.addEventListener("DOMContentLoaded", () => {
    start().catch((e) => refuse("Something went wrong: " + e.message));
  });
})();
