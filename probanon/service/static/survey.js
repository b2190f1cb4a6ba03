// probanon respondent-side computations: pure functions, no DOM (globalThis.ProbanonSurvey).
//
// A respondent checks the published survey specification and finds her own cell without
// trusting the collector (paper 1, Sec. IV.B: locally trusted respondents). Every function
// here mirrors the Python reference it names, operation for operation in float64, so the
// browser and `probanon survey verify` / `function.assign` agree bit for bit.
(function (root) {
  "use strict";

  const RESCALE = 1e-250; // probanon/survey/anonymity.py RESCALE
  const MAX_CONSTANT_SEARCH = 1e7; // anonymity.py MAX_CONSTANT_SEARCH
  const TOLERANCE = 1e-9; // spec.py TOLERANCE: declared vs recomputed failure
  const MAX_RECORDS = 1e8; // spec.py MAX_RECORDS
  const VERSION = 1; // spec.py VERSION

  // ------------------------------------------------------------------ paper 1, Algorithm A
  // p_n = (1 - pi_n) p_{n-1} + pi_n ShiftDown(p_{n-1}) on p = (P{K=0}, ..., P{K=k-1}),
  // kept with a separate log scale factor (anonymity.py _step, _log_tail, _scan).

  // One step on the scaled vector v; returns the log of the factor divided out.
  function step(v, pi) {
    const k = v.length;
    for (let i = k - 1; i > 0; i--) v[i] = (1.0 - pi) * v[i] + pi * v[i - 1];
    v[0] = (1.0 - pi) * v[0];
    let top = v[0];
    for (let i = 1; i < k; i++) if (v[i] > top) top = v[i];
    if (0.0 < top && top < RESCALE) {
      for (let i = 0; i < k; i++) v[i] /= top;
      return Math.log(top);
    }
    return 0.0;
  }

  // log qbar = log sum_{i=1}^{k-1} p(i) (a SUM of the pmf, never 1 - P{K >= k}); -Infinity when 0.
  function logTail(v, scale) {
    let tail = 0.0;
    for (let i = 1; i < v.length; i++) tail += v[i];
    return tail > 0.0 ? Math.log(tail) + scale : -Infinity;
  }

  // Grow the cell record by record (pis[j], or the constant pis[0]) until n >= k and
  // log qbar <= logPbar, or n = nmax (anonymity.py _scan with start = 1).
  function scan(pis, constant, k, logPbar, nmax) {
    const v = new Float64Array(k);
    v[0] = 1.0;
    let scale = 0.0;
    let n = 0;
    let lt = -Infinity;
    while (n < nmax) {
      scale += step(v, constant ? pis[0] : pis[n]);
      n += 1;
      if (n >= k) {
        lt = logTail(v, scale);
        if (lt <= logPbar) break;
      }
    }
    if (n < k) lt = logTail(v, scale);
    return { n: n, logFailure: lt };
  }

  function checkK(k) {
    if (!Number.isInteger(k) || k < 1) throw new Error("k must be a positive integer, got " + k);
    return k;
  }

  function checkProbability(pi, what) {
    if (typeof pi !== "number" || !(pi > 0.0 && pi <= 1.0)) {
      throw new Error(what + " must be a probability in (0, 1], got " + pi);
    }
    return pi;
  }

  // Cell failure qbar = P{0 < K_n < k} of a cell of n records with constant participation pi,
  // or of the records with participation pis[j] (n = pis.length). Returns {logFailure, failure}.
  function cellFailure(k, participation, n) {
    checkK(k);
    let pis;
    const constant = typeof participation === "number";
    if (constant) {
      pis = [checkProbability(participation, "participation")];
      if (!Number.isInteger(n) || n < 1) throw new Error("cell size must be a positive integer, got " + n);
    } else {
      if (!Array.isArray(participation) || participation.length === 0) {
        throw new Error("participation must be a probability or one per record");
      }
      pis = participation.map((p, j) => checkProbability(p, "participation of record " + j));
      if (n === undefined || n === null) n = pis.length;
      if (n !== pis.length) throw new Error(pis.length + " participation probabilities for a cell of " + n + " records");
    }
    const lt = scan(pis, constant, k, -Infinity, n).logFailure; // no early stop
    return { logFailure: lt, failure: Math.exp(lt) };
  }

  // Effective anonymity n_min = min{n >= k : qbar(n) <= pbar} for a constant pi (paper 1,
  // Algorithm A); null when no cell of up to 10^7 records reaches the risk.
  function nMin(k, pi, risk) {
    checkK(k);
    checkProbability(pi, "participation");
    if (typeof risk !== "number" || !(risk > 0.0 && risk < 1.0)) throw new Error("risk must be in (0, 1), got " + risk);
    const logPbar = Math.log(risk);
    const r = scan([pi], true, k, logPbar, MAX_CONSTANT_SEARCH);
    return r.n >= k && r.logFailure <= logPbar ? r.n : null;
  }

  // ------------------------------------------------------------------ the function's rule
  // probanon/microagg/function.py: z = (x - mean) / scale per column, then
  //  ordered-balls: the FIRST group g with (||z - r_g||^2, z) <= (radius2_g, boundary_g)
  //    lexicographically, the last group by default;
  //  power-diagram: argmin_g ||z - c_g||^2 + offset_g, lowest g on ties.
  // Squared distances are summed column by column in float64 (acc += t * t), as in the fit.
  //  decision-tree (untrusted respondents, _assign_tree): from node 0, to 'left' when the key's
  //    value (original units) is below 'threshold', or is one of 'categories' for a categorical
  //    key (the function's "encoding"), else to 'right', down to a leaf, whose 'cell' it takes.

  const KINDS = ["ordered-balls", "power-diagram", "decision-tree"];

  const own = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  // The keys' names: "columns", else the encoding's, else 0, 1, ...
  function columnsOf(f) {
    return f.columns || (f.encoding ? f.encoding.columns : f.standardization.mean.map((_, j) => String(j)));
  }

  // The levels of key j (nominal categories or ordinal levels, mixed.py Encoding), null for a number.
  function levelsOf(f, j) {
    const e = f.encoding;
    if (!e) return null;
    const name = e.columns[j];
    return own(e.nominal, name) ? e.nominal[name] : own(e.ordinal, name) ? e.ordinal[name] : null;
  }

  const isLevel = (levels, v) => levels.some((level) => level === v);

  // values: an array in the function's key order, or an object keyed by name; each value checked
  // (a finite number, or one of a categorical key's levels).
  function record(f, values) {
    const names = columnsOf(f);
    const x = Array.isArray(values) ? values : names.map((name) => values[name]);
    if (x.length !== names.length) throw new Error("the record has " + x.length + " values, the function expects " + names.length);
    x.forEach((v, j) => {
      const levels = levelsOf(f, j);
      if (levels !== null && !isLevel(levels, v)) throw new Error("value of " + names[j] + " is not one of its categories: " + v);
      if (levels === null && (typeof v !== "number" || !Number.isFinite(v))) throw new Error("value of " + names[j] + " is not a finite number: " + v);
    });
    return x;
  }

  function standardise(f, values) {
    const mean = f.standardization.mean;
    const scale = f.standardization.scale;
    return record(f, values).map((v, j) => (v - mean[j]) / scale[j]);
  }

  // Down a decision tree from node 0: decide(node, depth) is the answer to the node's question
  // (true: yes, to 'left'), or undefined to stop there. Returns {node, cell (null unless a leaf
  // was reached), asked (the split nodes answered, in order)}.
  function descend(nodes, decide) {
    const asked = [];
    let i = 0;
    while (!own(nodes[i], "cell")) {
      const yes = decide(nodes[i], asked.length);
      if (yes === undefined) return { node: i, cell: null, asked: asked };
      const next = yes ? nodes[i].left : nodes[i].right;
      if (!(Number.isInteger(next) && next > i && next < nodes.length)) throw new Error("decision-tree node " + i + " is malformed");
      asked.push(i);
      i = next;
    }
    return { node: i, cell: nodes[i].cell, asked: asked };
  }

  // Where the answers given so far (true: yes) lead in a decision tree: a question node, or a cell.
  function treeWalk(f, answers) {
    const r = descend(f.rule.nodes, (node, depth) => (depth < answers.length ? Boolean(answers[depth]) : undefined));
    if (r.asked.length < answers.length) throw new Error("more answers than the tree has questions on this path");
    return r;
  }

  function squaredDistance(z, ref) {
    let acc = 0.0;
    for (let c = 0; c < z.length; c++) {
      const t = z[c] - ref[c];
      acc += t * t;
    }
    return acc;
  }

  function assignCell(f, values) {
    if (!KINDS.includes(f.kind)) {
      throw new Error("this page cannot apply a function of kind " + JSON.stringify(f.kind));
    }
    if (f.kind === "decision-tree") {
      const x = record(f, values);
      return descend(f.rule.nodes, (node) => (own(node, "categories") ? isLevel(node.categories, x[node.column])
        : x[node.column] < node.threshold)).cell;
    }
    const z = standardise(f, values);
    if (f.kind === "ordered-balls") {
      const refs = f.rule.references, rad2 = f.rule.radius2, bounds = f.rule.boundary;
      for (let g = 0; g < rad2.length; g++) {
        const acc = squaredDistance(z, refs[g]);
        let inside = acc < rad2[g];
        if (acc === rad2[g]) {
          inside = true; // lexicographic tie rule against the boundary tuple
          for (let c = 0; c < z.length; c++) {
            if (z[c] !== bounds[g][c]) {
              inside = z[c] < bounds[g][c];
              break;
            }
          }
        }
        if (inside) return g;
      }
      return rad2.length; // the last group
    }
    const centers = f.rule.centers, offsets = f.rule.offsets; // power-diagram
    let best = Infinity;
    let arg = 0;
    for (let g = 0; g < centers.length; g++) {
      const acc = squaredDistance(z, centers[g]) + offsets[g];
      if (acc < best) { // strict: the lowest g on ties
        best = acc;
        arg = g;
      }
    }
    return arg;
  }

  // ------------------------------------------------------------------ the specification
  // The checks of probanon/survey/spec.py verify / _check_guarantee. A malformed field stops
  // the checks (SpecError); the findings a well-formed spec can have are collected.

  class SpecError extends Error {}

  function field(obj, key, where) {
    if (obj === null || typeof obj !== "object" || Array.isArray(obj) || !(key in obj)) {
      throw new SpecError("specification: missing " + where + JSON.stringify(key));
    }
    return obj[key];
  }

  function integer(value, what) {
    if (!Number.isInteger(value)) throw new SpecError("specification: " + what + " must be an integer, got " + JSON.stringify(value));
    return value;
  }

  function finiteArray(value, what, width) {
    const ok = Array.isArray(value) && value.every((v) => typeof v === "number" && Number.isFinite(v));
    if (!ok || (width !== undefined && value.length !== width)) throw new SpecError("function: " + what + " is malformed");
    return value;
  }

  function matrix(value, what, rows, width) {
    if (!Array.isArray(value) || value.length !== rows) throw new SpecError("function: " + what + " has the wrong shape");
    value.forEach((row, i) => finiteArray(row, what + " row " + i, width));
    return value;
  }

  // mixed.py Encoding.from_dict, and the encoding's width against the standardization's.
  function checkEncoding(e, width) {
    const lists = isObject(e) && isObject(e.ordinal) && isObject(e.nominal) ? Object.entries({ ...e.ordinal, ...e.nominal }) : null;
    const ok = lists !== null && Array.isArray(e.columns) && e.columns.every((c) => typeof c === "string") &&
      lists.every(([c, v]) => e.columns.includes(c) && Array.isArray(v) && v.length > 0 &&
        v.every((x) => typeof x === "string" || typeof x === "number"));
    if (!ok) throw new SpecError("function: malformed 'encoding' of categorical keys");
    const embedded = e.columns.reduce((n, c) => n + (own(e.nominal, c) ? e.nominal[c].length : 1), 0);
    if (embedded !== width) throw new SpecError("function: the encoding's width differs from the standardization's");
  }

  // function.py _mixed_centroids: per cell a finite number per numeric key, a level per categorical key.
  function mixedCentroids(f, rows, cells) {
    const p = f.encoding.columns.length;
    if (!Array.isArray(rows) || rows.length !== cells || !rows.every((r) => Array.isArray(r) && r.length === p)) {
      throw new SpecError("function: 'centroids' must list " + p + " values per cell");
    }
    f.encoding.columns.forEach((c, j) => {
      const levels = levelsOf(f, j);
      const ok = rows.every((r) => (levels !== null ? isLevel(levels, r[j]) : typeof r[j] === "number" && Number.isFinite(r[j])));
      if (!ok) throw new SpecError("function: the centroids of key '" + c + "' must be " + (levels !== null ? "its categories" : "finite numbers"));
    });
  }

  // function.py _tree_rule: a tree rooted at node 0 (every other node the child of exactly one
  // node with a lower index); split nodes ask about one of the keys, a numeric key with a finite
  // 'threshold', a categorical key with a non-empty list of its distinct 'categories'; the
  // leaves' cells are 0..cells-1, each once.
  function checkTree(f, rule, keys, cells) {
    const nodes = rule.nodes;
    if (!Array.isArray(nodes) || nodes.length === 0 || !nodes.every(isObject)) {
      throw new SpecError("function: a decision-tree rule needs a non-empty list of 'nodes' (objects)");
    }
    const holds = (node, names) => Object.keys(node).sort().join() === names;
    const parents = nodes.map(() => 0);
    const leaves = [];
    nodes.forEach((node, i) => {
      if (own(node, "cell")) {
        if (!holds(node, "cell") || !Number.isInteger(node.cell)) throw new SpecError("function: decision-tree leaf " + i + " must hold only an integer 'cell'");
        leaves.push(node.cell);
        return;
      }
      const column = node.column;
      if (!Number.isInteger(column) || column < 0 || column >= keys) {
        throw new SpecError("function: decision-tree node " + i + " must ask about a key 'column' in 0.." + (keys - 1));
      }
      const levels = levelsOf(f, column);
      if (levels !== null) {
        const c = node.categories;
        if (!holds(node, "categories,column,left,right") || !Array.isArray(c) || c.length === 0 ||
            new Set(c.map(String)).size !== c.length || !c.every((v) => isLevel(levels, v))) {
          throw new SpecError("function: decision-tree node " + i + " on categorical key '" + f.encoding.columns[column] +
            "' must hold 'categories' (distinct categories of the key), 'left' and 'right'");
        }
      } else if (!holds(node, "column,left,right,threshold") || typeof node.threshold !== "number" || !Number.isFinite(node.threshold)) {
        throw new SpecError("function: decision-tree node " + i + " on a numeric key must hold a finite 'threshold', 'left' and 'right'");
      }
      for (const key of ["left", "right"]) { // function.py _index
        const child = node[key];
        if (!Number.isInteger(child) || child <= i || child >= nodes.length) {
          throw new SpecError("function: tree node '" + key + "' must be an integer in " + (i + 1) + ".." + (nodes.length - 1));
        }
        parents[child] += 1;
      }
    });
    if (parents.slice(1).some((count) => count !== 1)) {
      throw new SpecError("function: decision-tree nodes must form one tree (each node but 0 the child of one node)");
    }
    leaves.sort((a, b) => a - b);
    if (leaves.length !== cells || leaves.some((cell, j) => cell !== j)) {
      throw new SpecError("function: the decision-tree leaves must give the cells 0.." + (cells - 1) + ", each once");
    }
  }

  // The parts of function.py function_from_json that the rule relies on.
  function checkFunction(f) {
    if (f === null || typeof f !== "object" || f.probanon_function !== 1) throw new SpecError("not a probanon function");
    if (!KINDS.includes(f.kind)) {
      throw new SpecError("function: kind " + JSON.stringify(f.kind) + " cannot be applied here");
    }
    const std = field(f, "standardization", "function ");
    const mean = finiteArray(field(std, "mean", "standardization "), "mean");
    const width = mean.length;
    const scale = finiteArray(field(std, "scale", "standardization "), "scale", width);
    if (width === 0 || scale.some((s) => !(s > 0))) throw new SpecError("function: bad standardization parameters");
    const sizes = field(f, "sizes", "function ");
    if (!Array.isArray(sizes) || sizes.some((s) => !Number.isInteger(s) || s < 0)) {
      throw new SpecError("function: 'sizes' must be non-negative integers");
    }
    let keys = width;
    if (own(f, "encoding")) {
      if (f.kind !== "decision-tree") throw new SpecError("function: categorical keys are applied here only by a decision tree");
      checkEncoding(f.encoding, width);
      keys = f.encoding.columns.length;
      mixedCentroids(f, field(f, "centroids", "function "), sizes.length);
    } else matrix(field(f, "centroids", "function "), "centroids", sizes.length, width);
    const rule = field(f, "rule", "function ");
    if (!isObject(rule)) throw new SpecError("function: missing 'rule'");
    if (f.kind === "decision-tree") checkTree(f, rule, keys, sizes.length);
    else if (f.kind === "ordered-balls") {
      const G = sizes.length - 1;
      finiteArray(field(rule, "radius2", "rule "), "radius2", G);
      matrix(field(rule, "references", "rule "), "references", G, width);
      matrix(field(rule, "boundary", "rule "), "boundary", G, width);
    } else {
      finiteArray(field(rule, "offsets", "rule "), "offsets", sizes.length);
      matrix(field(rule, "centers", "rule "), "centers", sizes.length, width);
    }
    if (f.columns !== undefined && f.columns !== null && (!Array.isArray(f.columns) || f.columns.length !== keys)) {
      throw new SpecError("function: 'columns' must name every column");
    }
    return sizes;
  }

  // ------------------------------------------------------------------ participation models

  const SYMMETRY_RTOL = 1e-9; // participation.py SYMMETRY_RTOL

  // The smallest eigenvalue of the symmetric matrix whose lower triangle is a (numpy's eigvalsh
  // reads the lower triangle), by cyclic Jacobi rotations (Golub & Van Loan, Sec. 8.5).
  function minEigenvalue(a) {
    const n = a.length;
    const m = a.map((row, i) => row.map((_, j) => (i >= j ? a[i][j] : a[j][i])));
    const total = m.reduce((s, row) => row.reduce((t, v) => t + v * v, s), 0.0);
    for (let sweep = 0; sweep < 60; sweep++) {
      let off = 0.0;
      for (let i = 0; i < n; i++) for (let j = 0; j < i; j++) off += m[i][j] * m[i][j];
      if (!(off > 1e-32 * total)) break;
      for (let p = 0; p < n; p++) {
        for (let q = p + 1; q < n; q++) {
          if (m[p][q] === 0.0) continue;
          const theta = (m[q][q] - m[p][p]) / (2.0 * m[p][q]);
          const t = (theta < 0 ? -1.0 : 1.0) / (Math.abs(theta) + Math.sqrt(theta * theta + 1.0));
          const c = 1.0 / Math.sqrt(t * t + 1.0), s = t * c;
          for (let k = 0; k < n; k++) { // m <- m J, then J' m
            const kp = m[k][p], kq = m[k][q];
            m[k][p] = c * kp - s * kq;
            m[k][q] = s * kp + c * kq;
          }
          for (let k = 0; k < n; k++) {
            const pk = m[p][k], qk = m[q][k];
            m[p][k] = c * pk - s * qk;
            m[q][k] = s * pk + c * qk;
          }
        }
      }
    }
    return Math.min(...m.map((row, i) => row[i]));
  }

  // participation.py check_model_spec: a logistic model's fields (the browser has no frame to
  // recompute the pi_j from; the cells' lists are checked by Algorithm A as for "per-record").
  function checkLogistic(model) {
    const get = (key) => field(model, key, "participation ");
    const finite = (v, what) => {
      if (typeof v !== "number" || !Number.isFinite(v)) throw new SpecError("specification: participation " + what + " must be a finite number, got " + JSON.stringify(v));
      return v;
    };
    const covariates = get("covariates");
    if (!Array.isArray(covariates) || covariates.length === 0 || !covariates.every((c) => typeof c === "string" && c !== "") ||
        new Set(covariates).size !== covariates.length) {
      throw new SpecError("specification: participation covariates must be distinct column names, got " + JSON.stringify(covariates));
    }
    const coefficients = get("coefficients");
    if (!Array.isArray(coefficients) || coefficients.length !== covariates.length) {
      throw new SpecError("specification: " + covariates.length + " participation covariates need as many coefficients, got " + JSON.stringify(coefficients));
    }
    finite(get("intercept"), "intercept");
    coefficients.forEach((b) => finite(b, "coefficient"));
    const responded = get("responded");
    if (typeof responded !== "string" || responded === "") {
      throw new SpecError("specification: participation responded must be a column name, got " + JSON.stringify(responded));
    }
    const records = get("wave_records");
    if (!Number.isInteger(records) || records < 1) {
      throw new SpecError("specification: participation wave_records must be an integer >= 1, got " + JSON.stringify(records));
    }
    const optimism = get("optimism");
    if (typeof optimism !== "number" || !(Number.isFinite(optimism) && optimism >= 0)) {
      throw new SpecError("optimism (how much too high the model may be) must be a number >= 0, got " + JSON.stringify(optimism));
    }
    const lower = get("lower_bound");
    if (lower === null) return;
    if (!isObject(lower)) throw new SpecError("specification: participation lower_bound must be null or an object, got " + JSON.stringify(lower));
    const confidence = field(lower, "confidence", "participation ");
    if (typeof confidence !== "number" || !(confidence > 0.5 && confidence < 1.0)) {
      throw new SpecError("confidence of the participation lower bound must be in (0.5, 1), got " + JSON.stringify(confidence));
    }
    const rows = field(lower, "covariance", "participation ");
    const p = covariates.length + 1;
    if (!Array.isArray(rows) || rows.length !== p || !rows.every((r) => Array.isArray(r) && r.length === p)) {
      throw new SpecError("specification: participation covariance must be " + p + " x " + p + " numbers");
    }
    rows.forEach((r) => r.forEach((v) => finite(v, "covariance")));
    const scale = Math.max(...rows.map((r) => Math.max(...r.map(Math.abs))), 2.2250738585072014e-308);
    const tol = SYMMETRY_RTOL * scale; // numpy allclose(c, c.T, rtol, atol): |a - b| <= atol + rtol |b|
    const symmetric = rows.every((r, i) => r.every((v, j) => Math.abs(v - rows[j][i]) <= tol + SYMMETRY_RTOL * Math.abs(rows[j][i])));
    if (!symmetric || minEigenvalue(rows) < -tol) {
      throw new SpecError("specification: participation covariance is not symmetric positive semi-definite");
    }
  }

  // math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-300)
  function isClose(a, b) {
    return a === b || Math.abs(a - b) <= Math.max(TOLERANCE * Math.max(Math.abs(a), Math.abs(b)), 1e-300);
  }

  function fmt(x) {
    return Number(x).toPrecision(6).replace(/\.?0+(e|$)/, "$1");
  }

  // spec.py _check_guarantee: the cells whose recomputed failure exceeds the risk, as problems.
  function checkGuarantee(spec) {
    if (spec === null || typeof spec !== "object" || spec.probanon_survey_spec !== VERSION) {
      throw new SpecError("not a probanon survey specification (version " + VERSION + ")");
    }
    const g = field(spec, "guarantee", "");
    const k = integer(field(g, "k", "guarantee "), "k");
    const risk = field(g, "risk", "guarantee ");
    if (typeof risk !== "number" || !(risk > 0 && risk < 1)) throw new SpecError("specification: risk must be in (0, 1), got " + risk);
    const model = field(g, "participation", "guarantee ");
    const kind = field(model, "model", "participation ");
    const records = integer(field(g, "records", "guarantee "), "records");
    if (records < 1 || records > MAX_RECORDS) throw new SpecError("specification: " + records + " records is out of range (1.." + MAX_RECORDS + ")");
    if (k < 1 || k > records) throw new SpecError("specification: k must be between 1 and the " + records + " records, got " + k);
    const cells = field(spec, "cells", "");
    const functionSizes = checkFunction(field(spec, "function", ""));
    if (!Array.isArray(cells) || cells.length !== functionSizes.length) throw new SpecError("specification: the cells do not match the function's cells");
    const sizes = cells.map((c, i) => integer(field(c, "size", "cell " + i + " "), "cell " + i + " size"));
    if (sizes.some((s, i) => s !== functionSizes[i])) throw new SpecError("specification: declared cell sizes differ from the function's");
    const total = sizes.reduce((a, b) => a + b, 0);
    if (total !== records || sizes.some((size) => size < 1)) {
      throw new SpecError("specification: the cell sizes add up to " + total + ", not to the " + records + " records declared");
    }
    let pi = null;
    if (kind === "constant") {
      pi = field(model, "pi", "participation ");
      if (typeof pi !== "number" || !(pi > 0 && pi <= 1)) throw new SpecError("specification: participation must be in (0, 1], got " + pi);
      const n = nMin(k, pi, risk);
      if (n === null) throw new SpecError("specification: no cell of up to " + MAX_CONSTANT_SEARCH + " records reaches the risk");
      if (field(g, "n_min", "guarantee ") !== n) throw new SpecError("specification: n_min is " + n + " for this guarantee, not " + g.n_min);
    } else if (kind === "logistic") {
      checkLogistic(model);
    } else if (kind !== "per-record") {
      throw new SpecError("specification: unknown participation model " + JSON.stringify(kind));
    }
    const failing = [];
    const bySize = new Map(); // constant pi: one computation per distinct size
    cells.forEach((cell, i) => {
      let recomputed;
      if (kind === "constant") {
        if (!bySize.has(sizes[i])) bySize.set(sizes[i], cellFailure(k, pi, sizes[i]).failure);
        recomputed = bySize.get(sizes[i]);
      } else { // per-record and logistic: the cell's pi_j
        const p = field(cell, "participation", "cell " + i + " ");
        if (!Array.isArray(p) || p.some((v) => typeof v !== "number" || !(v > 0 && v <= 1))) {
          throw new SpecError("cell " + i + ": participation must be probabilities in (0, 1]");
        }
        if (p.length !== sizes[i]) throw new SpecError("cell " + i + ": " + p.length + " participation values for " + sizes[i] + " records");
        recomputed = cellFailure(k, p).failure;
      }
      const stated = field(cell, "failure", "cell " + i + " ");
      if (typeof stated !== "number") throw new SpecError("cell " + i + ": failure must be a number, got " + JSON.stringify(stated));
      if (!isClose(recomputed, stated)) {
        throw new SpecError("cell " + i + ": declared failure " + fmt(stated) + " but " + sizes[i] + " records give " + fmt(recomputed));
      }
      if (recomputed > risk) failing.push(i);
    });
    if (failing.length === 0) return [];
    const worst = failing.reduce((a, b) => (cells[b].failure > cells[a].failure ? b : a));
    const more = failing.length > 1 ? " (" + failing.length + " of " + cells.length + " cells exceed it)" : "";
    return ["the guarantee does not hold: cell " + worst + " of " + sizes[worst] + " records fails with probability " +
      fmt(cells[worst].failure) + " > the stated risk " + risk + more];
  }

  // "sha256:HEX" or the 64 hex digits alone, any case, blanks around ignored (spec.py parse_digest).
  function parseDigest(text) {
    const m = typeof text === "string" ? /^(?:sha256:)?([0-9a-f]{64})$/i.exec(text.trim()) : null;
    if (m === null) throw new Error("a digest is 'sha256:' followed by 64 hexadecimal digits, got " + JSON.stringify(text));
    return "sha256:" + m[1].toLowerCase();
  }

  async function sha256(bytes) {
    const hash = new Uint8Array(await root.crypto.subtle.digest("SHA-256", bytes));
    return "sha256:" + Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // Verify the canonical specification (the exact bytes whose SHA-256 is the digest: the spec
  // without its "digest" field, spec.py canonical_bytes) against the expected digest.
  // canonical: a string (encoded as UTF-8) or the bytes (ArrayBuffer / Uint8Array).
  // Returns {ok, problems, spec, digest}; ok only when the digest matches and every check passes.
  async function verifySpec(canonical, expectedDigest) {
    const bytes = typeof canonical === "string" ? new TextEncoder().encode(canonical) : new Uint8Array(canonical);
    const digest = await sha256(bytes);
    const problems = [];
    try {
      const expected = parseDigest(expectedDigest);
      if (expected !== digest) {
        problems.push("its digest " + digest + " differs from the expected " + expected + ": this is not the specification that was published");
      }
    } catch (e) {
      problems.push(e.message);
    }
    let spec = null;
    try {
      spec = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (e) {
      problems.push("specification: not UTF-8 JSON text (" + e.message + ")");
      return { ok: false, problems: problems, spec: null, digest: digest };
    }
    try {
      if (spec !== null && typeof spec === "object" && "digest" in spec) {
        throw new SpecError("specification: the canonical form must not contain the digest");
      }
      problems.push(...checkGuarantee(spec));
    } catch (e) {
      problems.push(e instanceof SpecError ? e.message : "specification: malformed value (" + e.message + ")");
    }
    return { ok: problems.length === 0, problems: problems, spec: spec, digest: digest };
  }

  // ------------------------------------------------------------------ the survey document (issue 40.4)
  // Everything the respondent is asked, in one canonical JSON document whose SHA-256 is the digest
  // printed in the invitation letters (probanon/service/document.py).

  const DOCUMENT_VERSION = 1; // document.py VERSION
  const AGREED = ["title", "answers", "questions", "opens", "release", "frame", "open", "issuer", "receipt_key"]; // document.py AGREED

  // JSON values equal as Python compares them after json.loads: objects by their keys, in any order.
  function sameJSON(a, b) {
    if (a === b) return true;
    if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJSON(x, b[i]));
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJSON(a[k], b[k]));
  }

  // The survey document from the bytes served (/api/surveys/ID/document): {digest, document,
  // problems}; document is null when the bytes are not a well-formed document (document.py read).
  async function readDocument(data) {
    const bytes = new Uint8Array(data);
    const digest = await sha256(bytes);
    let document = null;
    try {
      document = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (e) {
      return { digest: digest, document: null, problems: ["the survey document is not JSON text"] };
    }
    const kinds = { title: "string", specification: "object", answers: "array", questions: "object", opens: "string",
      closes: "string", release: "object", frame: "number", open: "boolean", page: "object" };
    const problems = [];
    if (document === null || typeof document !== "object" || document.probanon_survey_document !== DOCUMENT_VERSION) {
      problems.push("not a probanon survey document of version " + DOCUMENT_VERSION);
    } else {
      for (const [key, kind] of Object.entries(kinds)) {
        const v = document[key];
        const ok = kind === "array" ? Array.isArray(v) : kind === "object" ? v !== null && typeof v === "object" && !Array.isArray(v) : typeof v === kind;
        if (!ok) problems.push("the survey document's '" + key + "' is missing or malformed");
      }
      if (!problems.length && typeof document.specification.digest !== "string") problems.push("the survey document names no specification digest");
    }
    return { digest: digest, document: problems.length ? null : document, problems: problems };
  }

  // What the survey's description (GET /api/surveys/ID) says otherwise than its document, whose
  // digest is `digest` (document.py contradictions); empty when they agree. A survey closed early
  // lists an earlier 'closes' than its document's, never a later one.
  function documentContradictions(description, document, digest) {
    const found = [];
    if (description.digest !== digest) {
      found.push("the survey is listed with digest " + description.digest + ", its document has " + digest);
    }
    for (const key of AGREED) {
      if (!sameJSON(description[key], document[key])) found.push("the survey's description gives another '" + key + "' than its document");
    }
    const closes = description.closes;
    if (typeof closes !== "string" || !(closes === document.closes || (description.status === "closed" && closes < document.closes))) {
      found.push("the survey's description gives another 'closes' than its document");
    }
    return found;
  }

  // A name without case, blanks or punctuation (answers.py bare): AGI, agi, A.G.I and a_g_i are one.
  function bareName(name) {
    return String(name).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
  }

  // The key (quasi-identifier) that `name` equals up to case, blanks or punctuation, or null.
  function sameAsKey(name, keys) {
    return (keys || []).find((key) => bareName(key) === bareName(name)) ?? null;
  }

  // ------------------------------------------------------------------ receipts (receipts.py, issue 40.10)

  // A number as Python's repr writes the float that Python's json.loads reads from
  // JSON.stringify(x): the shortest digits that read back as x (toExponential(), as repr), in
  // fixed notation when the decimal exponent lies in [-4, 16), else as d.ddde+XX.
  function pythonFloat(x) {
    if (!Number.isFinite(x)) throw new Error("not a finite number: " + x);
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    const [mantissa, exponentText] = x.toExponential().split("e");
    const e = Number(exponentText), sign = mantissa[0] === "-" ? "-" : "";
    const digits = mantissa.replace("-", "").replace(".", "");
    if (e < -4 || e >= 16) {
      return sign + digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "") + "e" + (e < 0 ? "-" : "+") +
        String(Math.abs(e)).padStart(2, "0");
    }
    if (e < 0) return sign + "0." + "0".repeat(-e - 1) + digits;
    return sign + digits.slice(0, e + 1).padEnd(e + 1, "0") + "." + (digits.slice(e + 1) || "0");
  }

  // A string as Python's json.dumps writes it (ensure_ascii: everything outside space..~ escaped,
  // \uXXXX in lower case, UTF-16 code units as Python's surrogate pairs).
  function pythonString(text) {
    const short = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
    let out = '"';
    for (let i = 0; i < text.length; i++) {
      const c = text[i], code = text.charCodeAt(i);
      out += short[c] ?? (code < 0x20 || code > 0x7e ? "\\u" + code.toString(16).padStart(4, "0") : c);
    }
    return out + '"';
  }

  // The canonical answers of a sent body (receipts.py): what the collector stores, i.e. Python's
  // json.dumps(json.loads(sent), sort_keys=True) of the answers object. A number whose JSON text
  // is an integer literal is read by Python as an int (its digits), any other as a float.
  function canonicalAnswers(answers) {
    const value = (v) => {
      if (typeof v === "number") {
        const text = JSON.stringify(v);
        return /^-?[0-9]+$/.test(text) ? text : pythonFloat(v);
      }
      if (typeof v === "string") return pythonString(v);
      if (v === null || typeof v === "boolean") return String(v);
      throw new Error("an answer is a number or a text");
    };
    const keys = Object.keys(answers).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)); // code units: names are ASCII
    return "{" + keys.map((k) => pythonString(k) + ": " + value(answers[k])).join(", ") + "}";
  }

  async function sha256Hex(text) {
    return (await sha256(new TextEncoder().encode(text))).slice(7);
  }

  // The canonical bytes of a stored row (receipts.py canonical_row): what a receipt signs.
  function receiptRow(surveyId, keyHash, cell, answersSha256) {
    return "probanon/1 row\nsurvey " + surveyId + "\nkey " + keyHash + "\ncell " + cell + "\nanswers " + answersSha256 + "\n";
  }

  function unb64url(text) {
    if (typeof text !== "string" || !/^[A-Za-z0-9_-]+$/.test(text) || text.length % 4 === 1) throw new Error("not base64url");
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }

  // The receipt of a stored submission checked on this device as receipts.py verify does: it
  // names exactly the body sent (survey, cell, SHA-256 of the canonical answers and of the
  // idempotency key, row digest) and its Ed25519 signature (WebCrypto) verifies with the survey
  // document's receipt_key. {verified: true} | {verified: false, problem} | {verified: null,
  // problem} when this browser has no Ed25519 (the receipt is then unverified, not refused).
  async function verifyReceipt(receiptKey, surveyId, body, receipt) {
    if (receipt === null || typeof receipt !== "object") return { verified: false, problem: "the collector sent no receipt" };
    const answersSha = await sha256Hex(canonicalAnswers(body.answers));
    const keySha = await sha256Hex(body.idempotency_key);
    const expected = { survey: Number(surveyId), cell: body.cell, answers_sha256: answersSha, key_sha256: keySha };
    for (const [name, value] of Object.entries(expected)) {
      if (receipt[name] !== value) return { verified: false, problem: "the receipt's " + name + " is not that of the answers sent" };
    }
    const message = new TextEncoder().encode(receiptRow(expected.survey, keySha, body.cell, answersSha));
    if (receipt.row_digest !== (await sha256(message)).slice(7)) {
      return { verified: false, problem: "the receipt's row digest is not that of the answers sent" };
    }
    let key, signature;
    try {
      signature = unb64url(receipt.signature);
      key = unb64url(receiptKey);
    } catch (e) {
      return { verified: false, problem: "the receipt key or the signature is malformed" };
    }
    try {
      key = await root.crypto.subtle.importKey("raw", key, { name: "Ed25519" }, false, ["verify"]);
    } catch (e) {
      if (e && e.name === "NotSupportedError") return { verified: null, problem: "this browser cannot check Ed25519 signatures" };
      return { verified: false, problem: "the survey's receipt key is malformed" };
    }
    const ok = await root.crypto.subtle.verify({ name: "Ed25519" }, key, signature, message);
    return ok ? { verified: true } :
      { verified: false, problem: "the receipt's signature does not verify with the survey's receipt key" };
  }

  root.ProbanonSurvey = Object.freeze({
    canonicalAnswers: canonicalAnswers,
    verifyReceipt: verifyReceipt,
    readDocument: readDocument,
    documentContradictions: documentContradictions,
    sameAsKey: sameAsKey,
    cellFailure: cellFailure,
    nMin: nMin,
    assignCell: assignCell,
    treeWalk: treeWalk,
    verifySpec: verifySpec,
    parseDigest: parseDigest,
  });
})(globalThis);
