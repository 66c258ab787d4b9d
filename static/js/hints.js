// Hint ladders: open the next hint in place (no reload, no jump), move focus to it, and read an
// exercise's hints again after a verdict (a failed submission may open the next step).
// Progressive enhancement only: without this script the form posts and the page comes back at the hint.
(function () {
  "use strict";

  // Keep the block on the page (its live region announces the new step) and take the fresh parts.
  function swap(block, html) {
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.querySelector("[data-hints]");
    if (!fresh || fresh.id !== block.id) return false;
    ["h4", "[data-hints-live]", "[data-hints-next]"].forEach(function (part) {
      var here = block.querySelector(part), there = fresh.querySelector(part);
      if (here && there) here.innerHTML = there.innerHTML;
    });
    return true;
  }

  function focusQuietly(element) {
    element.focus({ preventScroll: true });
    var box = element.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) element.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("[data-hint-form]")) return;
    var block = form.closest("[data-hints]");
    if (!block) return;
    event.preventDefault();
    var body = new FormData(form);
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    block.setAttribute("aria-busy", "true");
    fetch(form.action, {
      method: "POST",
      body: body,
      headers: { "X-Requested-With": "dikkat" },
      credentials: "same-origin",
    }).then(function (response) {
      return response.text().then(function (html) {
        if (response.status >= 500 || !swap(block, html)) throw new Error("not a block");
        block.removeAttribute("aria-busy");
        var error = block.querySelector("[data-hint-error]");
        var steps = block.querySelectorAll("[data-hint-step]");
        var target = error || steps[steps.length - 1];
        if (target) focusQuietly(target);
      });
    }).catch(function () {
      // A login page after the session expired, a CSRF page: a normal post, so nothing is lost.
      block.removeAttribute("aria-busy");
      form.submit();
    });
  });

  // An exercise's result box is filled in by exercise.js; once it holds a verdict, ask for the
  // hints block again (without moving focus: the student reads the verdict).
  document.querySelectorAll("[data-exercise]").forEach(function (item) {
    var block = item.querySelector("[data-hints][data-hints-refresh]");
    var area = item.querySelector("[data-result]");
    if (!block || !area || !window.MutationObserver) return;
    var seen = "";
    new MutationObserver(function () {
      var result = area.querySelector("[data-submission]");
      if (!result || result.dataset.status === "queued" || result.dataset.status === "running") return;
      if (result.dataset.submission === seen) return;
      seen = result.dataset.submission;
      fetch(block.dataset.hintsRefresh, { headers: { "X-Requested-With": "dikkat" }, credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok || response.redirected) throw new Error("stop");
          return response.text();
        })
        .then(function (html) { swap(block, html); })
        .catch(function () { /* the page shows the hints on its next load */ });
    }).observe(area, { childList: true, subtree: true });
  });
})();
