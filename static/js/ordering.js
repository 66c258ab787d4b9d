// Ordering questions: reorder the steps by dragging (mouse, pen or finger) or by keyboard
// (Alt+↑/↓ on a step, or its buttons), and leave steps out. Progressive enhancement only: the
// page has a select per step without this script, and the script keeps those selects filled
// in, so the form the server reads is the same either way.
(function () {
  "use strict";
  if (window.dikkatOrdering) return; // the kind template loads this once per question
  window.dikkatOrdering = true;

  function say(template, parts) {
    return template.replace(/%\((\w+)\)s/g, function (_, name) { return parts[name]; });
  }

  function enhance(fieldset) {
    if (fieldset.dataset.enhanced) return;
    fieldset.dataset.enhanced = "1";
    var used = fieldset.querySelector("[data-used]");
    var unused = fieldset.querySelector("[data-unused]");
    var status = fieldset.querySelector("[data-status]");
    var help = fieldset.querySelector("[data-help]");
    var controls = fieldset.querySelector("template[data-controls]");
    var steps = Array.prototype.slice.call(used.querySelectorAll("[data-step]"));
    var form = fieldset.closest("form");
    var disabled = !!(form && form.querySelector("button[type=submit][disabled]"));

    function select(step) { return step.querySelector("[data-place]"); }
    function text(step) { return step.dataset.text; } // formulas written linearly: √(d_k)

    // The order the selects say (the last answer, or the shuffled order at first).
    var placed = steps.filter(function (s) { return select(s).value !== "0"; });
    placed.sort(function (a, b) { return select(a).value - select(b).value; });
    placed.forEach(function (s) { used.appendChild(s); });
    steps.forEach(function (s) { if (select(s).value === "0") unused.appendChild(s); });

    fieldset.classList.add("ordering-live");
    steps.forEach(function (step) {
      var number = document.createElement("span");
      number.className = "ordering-number";
      step.appendChild(controls.content.cloneNode(true));
      step.insertBefore(number, step.firstChild);
      step.insertBefore(step.querySelector(".ordering-grip"), number);
      step.tabIndex = 0;
      if (help) step.setAttribute("aria-describedby", help.id); // its keys; its name is its own text
      step.querySelectorAll("button").forEach(function (button) {
        button.setAttribute("aria-describedby", step.querySelector(".ordering-text").id);
        button.disabled = disabled;
      });
    });
    sync();

    // Write every place into the selects, number the used steps, label the toggles.
    function sync() {
      Array.prototype.forEach.call(used.children, function (step, index) {
        select(step).value = String(index + 1);
        step.querySelector(".ordering-number").textContent = (index + 1) + ".";
        step.querySelector("[data-toggle]").textContent = fieldset.dataset.leaveLabel;
      });
      Array.prototype.forEach.call(unused.children, function (step) {
        select(step).value = "0";
        step.querySelector(".ordering-number").textContent = "—";
        step.querySelector("[data-toggle]").textContent = fieldset.dataset.useLabel;
      });
    }

    function announce(step, stayed) {
      var place = Array.prototype.indexOf.call(used.children, step) + 1;
      var message = !place ? fieldset.dataset.leftOut : stayed ? fieldset.dataset.stays : fieldset.dataset.moved;
      status.textContent = say(message, { step: text(step), place: place });
    }

    // Moving a node takes the focus off it: give it back to what had it.
    function keepFocus(change) {
      var focused = document.activeElement;
      change();
      if (focused && focused !== document.activeElement && fieldset.contains(focused)) focused.focus();
    }

    function move(step, by) {
      var sibling = by < 0 ? step.previousElementSibling : step.nextElementSibling;
      if (sibling) keepFocus(function () { step.parentNode.insertBefore(step, by < 0 ? sibling : sibling.nextElementSibling); });
      sync();
      announce(step, !sibling);
    }

    function toggle(step) {
      keepFocus(function () { (step.parentNode === used ? unused : used).appendChild(step); });
      sync();
      announce(step, false);
    }

    fieldset.addEventListener("click", function (event) {
      var button = event.target.closest("button");
      var step = button && button.closest("[data-step]");
      if (!step || !fieldset.contains(step)) return;
      if (button.hasAttribute("data-move")) move(step, Number(button.dataset.move));
      else if (button.hasAttribute("data-toggle")) toggle(step);
    });

    fieldset.addEventListener("keydown", function (event) {
      var step = event.target.closest("[data-step]");
      if (!step || disabled || !event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      event.preventDefault();
      move(step, event.key === "ArrowUp" ? -1 : 1);
    });

    // Dragging: the step itself moves through the lists as the pointer goes; a finger drags
    // by the handle (elsewhere it scrolls the page), a mouse anywhere but on a button.
    fieldset.addEventListener("pointerdown", function (event) {
      var step = event.target.closest("[data-step]");
      if (!step || disabled || event.button !== 0 || event.target.closest("button, select")) return;
      if (event.pointerType !== "mouse" && !event.target.closest(".ordering-grip")) return;
      event.preventDefault(); // no text selection while dragging
      // Listened for on the document: moving the step in the page ends a pointer capture.
      var pointer = event.pointerId, startY = event.clientY, dragging = false;
      function over(e) {
        if (e.pointerId !== pointer) return;
        if (!dragging && Math.abs(e.clientY - startY) < 6) return;
        e.preventDefault();
        if (!dragging) { dragging = true; step.classList.add("ordering-dragging"); }
        // Near the top or bottom of the window the page scrolls: a long list fits no phone.
        if (e.clientY < 48) window.scrollBy(0, -24);
        else if (e.clientY > window.innerHeight - 48) window.scrollBy(0, 24);
        keepFocus(function () { drop(step, e.clientY); });
      }
      function end(e) {
        if (e.pointerId !== pointer) return;
        document.removeEventListener("pointermove", over);
        document.removeEventListener("pointerup", end);
        document.removeEventListener("pointercancel", end);
        if (!dragging) return;
        step.classList.remove("ordering-dragging");
        if (e.type === "pointerup") drop(step, e.clientY);
        sync();
        announce(step, false);
      }
      document.addEventListener("pointermove", over);
      document.addEventListener("pointerup", end);
      document.addEventListener("pointercancel", end);
    });

    // Put the step where the pointer is: in the list under it (or the nearer one), before the
    // first other step whose middle is below the pointer.
    function drop(step, y) {
      var box = unused.getBoundingClientRect();
      var list = y >= box.top - 8 ? unused : used;
      var before = null;
      Array.prototype.some.call(list.children, function (other) {
        if (other === step) return false;
        var rect = other.getBoundingClientRect();
        if (y < rect.top + rect.height / 2) { before = other; return true; }
        return false;
      });
      if (step.parentNode !== list || step.nextElementSibling !== before) list.insertBefore(step, before);
    }
  }

  function enhanceAll() {
    document.querySelectorAll("[data-ordering]:not([data-enhanced])").forEach(enhance);
  }

  enhanceAll();
  // The lesson's script puts a fresh question in place after each answer.
  new MutationObserver(enhanceAll).observe(document.body, { childList: true, subtree: true });
})();
