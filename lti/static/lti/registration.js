// LTI Dynamic Registration: tell the LMS that opened this page (in its frame or as a window)
// that Dikkat is done, so it can close the page and show the new tool.
(function () {
  "use strict";
  var lms = window.opener || (window.parent !== window ? window.parent : null);
  function done() {
    if (lms) lms.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
  }
  var button = document.getElementById("lti-registration-done");
  if (button) {
    button.hidden = !lms;
    button.addEventListener("click", done);
  }
  var page = document.getElementById("lti-registration");
  if (page && page.dataset.registered === "yes") done();
})();
