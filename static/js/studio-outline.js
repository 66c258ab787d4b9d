// The authoring outline: drag a lesson, or an item within its lesson, to a new place (native
// HTML5 drag and drop). The new order is sent to the same view the Up and Down buttons post
// to (studio:move, one list of names), then the page is loaded again to show the drafts it
// made. Without JavaScript, or by keyboard, the buttons do the same one step at a time.
(function () {
  "use strict";
  var lessons = document.querySelector(".studio-lessons[data-move-url]");
  if (!lessons || !window.fetch || !window.FormData) return;
  var status = document.getElementById("order-status");
  var dragged = null;

  function rows(list) {
    return Array.prototype.filter.call(list.children, function (child) { return child.tagName === "LI"; });
  }

  function send(list) {
    var data = new FormData();
    data.append("csrfmiddlewaretoken", lessons.dataset.csrf);
    data.append("order", rows(list).map(function (row) { return row.dataset.name; }).join(","));
    if (list.dataset.folder) data.append("folder", list.dataset.folder);
    fetch(lessons.dataset.moveUrl, { method: "POST", body: data, credentials: "same-origin", headers: { "X-Requested-With": "dikkat" } })
      .then(function (response) { return response.json(); })
      .then(function (result) {
        if (result.error && status) status.textContent = result.error;
        window.location.reload();
      })
      .catch(function () { window.location.reload(); });
  }

  function enable(list) {
    rows(list).forEach(function (row) {
      row.draggable = true;
      row.classList.add("draggable");
      row.addEventListener("dragstart", function (event) {
        event.stopPropagation();  // an item's drag is not its lesson's
        dragged = row;
        row.classList.add("dragging");
        event.dataTransfer.effectAllowed = "move";
        event.dataTransfer.setData("text/plain", row.dataset.name);
      });
      row.addEventListener("dragend", function () {
        row.classList.remove("dragging");
        dragged = null;
      });
    });
    list.addEventListener("dragover", function (event) {
      if (!dragged || dragged.parentElement !== list) return;
      event.preventDefault();
      event.stopPropagation();
      var over = event.target.closest && event.target.closest("li");
      while (over && over.parentElement !== list) over = over.parentElement.closest("li");
      if (!over || over === dragged) return;
      var box = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY > box.top + box.height / 2 ? over.nextSibling : over);
    });
    list.addEventListener("drop", function (event) {
      if (!dragged || dragged.parentElement !== list) return;
      event.preventDefault();
      event.stopPropagation();
      send(list);
    });
  }

  enable(lessons);
  document.querySelectorAll(".studio-items[data-folder]").forEach(enable);
})();
