/* What every visitor page's script shares; each page loads its own file after this one
   (waiting.js, room.js and chat.js, retry.js, entry.js). Plain files, no build step,
   no inline script: the Content-Security-Policy forbids them. Everything works without
   JavaScript as far as it can.
   - window.page: the words (the js-strings block of base.html, in the visitor's
     language), the figures the server shares (the js-config block), the visitor's
     locale for clock times and numbers;
   - clock times (<time data-local-time>) in the visitor's own time zone and locale;
   - a link with data-dialog opens that <dialog> instead (leaving asks once; without
     JavaScript the link leads to the same question on a page of its own);
   - a page restored from the back/forward cache asks the server again. */
(function () {
  "use strict";
  var root = document.documentElement;

  function byId(id) { return document.getElementById(id); }

  function block(id) {
    try { return JSON.parse(byId(id).textContent); } catch (e) { return {}; }
  }
  var STRINGS = block("js-strings");  // English keys stand in if it cannot be read
  var CONFIG = block("js-config");
  // The visitor's locale as the server chose it (en-GB: 19:09; en-US: 7:09 PM), so the
  // scripts write times as the pages do (webapp/web/i18n.py, clock_locale).
  var LOCALE = root.dataset.locale || root.lang || undefined;

  // t("key", {name: value}) fills each %(name)s; tn("key", n) picks the form of n's plural
  // category in the page's language (Polish: one, few, many; Arabic: zero, one, two, few,
  // many, other; Japanese: other), each a key of its own (key_few), _other the fallback.
  var PLURALS = window.Intl && Intl.PluralRules ? new Intl.PluralRules(LOCALE) : null;
  function t(key, values) {
    var text = STRINGS[key] === undefined ? key : STRINGS[key];
    return text.replace(/%\((\w+)\)s/g, function (whole, name) {
      return values && values[name] !== undefined ? String(values[name]) : whole;
    });
  }
  function tn(key, n, values) {
    var filled = { num: number(n) };
    Object.keys(values || {}).forEach(function (name) { filled[name] = values[name]; });
    var form = key + "_" + (PLURALS ? PLURALS.select(n) : n === 1 ? "one" : "other");
    return t(STRINGS[form] === undefined ? key + "_other" : form, filled);
  }
  function number(n) { return n.toLocaleString(LOCALE); }
  // The hour as the locale's own short time writes it: 01:05 in Britain, 1:05 in Spain.
  var HOUR = (function () {
    var parts = new Intl.DateTimeFormat(LOCALE, { timeStyle: "short" }).formatToParts(new Date(2000, 0, 1, 1, 5));
    var hour = parts.filter(function (part) { return part.type === "hour"; })[0];
    return hour && hour.value.length === 2 ? "2-digit" : "numeric";
  })();
  function clock(when) {
    return when.toLocaleTimeString(LOCALE, { hour: HOUR, minute: "2-digit" });
  }
  function config(key, fallback) { return CONFIG[key] === undefined ? fallback : CONFIG[key]; }

  function localTimes(scope) {
    var found = scope.querySelectorAll("time[data-local-time]");
    for (var i = 0; i < found.length; i++) {
      var when = new Date(found[i].getAttribute("datetime"));
      if (isNaN(when.getTime())) { continue; }
      var sameDay = when.toDateString() === new Date().toDateString();
      var options = sameDay
        ? { hour: HOUR, minute: "2-digit", timeZoneName: "short" }
        : { weekday: "short", day: "numeric", month: "long", hour: HOUR, minute: "2-digit", timeZoneName: "short" };
      found[i].textContent = new Intl.DateTimeFormat(LOCALE, options).format(when);
    }
  }

  // One listener for every data-dialog link, present now or swapped in later by htmx.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-dialog]");
    if (link) {
      var dialog = byId(link.dataset.dialog);
      if (!dialog || typeof dialog.showModal !== "function") { return; }  // the page then
      event.preventDefault();
      dialog.showModal();
      return;
    }
    var close = event.target.closest && event.target.closest("dialog [data-close]");
    if (close) {
      event.preventDefault();
      close.closest("dialog").close();
    }
  });

  // Back or Forward brought a page from memory: what it shows may have ended since (a
  // place left, a seat given up). Ask the server, which never joins on a visit.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && document.body.dataset.page) { location.reload(); }
  });

  function start() {
    localTimes(document);
    document.body.addEventListener("htmx:afterSwap", function (event) {
      localTimes(event.target.parentNode || document);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }

  window.page = {
    byId: byId, t: t, tn: tn, number: number, clock: clock, config: config,
    locale: LOCALE, room: document.body && document.body.dataset.room,
    // what people read: the room's title (its address when it has none)
    title: document.body && (document.body.dataset.roomTitle || document.body.dataset.room)
  };
})();
