// Interactive figures placed in lessons with "::: visual NAME" (see courses/visuals.py).
// Progressive enhancement: the server already rendered every figure with its numbers (SVG
// and tables, computed with NumPy). This script only unhides the controls and recomputes
// in the browser with the same arithmetic, so the two must agree to the last shown digit.
(function () {
  "use strict";

  // --- numbers: the same steps as courses/visuals.py ----------------------------------

  var formatters = {};

  // Fixed decimals in the page's language (0,867 in Turkish), no "-0", rounding half to
  // even like Python's format().
  function fmt(x, digits) {
    if (digits === undefined) digits = 3;
    if (x === -Infinity) return "−∞";
    if (x === Infinity) return "∞";
    if (Math.abs(x) < 0.5 * Math.pow(10, -digits)) x = 0;
    var key = String(digits);
    if (!formatters[key]) {
      formatters[key] = new Intl.NumberFormat(document.documentElement.lang || "tr", {
        minimumFractionDigits: digits, maximumFractionDigits: digits, useGrouping: false,
        roundingMode: "halfEven", signDisplay: "negative",
      });
    }
    return formatters[key].format(x);
  }

  // A number as a student types it: "1,5", "1.5", "-2", "−0,25", "1e-3". Anything else
  // (letters, "1.234,5", "1 000", an empty box) is NaN: the figure says so, it never guesses.
  var DECIMAL = /^[-+]?(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?$/;
  function parseDecimal(text) {
    var cleaned = text.trim().replace(/\u2212/g, "-");
    return DECIMAL.test(cleaned) ? Number(cleaned.replace(",", ".")) : NaN;
  }

  // A default value written back into a field, with the page's decimal mark (1,5 in Turkish).
  function inputText(x) {
    return String(x).replace(".", fmt(0.5, 1).charAt(1));
  }

  function fmtVector(v, digits) {
    return "(" + v.map(function (x) { return fmt(x, digits); }).join("; ") + ")";
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) { return values[name]; });
  }

  // Row softmax with the row maximum subtracted; -Infinity (masked) entries get 0.
  function softmax(row) {
    var max = Math.max.apply(null, row);
    var exps = row.map(function (s) { return Math.exp(s - max); });
    var sum = exps.reduce(function (a, b) { return a + b; }, 0);
    return exps.map(function (e) { return e / sum; });
  }

  function matmulT(A, B) { // A Bᵀ
    return A.map(function (a) {
      return B.map(function (b) { return a.reduce(function (s, x, k) { return s + x * b[k]; }, 0); });
    });
  }

  function matmul(A, B) {
    return A.map(function (a) {
      return B[0].map(function (_, j) { return a.reduce(function (s, x, k) { return s + x * B[k][j]; }, 0); });
    });
  }

  function attentionSteps(Q, K, V, causal) {
    var scores = matmulT(Q, K);
    var root = Math.sqrt(Q[0].length);
    var scaled = scores.map(function (row, i) {
      return row.map(function (s, j) { return causal && j > i ? -Infinity : s / root; });
    });
    var weights = scaled.map(softmax);
    return { scores: scores, scaled: scaled, weights: weights, output: matmul(weights, V) };
  }

  function argmax(xs) {
    var best = 0;
    xs.forEach(function (x, i) { if (x > xs[best]) best = i; });
    return best;
  }

  // --- shared behaviour -----------------------------------------------------------------

  function readData(figure) {
    var block = figure.querySelector("script.visual-data");
    return block ? JSON.parse(block.textContent) : {};
  }

  function reveal(figure) {
    figure.querySelectorAll("[data-js-only]").forEach(function (el) { el.hidden = false; });
    figure.classList.add("is-live");
  }

  function say(figure, text) {
    var readout = figure.querySelector("[data-readout]");
    if (readout && readout.textContent !== text) readout.textContent = text;
  }

  // Show one sentence's panel. The panels share one grid cell (visuals.css), so the figure
  // keeps the tallest one's height and switching never moves the page.
  function showPanel(figure, id) {
    var shown = null;
    figure.querySelectorAll("[data-panel]").forEach(function (panel) {
      var match = panel.getAttribute("data-panel") === id;
      if (match && panel.classList.contains("is-hidden")) {
        panel.classList.remove("is-entering");
        void panel.getBoundingClientRect(); // restart the entrance animation
        panel.classList.add("is-entering");
      }
      panel.classList.toggle("is-hidden", !match);
      if (match) shown = panel;
    });
    return shown;
  }

  function checkedSentence(figure) {
    var radio = figure.querySelector(".choice-group input:checked");
    return radio ? radio.value : null;
  }

  // --- heatmap ----------------------------------------------------------------------------

  function enhanceHeatmap(figure) {
    var data = readData(figure);
    var select = figure.querySelector("[data-focus-select]");
    reveal(figure);

    function sentence() {
      var id = checkedSentence(figure);
      return data.sentences.filter(function (s) { return s.id === id; })[0] || data.sentences[0];
    }

    function focus(row) {
      var s = sentence();
      var panel = figure.querySelector('[data-panel="' + s.id + '"]');
      var marker = panel.querySelector("[data-focus-row]");
      var label = panel.querySelector('text[data-row="' + row + '"]');
      marker.setAttribute("y", Number(label.getAttribute("y")) - marker.getAttribute("height") / 2);
      panel.querySelectorAll("text[data-row], tr[data-row]").forEach(function (el) {
        el.classList.toggle("is-focus", el.getAttribute("data-row") === String(row));
      });
      panel.querySelector("svg").setAttribute("aria-label", s.labels[row]);
      say(figure, s.readouts[row]);
    }

    function switchSentence() {
      var s = sentence();
      showPanel(figure, s.id);
      select.textContent = "";
      s.tokens.forEach(function (token, i) {
        var option = document.createElement("option");
        option.value = String(i);
        option.textContent = token;
        option.selected = i === s.focus;
        select.appendChild(option);
      });
      focus(s.focus);
    }

    figure.querySelectorAll(".choice-group input").forEach(function (radio) {
      radio.addEventListener("change", switchSentence);
    });
    select.addEventListener("change", function () { focus(Number(select.value)); });
    switchSentence();
  }

  // --- rotate -----------------------------------------------------------------------------

  function enhanceRotate(figure) {
    var data = readData(figure);
    var range = figure.querySelector("[data-angle]");
    var output = figure.querySelector("[data-angle-output]");
    var query = figure.querySelector("[data-query]");
    var queryLabel = figure.querySelector("[data-query-label]");
    var rows = figure.querySelectorAll("[data-bar]");
    var c = data.center;
    reveal(figure);

    function weightsAt(angle) {
      var t = angle * Math.PI / 180;
      var q = [data.length * Math.cos(t), data.length * Math.sin(t)];
      var scores = data.keys.map(function (k) {
        var s = k[0] * q[0] + k[1] * q[1];
        return data.scaled ? s / Math.SQRT2 : s;
      });
      return { scores: scores, weights: softmax(scores) };
    }

    function update(angle) {
      var result = weightsAt(angle), w = result.weights, best = argmax(w);
      var t = angle * Math.PI / 180, r = 0.55 * data.length * data.unit;
      query.setAttribute("transform", "rotate(" + (-angle) + " " + c + " " + c + ")");
      queryLabel.setAttribute("x", (c + r * Math.cos(t) - 13 * Math.sin(t)).toFixed(1));
      queryLabel.setAttribute("y", (c - (r * Math.sin(t) + 13 * Math.cos(t))).toFixed(1));
      rows.forEach(function (row, j) {
        row.querySelector("[data-bar-fill]").setAttribute("width", (data.barWidth * w[j]).toFixed(1));
        row.querySelector("[data-weight]").textContent = fmt(w[j]);
        row.querySelector("[data-score]").textContent = data.scorePrefix + fmt(result.scores[j]);
        row.classList.toggle("is-max", j === best);
      });
      output.textContent = angle + "°";
      range.setAttribute("aria-valuetext", angle + "°");
      figure.querySelector("[data-plane]").setAttribute("aria-label", fill(data.planeLabel, { angle: angle }));
      figure.querySelector("[data-bars]").setAttribute("aria-label", fill(data.barsLabel, {
        angle: angle,
        shares: data.labels.map(function (label, j) { return label + " " + fmt(w[j]); }).join(", "),
      }));
      say(figure, fill(data.readout, { angle: angle, label: data.labels[best], weight: fmt(w[best]) }));
    }

    range.addEventListener("input", function () { update(Number(range.value)); });
    figure.querySelectorAll("[data-turn]").forEach(function (button) {
      button.addEventListener("click", function () {
        var angle = (Number(range.value) + Number(button.getAttribute("data-turn")) + 360) % 360;
        range.value = String(angle);
        update(angle);
      });
    });
    update(Number(range.value));
  }

  // --- blend ------------------------------------------------------------------------------

  function enhanceBlend(figure) {
    reveal(figure);
    function switchSentence() {
      var panel = showPanel(figure, checkedSentence(figure));
      if (panel) say(figure, panel.getAttribute("data-readout-text"));
    }
    figure.querySelectorAll(".choice-group input").forEach(function (radio) {
      radio.addEventListener("change", switchSentence);
    });
    switchSentence();
    figure.querySelectorAll("[data-panel]").forEach(function (panel) { panel.classList.remove("is-entering"); });
  }

  // --- playground -------------------------------------------------------------------------

  function enhancePlayground(figure) {
    var data = readData(figure);
    var inputs = figure.querySelectorAll("input[data-matrix]");
    var causal = figure.querySelector("[data-causal]");
    reveal(figure);
    inputs.forEach(function (input) { input.readOnly = false; });

    function readMatrices() {
      var m = { Q: [], K: [], V: [] }, bad = null;
      inputs.forEach(function (input) {
        var i = Number(input.getAttribute("data-i")), j = Number(input.getAttribute("data-j"));
        var name = input.getAttribute("data-matrix");
        var value = parseDecimal(input.value);
        var ok = isFinite(value);
        input.setAttribute("aria-invalid", ok ? "false" : "true");
        if (!ok && !bad) bad = input;
        (m[name][i] = m[name][i] || [])[j] = value;
      });
      return bad ? { invalid: bad } : m;
    }

    function writeTable(key, matrix, heat) {
      figure.querySelectorAll('[data-result="' + key + '"] td[data-i]').forEach(function (cell) {
        var value = matrix[Number(cell.getAttribute("data-i"))][Number(cell.getAttribute("data-j"))];
        cell.textContent = fmt(value);
        cell.classList.toggle("masked", value === -Infinity);
        if (heat) {
          cell.className = cell.className.replace(/\bheat-\d+\b/g, "").trim();
          cell.classList.add("heat-" + Math.max(0, Math.min(10, Math.round(value * 10))));
        }
      });
    }

    function recompute(row) {
      var m = readMatrices();
      var error = figure.querySelector("[data-pg-error]");
      if (m.invalid) {
        error.textContent = fill(data.invalid, { name: m.invalid.previousElementSibling.textContent });
        error.hidden = false;
        figure.classList.add("is-stale"); // the tables still show the last numbers that could be read
        return;
      }
      error.hidden = true;
      figure.classList.remove("is-stale");
      var steps = attentionSteps(m.Q, m.K, m.V, causal.checked);
      writeTable("scores", steps.scores);
      writeTable("scaled", steps.scaled);
      writeTable("weights", steps.weights, true);
      writeTable("output", steps.output);
      var w = steps.weights[row], best = argmax(w);
      say(figure, fill(data.readout, {
        row: row + 1, col: best + 1, weight: fmt(w[best]), output: fmtVector(steps.output[row]),
      }));
    }

    figure.addEventListener("input", function (event) {
      var input = event.target;
      if (!input.matches("input[data-matrix]")) return;
      var row = input.getAttribute("data-matrix") === "Q" ? Number(input.getAttribute("data-i")) : 0;
      recompute(row);
    });
    causal.addEventListener("change", function () { recompute(0); });
    figure.querySelector("[data-reset]").addEventListener("click", function () {
      inputs.forEach(function (input) { input.value = inputText(Number(input.getAttribute("data-default"))); });
      causal.checked = data.defaults.causal;
      recompute(0);
    });
    recompute(0);
  }

  var enhancers = {
    heatmap: enhanceHeatmap, rotate: enhanceRotate, blend: enhanceBlend, playground: enhancePlayground,
  };

  document.querySelectorAll("figure[data-visual]").forEach(function (figure) {
    var enhance = enhancers[figure.getAttribute("data-visual")];
    if (enhance && !figure.classList.contains("is-live")) enhance(figure);
  });
})();
