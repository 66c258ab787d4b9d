// Code exercises: Tab in the editor, submit without reloading, and live grading status.
// Without this script the form posts, the page reloads and shows the same status.
(function () {
  "use strict";

  // Tab inserts four spaces; Esc releases the key so Tab can move focus again.
  document.querySelectorAll("[data-editor]").forEach(function (editor) {
    var trapTab = true;
    editor.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { trapTab = false; return; }
      if (event.key === "Tab" && trapTab && !event.shiftKey) {
        event.preventDefault();
        var start = editor.selectionStart, end = editor.selectionEnd;
        editor.setRangeText("    ", start, end, "end");
      }
    });
    editor.addEventListener("focus", function () { trapTab = true; });
  });

  function show(area, html) {
    area.innerHTML = html;
    var result = area.firstElementChild;
    return result;
  }

  // Each poll asks the server to wait for the verdict (?wait=1): while grading is quick it
  // answers the moment the verdict is in. A reply held to the end of that wait says so
  // (Dikkat-Waited) and the page asks again at once. A poll answered at once (the server is
  // busy, or expects the verdict later) is followed on a timer: shortly before the server
  // expects the verdict (poll_after_ms), and never sooner than the back-off from 0.5 s to
  // 3 s, so neither a long queue nor a slow server is asked every second.
  var EARLY_MS = 1000; // ask this much before the expected verdict: the server waits for it

  function waitUrl(url) {
    return url + (url.indexOf("?") < 0 ? "?" : "&") + "wait=1";
  }

  function untilExpected(data) {
    return Math.max(0, (data.poll_after_ms || 0) - EARLY_MS);
  }

  function poll(area, url, delay, backoff) {
    window.setTimeout(function () {
      fetch(waitUrl(url), { headers: { "X-Requested-With": "dikkat" }, credentials: "same-origin" })
        .then(function (response) {
          return response.json().then(function (data) {
            return { data: data, held: response.headers.get("Dikkat-Waited") === "1" };
          });
        })
        .then(function (reply) {
          var data = reply.data;
          var result = show(area, data.html);
          if (data.status === "done") {
            if (result) result.focus();
          } else if (reply.held) {
            poll(area, url, 0, backoff);
          } else {
            poll(area, url, Math.max(backoff, untilExpected(data)), Math.min(backoff * 1.3, 3000));
          }
        })
        .catch(function () { poll(area, url, 3000, 3000); });
    }, delay);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("[data-code-form]")) return;
    var item = form.closest("[data-exercise]");
    var area = item.querySelector("[data-result]");
    event.preventDefault();
    var data = new FormData(form);
    if (event.submitter && event.submitter.name) data.set(event.submitter.name, event.submitter.value);
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    fetch(form.action, {
      method: "POST", body: data, credentials: "same-origin",
      headers: { "X-Requested-With": "dikkat" },
    }).then(function (response) {
      return response.json().then(function (payload) { return { status: response.status, payload: payload }; });
    }).then(function (reply) {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      if (reply.payload.error) {
        area.innerHTML = "";
        var p = document.createElement("p");
        p.className = "feedback-error";
        p.setAttribute("role", "alert");
        p.textContent = reply.payload.error;
        area.appendChild(p);
        return;
      }
      show(area, reply.payload.html);
      if (reply.payload.status !== "done") poll(area, reply.payload.status_url, untilExpected(reply.payload), 500);
      else if (area.firstElementChild) area.firstElementChild.focus();
    }).catch(function () {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      form.submit();
    });
  });

  // A page that loaded while grading was pending keeps polling too.
  document.querySelectorAll("[data-exercise] [data-submission][data-status=queued], [data-exercise] [data-submission][data-status=running]").forEach(function (result) {
    var area = result.closest("[data-result]");
    poll(area, "/gonderim/" + result.dataset.submission + "/durum/", 0, 500);
  });
})();
