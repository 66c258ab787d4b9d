// The lesson editor's live preview: a moment after the text stops changing, the server
// renders it with the import's own pipeline (POST studio:preview) and the preview beside the
// editor shows it with its problems by line. Without JavaScript the "Preview" button does the
// same through a normal form post.
(function () {
  "use strict";
  var textarea = document.querySelector("textarea[data-preview-url]");
  var section = document.querySelector(".studio-preview");
  if (!textarea || !section || !window.fetch) return;
  var form = textarea.form;
  var body = document.getElementById("preview-body");
  var problems = document.getElementById("preview-problems");
  var shown = textarea.value;
  var timer = null;
  var running = false;

  function lineText(line) {
    return (problems.dataset.lineLabel || "Line %s").replace("%s", line);
  }

  function render(data) {
    body.textContent = "";
    if (data.title) {
      var heading = document.createElement("h1");
      heading.className = "studio-preview-title";
      heading.textContent = data.title;
      body.appendChild(heading);
    }
    // The server's HTML went through the lesson cleaner (courses.rendering): as safe as a lesson page.
    body.insertAdjacentHTML("beforeend", data.html);
    problems.textContent = "";
    if (data.problems.length) {
      var list = document.createElement("ul");
      list.className = "problems form-errors";
      data.problems.forEach(function (p) {
        var item = document.createElement("li");
        item.textContent = lineText(p.line) + ": " + p.message;
        list.appendChild(item);
      });
      problems.appendChild(list);
    }
  }

  function refresh() {
    if (running) { schedule(); return; }
    var text = textarea.value;
    running = true;
    section.setAttribute("aria-busy", "true");
    var data = new FormData();
    data.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    data.append("path", textarea.dataset.path);
    data.append("text", text);
    fetch(textarea.dataset.previewUrl, { method: "POST", body: data, credentials: "same-origin", headers: { "X-Requested-With": "dikkat" } })
      .then(function (response) {
        if (!response.ok) throw new Error("preview " + response.status);
        return response.json();
      })
      .then(function (result) { shown = text; render(result); })
      .catch(function () { /* the "Preview" button still works */ })
      .finally(function () { running = false; section.removeAttribute("aria-busy"); });
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 400);
  }

  // The code editor writes its text back into the textarea without an event; look for changes.
  var last = textarea.value;
  setInterval(function () {
    if (textarea.value !== last) { last = textarea.value; schedule(); }
  }, 250);
  textarea.addEventListener("input", function () { last = textarea.value; schedule(); });
  if (textarea.value !== shown) schedule();
})();
