// The lobby and the error pages: clock times in the visitor's own time zone, and the
// "line is full" page counting down its Retry-After and trying again by itself.
// Every page works without this file (UTC times, a "Try again now" link).
(function () {
  "use strict";

  // Every user-visible string of this file, from the page's catalogue (the JSON block
  // of base.html, in the visitor's language: webapp/i18n.py, js_strings).
  var CATALOGUE = {};
  try { CATALOGUE = JSON.parse(document.getElementById("js-strings").textContent); } catch (e) { /* keys */ }
  function t(key, values) {
    var text = CATALOGUE[key] === undefined ? key : CATALOGUE[key];
    return text.replace(/%\((\w+)\)s/g, function (whole, name) {
      return values && values[name] !== undefined ? String(values[name]) : whole;
    });
  }
  var LANG = document.documentElement.lang || undefined;
  var STRINGS = {
    retryIn: function (s) { return t(s === 1 ? "retryIn_one" : "retryIn_other", { num: s }); },
    retrying: t("retrying"),
    tryNow: t("tryNow"),
  };

  function localTimes(root) {
    var found = root.querySelectorAll("time[data-local-time]");
    for (var i = 0; i < found.length; i++) {
      var when = new Date(found[i].getAttribute("datetime"));
      if (isNaN(when.getTime())) continue;
      var sameDay = when.toDateString() === new Date().toDateString();
      var options = sameDay
        ? { hour: "2-digit", minute: "2-digit", timeZoneName: "short" }
        : { weekday: "short", day: "numeric", month: "long", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
      found[i].textContent = new Intl.DateTimeFormat(LANG, options).format(when);
    }
  }

  function countdown() {
    var box = document.querySelector("[data-retry-after]");
    if (!box) return;
    var left = Math.max(parseInt(box.getAttribute("data-retry-after"), 10) || 5, 1);
    var url = box.getAttribute("data-retry-url");
    var text = document.createElement("span");
    var link = document.createElement("a");
    link.href = url;
    link.textContent = STRINGS.tryNow;
    box.textContent = "";
    box.appendChild(text);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(link);
    box.setAttribute("role", "timer");
    function tick() {
      if (left <= 0) {
        text.textContent = STRINGS.retrying;
        window.location.assign(url);
        return;
      }
      text.textContent = STRINGS.retryIn(left);
      left -= 1;
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  function start() {
    localTimes(document);
    countdown();
    document.body.addEventListener("htmx:afterSwap", function (event) {
      localTimes(event.target.parentNode || document);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
