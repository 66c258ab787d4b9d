// Self-test questions: answer without a page reload, and drag-and-drop for matching.
// Progressive enhancement only: without this script the same forms post and redirect.
(function () {
  "use strict";

  function enhance(root) {
    root.querySelectorAll("[data-matching]").forEach(enhanceMatching);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("[data-answer-form]")) return;
    var item = form.closest("[data-question]");
    if (!item) return;
    event.preventDefault();
    // Before the buttons are disabled: a disabled button's name would not be sent.
    var body = new FormData(form, event.submitter); // the pressed button counts ("cancel")
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    item.setAttribute("aria-busy", "true");
    fetch(form.action, {
      method: "POST",
      body: body,
      headers: { "X-Requested-With": "dikkat" },
      credentials: "same-origin",
    }).then(function (response) {
      return response.text().then(function (html) {
        if (!html || response.status >= 500) throw new Error("server");
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("[data-question]");
        // Anything but the question's own fragment (a login page after the session
        // expired, a CSRF page) goes through a normal post, so nothing is lost silently.
        if (!fresh || fresh.id !== item.id) throw new Error("not a fragment");
        place(item, fresh, true);
      });
    }).catch(function () {
      // Fall back to a normal post: the server answers with a redirect to the lesson.
      item.removeAttribute("aria-busy");
      var pressed = event.submitter;
      if (pressed && pressed.name) {
        var field = document.createElement("input");
        field.type = "hidden";
        field.name = pressed.name;
        field.value = pressed.value;
        form.appendChild(field);
      }
      form.submit();
    });
  });

  // Put a fresh fragment in place of the old one; a queued answer (code blanks run in the
  // sandbox through the grading queue) is polled until its result is in. Focus moves to the
  // news only if the student is still at this question (or nowhere in particular).
  function place(item, fresh, takeFocus) {
    item.replaceWith(fresh);
    enhance(fresh);
    var pending = fresh.querySelector("[data-attempt-pending]");
    var target = pending || fresh.querySelector("[data-confirm]")
      || fresh.querySelector("[data-feedback], [role=alert], [data-solution]");
    if (target && takeFocus) { target.setAttribute("tabindex", "-1"); target.focus({ preventScroll: false }); }
    if (pending) follow(fresh, pending.dataset.statusUrl, 0, 500);
  }

  // The server holds a poll that asks it to (wait=1) until the result is in, briefly; a reply
  // held to the end of that wait says so (Dikkat-Waited): ask again at once. Else back off.
  function follow(item, url, delay, backoff) {
    window.setTimeout(function () {
      var held = false;
      fetch(url + (url.indexOf("?") < 0 ? "?" : "&") + "wait=1", { headers: { "X-Requested-With": "dikkat" }, credentials: "same-origin" })
        .then(function (response) {
          // A login page (session over) or a 404: stop; the page shows the state on reload.
          if (!response.ok || response.redirected) throw new Error("stop");
          held = response.headers.get("Dikkat-Waited") === "1";
          return response.json();
        })
        .then(function (data) {
          if (data.status === "queued" || data.status === "running") {
            if (held) follow(item, url, 0, backoff);
            else follow(item, url, backoff, Math.min(backoff * 1.3, 3000));
            return;
          }
          var holder = document.createElement("div");
          holder.innerHTML = data.html || "";
          var fresh = holder.querySelector("[data-question]");
          if (!fresh || fresh.id !== item.id) return;
          var here = document.activeElement;
          place(item, fresh, !here || here === document.body || item.contains(here));
        })
        .catch(function (error) { if (error.message !== "stop") follow(item, url, 3000, 3000); });
    }, delay);
  }

  document.querySelectorAll("[data-question] [data-attempt-pending]").forEach(function (pending) {
    follow(pending.closest("[data-question]"), pending.dataset.statusUrl, 0, 500);
  });

  // Matching: drag a right-hand chip onto a left row, or tap a chip and then a row (touch
  // screens, and a mouse too). Both only set the row's <select>, which stays usable by
  // keyboard and is what the form sends. Pointer events, so a finger works like a mouse.
  function enhanceMatching(fieldset) {
    if (fieldset.dataset.enhanced) return;
    var chips = fieldset.querySelector("template[data-chips]");
    if (!chips) return;
    fieldset.dataset.enhanced = "1";
    var tray = document.createElement("div");
    tray.className = "chip-tray";
    tray.setAttribute("aria-hidden", "true"); // the selects are the accessible path
    tray.appendChild(chips.content.cloneNode(true));
    fieldset.insertBefore(tray, chips);
    var help = fieldset.querySelector("[data-chip-help]");
    if (help) help.hidden = false;
    var picked = null;

    function pick(chip) {
      if (picked) picked.classList.remove("chip-picked");
      picked = chip === picked ? null : chip;
      if (picked) picked.classList.add("chip-picked");
      fieldset.classList.toggle("chip-picking", picked !== null);
    }

    function rowAt(x, y) {
      var under = document.elementFromPoint(x, y);
      var row = under && under.closest(".matching-row");
      return row && fieldset.contains(row) ? row : null;
    }

    function put(row, value) {
      var select = row.querySelector("[data-pair-select]");
      if (!Array.prototype.some.call(select.options, function (o) { return o.value === value; })) return;
      select.value = value;
      select.dispatchEvent(new Event("change", { bubbles: true }));
    }

    tray.querySelectorAll(".chip").forEach(function (chip) {
      chip.addEventListener("pointerdown", function (event) {
        if (event.button !== 0) return;
        event.preventDefault(); // no text selection while dragging
        chip.setPointerCapture(event.pointerId);
        var startX = event.clientX, startY = event.clientY, ghost = null, over = null;
        function move(e) {
          if (!ghost && Math.abs(e.clientX - startX) + Math.abs(e.clientY - startY) < 8) return;
          if (!ghost) {
            ghost = chip.cloneNode(true);
            ghost.classList.add("chip-ghost");
            document.body.appendChild(ghost);
          }
          ghost.style.left = e.clientX + "px";
          ghost.style.top = e.clientY + "px";
          var row = rowAt(e.clientX, e.clientY);
          if (row === over) return;
          if (over) over.classList.remove("drop-target");
          over = row;
          if (over) over.classList.add("drop-target");
        }
        function end(e) {
          chip.removeEventListener("pointermove", move);
          chip.removeEventListener("pointerup", end);
          chip.removeEventListener("pointercancel", end);
          if (over) over.classList.remove("drop-target");
          if (ghost) {
            ghost.remove();
            if (e.type === "pointerup" && over) put(over, chip.dataset.value);
          } else if (e.type === "pointerup") {
            pick(chip); // a tap: the next row tapped gets this answer
          }
        }
        chip.addEventListener("pointermove", move);
        chip.addEventListener("pointerup", end);
        chip.addEventListener("pointercancel", end);
      });
    });

    fieldset.querySelectorAll(".matching-row").forEach(function (row) {
      row.addEventListener("click", function (event) {
        if (!picked || event.target.closest("select")) return;
        event.preventDefault();
        put(row, picked.dataset.value);
        pick(picked);
      });
    });
  }

  // A region showing work in the grading queue (an instructor's "test this item") reloads
  // itself from the page's own URL until the work is done; the "Refresh" link is for no-JS.
  function refreshRegion(region, delay) {
    window.setTimeout(function () {
      fetch(window.location.href, { headers: { "X-Requested-With": "dikkat" }, credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok || response.redirected) throw new Error("stop");
          return response.text();
        })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(region.id);
          if (!fresh) return;
          region.innerHTML = fresh.innerHTML; // the region stays: its aria-live announces the change
          liven(region, Math.min(delay * 1.3, 5000));
        })
        .catch(function (error) { if (error.message !== "stop") refreshRegion(region, 5000); });
    }, delay);
  }

  function liven(region, delay) {
    if (!region.querySelector("[data-live-pending]")) return;
    region.querySelectorAll("[data-live-note]").forEach(function (note) { note.hidden = false; });
    region.querySelectorAll("[data-live-refresh]").forEach(function (link) { link.hidden = true; });
    refreshRegion(region, delay);
  }

  document.querySelectorAll("[data-live-region]").forEach(function (region) { liven(region, 1000); });

  enhance(document);
})();
