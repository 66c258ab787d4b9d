// Matrix questions: arrow keys move between the grid's cells, and a matrix pasted into a cell
// or into the paste box is spread over the grid. Progressive enhancement only: without this
// script the grid and the paste box post as they are, and the server reads either one.
(function () {
  "use strict";
  if (window.dikkatMatrix) return; // the kind's template loads it once per matrix question
  window.dikkatMatrix = true;

  function cell(grid, row, col) {
    return grid.querySelector('input[data-row="' + row + '"][data-col="' + col + '"]');
  }

  // The rows and cells of a pasted text, as the server splits them (courses/kinds/matrix.py,
  // split_matrix_text); null when it is not a matrix. The numbers stay text: the server reads them.
  function splitMatrix(text, cols) {
    var body = text.trim().replace(/\u2212/g, "-");
    var call = /^(?:(?:np|numpy)\s*\.\s*)?(?:array|asarray|matrix)\s*\(([\s\S]*)\)$/.exec(body);
    if (call) body = call[1].trim().replace(/,\s*dtype\s*=[^\])]*$/, "").trim();
    var lines;
    if (/[\[\]]/.test(body)) {
      lines = [];
      body.replace(/\[([^\[\]]*)\]/g, function (_whole, inner) { lines.push(inner); return ""; });
      if (!lines.length) return null;
      if (lines.length === 1) lines = lines[0].split(/[;\n]/);
    } else {
      lines = body.split(/[;\n]/);
    }
    var bracketed = body.indexOf("[") >= 0;
    var rows = lines.filter(function (line) { return line.trim(); }).map(function (line) {
      line = line.trim().replace(/^,+|,+$/g, "").trim();
      var spaced = /\s+,\s*|\s*,\s+/;
      if (spaced.test(line)) {
        return line.split(spaced).join(" ").split(/\s+/).filter(Boolean);
      }
      if (/\s/.test(line)) return line.split(/\s+/);
      if (line.indexOf(",") >= 0 && (bracketed || line.indexOf(".") >= 0 || line.split(",").length === cols)) {
        return line.split(",").filter(Boolean);
      }
      return [line];
    });
    return rows.length ? rows : null;
  }

  // Put ``rows`` into the grid from (row, col) on; false when they do not fit.
  function fill(grid, rows, row, col) {
    var width = Number(grid.dataset.cols), height = Number(grid.dataset.rows);
    if (row - 1 + rows.length > height) return false;
    for (var i = 0; i < rows.length; i++) {
      if (col - 1 + rows[i].length > width) return false;
    }
    rows.forEach(function (cells, i) {
      cells.forEach(function (text, j) { cell(grid, row + i, col + j).value = text; });
    });
    return true;
  }

  function say(grid, text) {
    var status = grid.querySelector("[data-matrix-status]");
    if (status) status.textContent = text;
  }

  document.addEventListener("paste", function (event) {
    var target = event.target;
    var grid = target.closest && target.closest("[data-matrix]");
    if (!grid || !event.clipboardData) return;
    var text = event.clipboardData.getData("text");
    var rows = splitMatrix(text, Number(grid.dataset.cols));
    if (!rows || (rows.length === 1 && rows[0].length === 1)) return; // one number: an ordinary paste
    if (target.matches("input.matrix-cell")) {
      // A whole matrix fills the grid; a part of one goes in from this cell on, as in a spreadsheet.
      var whole = rows.length === Number(grid.dataset.rows);
      var from = whole ? [1, 1] : [Number(target.dataset.row), Number(target.dataset.col)];
      if (fill(grid, rows, from[0], from[1])) {
        event.preventDefault();
        say(grid, grid.dataset.placed);
      }
    } else if (target.matches("[data-matrix-paste]") && !target.value.trim()) {
      if (rows.length === Number(grid.dataset.rows) && fill(grid, rows, 1, 1)) {
        event.preventDefault(); // it is in the grid now: the box stays empty, so the grid is read
        say(grid, grid.dataset.placed);
      }
    }
  });

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input.matrix-cell") || event.altKey || event.ctrlKey || event.metaKey) return;
    var grid = input.closest("[data-matrix]");
    var row = Number(input.dataset.row), col = Number(input.dataset.col);
    var atStart = input.selectionStart === 0 && input.selectionEnd === 0;
    var atEnd = input.selectionStart === input.value.length && input.selectionEnd === input.value.length;
    var next = null;
    if (event.key === "ArrowUp") next = cell(grid, row - 1, col);
    else if (event.key === "ArrowDown") next = cell(grid, row + 1, col);
    else if (event.key === "ArrowLeft" && atStart) next = cell(grid, row, col - 1);
    else if (event.key === "ArrowRight" && atEnd) next = cell(grid, row, col + 1);
    if (next) {
      event.preventDefault();
      next.focus();
      next.select();
    }
  });

  function enhance(root) {
    root.querySelectorAll("[data-matrix-keys]").forEach(function (note) { note.hidden = false; });
  }
  enhance(document);
  // Fragments placed after an answer (selftest.js) carry the note hidden again.
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      record.addedNodes.forEach(function (node) { if (node.querySelectorAll) enhance(node); });
    });
  }).observe(document.body, { childList: true, subtree: true });
})();
