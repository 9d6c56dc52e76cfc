/* A scheduled drop's countdowns (templates/_drop_when.html): each <span data-countdown
   datetime> beside a time shows what is left (" (in 1:02:03)", in the visitor's
   language), once a second. At zero a join card (data-reload) asks the server again,
   which then offers the join; a waiting page in the pre-queue checks in a moment after
   the start, so its place shows at once.
   Without JavaScript the time alone is shown, in UTC. A poll's new part is counted at
   once (not up to a second later, blank meanwhile), and every page ticks at the turn
   of the clock's second, so two pages of one browser never show times a second apart. */
(function () {
  "use strict";
  var t = window.page.t;
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function left(seconds) {
    var h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    var days = Math.floor(h / 24);
    if (days >= 2) { return days + " d " + (h % 24) + " h"; }
    return (h ? h + ":" + pad(m) : m) + ":" + pad(s);
  }
  var fired = {};
  function tick() {
    var found = document.querySelectorAll("[data-countdown]");
    for (var i = 0; i < found.length; i++) {
      var el = found[i];
      var at = Date.parse(el.dataset.countdown);
      if (isNaN(at)) { continue; }
      var seconds = Math.ceil((at - Date.now()) / 1000);
      el.hidden = false;
      el.textContent = seconds > 0 ? t("countdown", { time: left(seconds) }) : "";
      if (seconds <= 0 && !fired[el.dataset.countdown]) {
        fired[el.dataset.countdown] = true;
        if (el.hasAttribute("data-reload")) {
          setTimeout(function () { location.reload(); }, 1000);
        } else {
          var status = document.getElementById("line-status");
          if (status && window.htmx) {
            setTimeout(function () { htmx.trigger(status, "retry"); }, 1500);
          }
        }
      }
    }
  }
  function everySecond() {
    tick();
    setTimeout(everySecond, 1000 - Date.now() % 1000 + 10);  // just past the next second
  }
  everySecond();
  document.addEventListener("htmx:afterSwap", tick);
})();
