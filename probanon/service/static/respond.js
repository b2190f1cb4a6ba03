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
    setStatus("Verified. Please fill in the form, then choose Review.");
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
    for (const column of columns) {
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
    const form = $("survey-form");
    form.hidden = false;
    form.addEventListener("submit", review);
    form.addEventListener("input", invalidate); // an edited form needs a new review
    form.addEventListener("change", invalidate);
    $("send").addEventListener("click", send);
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
    const values = columns.map((c) => parseDecimal($("qi-" + idPart(c)).value));
    let cell;
    try {
      cell = S.assignCell(spec.function, values); // function.py's rule, on this device
    } catch (e) {
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
      return (q.label || c) + " " + Number(centroid[j].toPrecision(4)) + (q.unit ? " " + q.unit : "");
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
