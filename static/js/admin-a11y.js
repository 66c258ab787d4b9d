// Two gaps in Django's admin that axe-core reports as serious, filled on every admin page:
// - a field in a tabular inline (a course's lessons) has no label, only its column header;
// - the filter_horizontal search icon (SelectFilter2.js) puts aria-label on a bare span.
(function () {
  "use strict";

  document.querySelectorAll(".inline-group .tabular table").forEach(function (table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    table.querySelectorAll("tbody tr.form-row:not(.empty-form)").forEach(function (row) {
      var original = row.querySelector("td.original p");
      var rowName = original && original.firstChild ? original.firstChild.textContent.trim() : "";
      // Django's template writes one header cell per row cell, the delete box's included.
      Array.prototype.forEach.call(row.cells, function (cell, index) {
        var control = cell.querySelector("input:not([type=hidden]), select, textarea");
        var header = headers[index];
        if (!control || !header || control.labels.length || control.hasAttribute("aria-label")) return;
        var name = header.textContent.trim();
        if (name) control.setAttribute("aria-label", rowName ? name + " " + rowName : name);
      });
    });
  });

  // SelectFilter2.js builds its widgets on window load; look after it has.
  window.addEventListener("load", function () {
    window.setTimeout(function () {
      document.querySelectorAll(".help-tooltip[aria-label]:not([role])").forEach(function (icon) {
        icon.setAttribute("role", "img");
      });
    });
  });
})();
