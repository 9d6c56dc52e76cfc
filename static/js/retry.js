/* The "line is too long" page (templates/error.html), on top of shared.js: counts its
   Retry-After down and tries again by itself: a page it reloads, or a refused join it
   sends again (the same POST: the visitor asked to join). Without JavaScript the page
   has a "Try again now" link or button. */
(function () {
  "use strict";
  var t = window.page.t;
  var box = document.querySelector("[data-retry-after]");
  if (!box) { return; }
  var left = Math.max(parseInt(box.getAttribute("data-retry-after"), 10) || 5, 1);
  var form = box.tagName === "FORM" ? box : null;
  var url = box.getAttribute("data-retry-url");
  var text = document.createElement("span");
  var now = form ? box.querySelector("button") : document.createElement("a");
  if (!form) {
    now.href = url;
    now.textContent = t("tryNow");
  }
  var line = form ? box.querySelector("p") : box;
  line.textContent = "";
  line.append(text, " ", now);
  line.setAttribute("role", "timer");
  function tick() {
    if (left <= 0) {
      text.textContent = t("retrying");
      if (form) { form.submit(); } else { window.location.assign(url); }
      return;
    }
    text.textContent = window.page.tn("retryIn", left);
    left -= 1;
    window.setTimeout(tick, 1000);
  }
  tick();
})();
