// The exam's clock as the server computed it, counted down on the page. The server decides:
// at zero the page stops taking answers and hands the exam in (the server has done so too, or
// does it now); answers posted after the deadline are refused there whatever this page does.
(function () {
  "use strict";
  const timer = document.querySelector("[data-exam-timer]");
  if (!timer) return;
  const shown = timer.querySelector("[data-time-left]");
  const finish = document.querySelector("[data-exam-finish]");
  const end = Date.now() + Number(timer.dataset.secondsLeft) * 1000;
  if (finish) {
    // Handing in early ends the exam for good: ask first (at zero the form is sent without asking).
    finish.addEventListener("submit", function (event) {
      if (!window.confirm(finish.dataset.confirm)) event.preventDefault();
    });
  }
  function timeUp() {
    document.querySelectorAll(".answer-form button, .code-form button").forEach(function (button) {
      button.disabled = true;
    });
    if (finish) finish.submit();
    else window.location.reload();
  }
  function tick() {
    const left = Math.max(0, Math.round((end - Date.now()) / 1000));
    const minutes = Math.floor(left / 60);
    const seconds = String(left % 60).padStart(2, "0");
    shown.textContent = minutes + ":" + seconds;
    // Read aloud once a minute and in the last ten seconds, not every second.
    timer.setAttribute("aria-live", left % 60 === 0 || left <= 10 ? "polite" : "off");
    if (left === 0) {
      timeUp();
      return;
    }
    window.setTimeout(tick, 1000);
  }
  tick();
})();
