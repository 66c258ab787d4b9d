// The exam's clock as the server computed it, counted down on the page. The server decides:
// at zero the page reloads and shows what the server says (answers after the deadline are refused).
(function () {
  "use strict";
  const timer = document.querySelector("[data-exam-timer]");
  if (!timer) return;
  const shown = timer.querySelector("[data-time-left]");
  const end = Date.now() + Number(timer.dataset.secondsLeft) * 1000;
  function tick() {
    const left = Math.max(0, Math.round((end - Date.now()) / 1000));
    const minutes = Math.floor(left / 60);
    const seconds = String(left % 60).padStart(2, "0");
    shown.textContent = minutes + ":" + seconds;
    if (left === 0) {
      window.location.reload();
      return;
    }
    window.setTimeout(tick, 1000);
  }
  tick();
})();
