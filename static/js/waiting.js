/* The waiting page (templates/waiting.html, _line_status.html), on top of shared.js:
   the title shows the position; "updated 12 s ago" ages between polls and turns into
   a warning when a poll fails (tried again soon, backing off); the wait as a clock time
   in the visitor's own zone and locale; offers to notify or beep when it is your turn;
   then the "it's your turn" moment, and in. The poll itself is htmx (hx-get); it
   replaces #line-status only, never the controls beside it (#while-waiting). A poll
   of a waiting place names the shape the page shows (data-shape); while that holds,
   the answer is the figures alone (JSON), set here in place, and the next poll is
   asked for here (the "next" trigger). */
(function () {
  "use strict";
  var page = window.page, byId = page.byId, t = page.t, title = page.title;
  var TURN_MOMENT = page.config("turnMoment", 3);  // seconds "it's your turn" shows first
  var TURN_SPARE = 1.5;  // seconds of the hold the moment always leaves for going in

  var updatedAt = Date.now();
  var failing = false;
  var misses = 0;
  var turnTimer = null;
  var nextPoll = null;
  var SHAPE = "X-Line-Shape";  // webapp/views/shared/place.py SHAPE_HEADER
  var GIVE_UP = 10;  // seconds past the poll's delay an unanswered poll is lost after

  function twoDigits(n) { return (n < 10 ? "0" : "") + n; }
  function clockText(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    return Math.floor(seconds / 60) + ":" + twoDigits(seconds % 60);
  }
  function ago(seconds) {
    if (seconds < 5) { return t("justNow"); }
    if (seconds < 60) { return t("secondsAgo", { n: seconds }); }
    return t("minutesAgo", { n: Math.floor(seconds / 60) });
  }

  // An optional beep when it is your turn: the visitor turns it on (a click lets the
  // page play sound), and the choice is remembered in this browser.
  var audio = null;
  function soundWanted() {
    try { return localStorage.getItem("turn-sound") === "1"; } catch (e) { return false; }
  }
  function audioReady() {
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!audio && Context) { audio = new Context(); }
    if (audio && audio.state === "suspended") { audio.resume(); }
  }
  function beep() {
    if (!audio || !soundWanted()) { return; }
    [0, 0.35].forEach(function (at) {
      var tone = audio.createOscillator(), gain = audio.createGain();
      tone.frequency.value = 880;
      gain.gain.value = 0.15;
      tone.connect(gain);
      gain.connect(audio.destination);
      tone.start(audio.currentTime + at);
      tone.stop(audio.currentTime + at + 0.25);
    });
  }
  function notify(heading, text) {
    if (!("Notification" in window) || Notification.permission !== "granted") { return; }
    try { new Notification(heading, { body: text }); }
    catch (e) { /* some browsers only notify from a service worker */ }
  }
  if (soundWanted()) {  // a sound needs a gesture first: the first click or key gives it
    document.addEventListener("pointerdown", audioReady, { once: true });
    document.addEventListener("keydown", audioReady, { once: true });
  }

  // The controls outside the polled part (_while_waiting.html): set up once.
  function offers(aside) {
    var offer = aside.querySelector(".notify-offer");
    if (offer && "Notification" in window && Notification.permission === "default") {
      offer.hidden = false;
      byId("notify").addEventListener("click", function () {
        Notification.requestPermission().then(function () { offer.hidden = true; });
      });
    }
    // (no id on it: htmx would carry a screenshot tool's style="" over to the new one)
    var sound = aside.querySelector(".sound-offer input");
    if (sound && (window.AudioContext || window.webkitAudioContext)) {
      sound.closest(".sound-offer").hidden = false;
      sound.checked = soundWanted();
      sound.addEventListener("change", function () {
        try { localStorage.setItem("turn-sound", sound.checked ? "1" : "0"); } catch (e) { /* private mode */ }
        if (sound.checked) { audioReady(); }
      });
    }
  }

  // "Updated 12 s ago" ages between polls; a failing poll turns it into a warning.
  function tick() {
    var live = document.querySelector("#line-status .live");
    if (!live) { return; }
    var age = Math.round((Date.now() - updatedAt) / 1000);
    var text = live.querySelector(".updated");
    live.dataset.state = failing ? "reconnecting" : "live";
    if (failing) {
      text.textContent = t("lost", { age: ago(age) });
    } else if (age < 5) {
      text.textContent = t("updatedNow");
    } else if (age < 60) {
      text.textContent = t("updatedAgo", { n: age });
    } else {
      text.textContent = t("updatedMinutes", { n: Math.floor(age / 60) });
    }
  }
  setInterval(tick, 1000);

  // A lost poll leaves the old status on screen: say so, and ask again soon (backing
  // off, never slower than half the usual pace): the place is kept while the service
  // is away, as long as this page keeps asking.
  function stale() {
    var status = byId("line-status");
    var announce = byId("announce");
    if (!failing && announce) { announce.textContent = t("lostSaid"); }  // said once
    failing = true;
    tick();
    var polled = status && (status.dataset.state === "waiting" || status.dataset.state === "prequeue");
    if (!polled) { return; }
    misses += 1;
    var cap = Math.min(5000, 500 * Number(status.dataset.poll || 10));
    var delay = Math.min(cap, 1000 * Math.pow(2, misses - 1)) * (0.5 + Math.random() / 2);
    setTimeout(function () { htmx.trigger(status, "retry"); }, delay);
  }

  // A seat is free: say so (title, sound, notification), then go in after a visible
  // moment, or at a click. A hidden tab waits for the visitor, showing the time the
  // seat is held; when that runs out, the page asks the server what became of it.
  // The moment never eats the hold: a poll made just before an offer runs out sees
  // little of it left, so the moment keeps at least half of what is left, and
  // TURN_SPARE seconds, for the way in (a slow answer, the room's page claiming it).
  function momentFor(remaining) {
    var most = Math.min(remaining / 2, remaining - TURN_SPARE);
    return Math.max(0, Math.min(TURN_MOMENT, Math.floor(most)));
  }

  function yourTurn(status) {
    var left = Number(status.dataset.left || 0);
    var started = Date.now();
    var moment = momentFor(left);
    var go = byId("turn-go"), held = byId("turn-left");
    document.title = t("turnTitle", { room: title });
    beep();
    if (document.hidden) { notify(t("turnNotify"), t("turnNotifyBody", { room: title })); }
    go.hidden = false;
    function step() {
      var remaining = left - (Date.now() - started) / 1000;
      if (remaining <= 0) {
        htmx.ajax("GET", status.dataset.line, { target: "#line-status", swap: "outerHTML" });
        return;
      }
      held.textContent = clockText(remaining);
      if (document.hidden) {
        moment = momentFor(remaining);  // it starts over when the visitor is back
        go.textContent = t("turnHidden");
      } else if (moment <= 0) {
        location.assign(status.dataset.go);
        return;
      } else {
        go.textContent = t("turnGo", { n: moment });
        moment -= 1;
      }
      turnTimer = setTimeout(step, 1000);
    }
    step();
  }

  // What the visitor uses while waiting shows in the states it serves: all of it
  // while waiting, the parts that need a place in line not in a drop's pre-queue;
  // it goes once the turn or the end has come (neither ever waits again).
  function asideFor(state) {
    var aside = byId("while-waiting");
    if (!aside) { return; }
    if (state !== "waiting" && state !== "prequeue") { aside.remove(); return; }
    aside.querySelectorAll("[data-while]").forEach(function (part) {
      part.hidden = part.dataset.while !== state;
    });
  }

  function setup() {
    var status = byId("line-status");
    clearTimeout(turnTimer);
    clearTimeout(nextPoll);
    if (!status) { return; }
    var state = status.dataset.state;
    asideFor(state);
    if (state === "waiting" || state === "prequeue") {  // a poll's answer: fresh
      updatedAt = Date.now();
      failing = false;
      misses = 0;
      tick();
    }
    if (state === "waiting") {
      document.title = status.dataset.position  // none under random order: a draw
        ? t("inLine", { position: status.dataset.position, room: title })
        : t("inDraw", { room: title });
      var eta = status.querySelector(".eta");
      if (eta && status.dataset.wait) {  // the wait as a clock time, in the visitor's zone
        var at = new Date(Date.now() + 1000 * Number(status.dataset.wait));
        eta.textContent = t("around", { time: page.clock(at) });
        eta.hidden = false;
      }
    } else if (state === "turn") {
      yourTurn(status);
    } else if (state === "ended") {
      document.title = t("endedTitle", { room: title });
    }
  }

  // A waiting place's poll: the shape it shows, and the URL the last figures gave.
  function waitingPoll(elt) {
    return elt && elt.id === "line-status" && elt.dataset.state === "waiting" && elt.dataset.shape;
  }
  document.body.addEventListener("htmx:configRequest", function (event) {
    var status = event.detail.elt;
    if (!waitingPoll(status)) { return; }
    event.detail.headers[SHAPE] = status.dataset.shape;
    event.detail.timeout = 1000 * (Number(status.dataset.poll || 10) + GIVE_UP);
    if (status.dataset.next) { event.detail.path = status.dataset.next; }
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.elt, xhr = event.detail.xhr;
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (!waitingPoll(status) || xhr.status !== 200 || type.indexOf("application/json") !== 0) {
      return;  // HTML: htmx swaps it (another shape, the turn, the end)
    }
    event.detail.shouldSwap = false;
    try { figures(status, JSON.parse(xhr.responseText)); } catch (e) { stale(); }
  });

  // The figures of a poll whose shape held (place.py line_update): each data-figure's
  // text, the progress bar's value, what the next poll sends, the notice, the words a
  // screen reader hears; then the page is fresh, and asks again after the delay given.
  function figures(status, update) {
    status.querySelectorAll("[data-figure]").forEach(function (element) {
      var text = update.figures[element.dataset.figure];
      if (text !== undefined && element.textContent !== text) { element.textContent = text; }
    });
    status.querySelectorAll("[data-figure-value]").forEach(function (element) {
      var value = update.figures[element.dataset.figureValue];
      if (value !== undefined) { element.value = Number(value); }
    });
    status.dataset.poll = update.poll;
    if (update.position !== null) { status.dataset.position = update.position; }
    if (update.wait !== null) { status.dataset.wait = update.wait; }
    var next = new URL(status.dataset.next || status.getAttribute("hx-get"), location.href);
    next.searchParams.set("seen", update.seen);
    if (update.shown) { next.searchParams.set("shown", update.shown); } else { next.searchParams.delete("shown"); }
    status.dataset.next = next.pathname + next.search;
    var notice = byId("notice"), noticeText = byId("notice-text");
    if (notice && noticeText) {
      if (noticeText.textContent !== update.notice) { noticeText.textContent = update.notice; }
      notice.hidden = !update.notice;
    }
    if (update.announce) { byId("announce").textContent = update.announce; }
    setup();
    nextPoll = setTimeout(function () { htmx.trigger(status, "next"); }, 1000 * update.poll);
  }

  document.body.addEventListener("htmx:sendError", stale);
  document.body.addEventListener("htmx:timeout", stale);
  document.body.addEventListener("htmx:responseError", stale);
  document.body.addEventListener("htmx:afterSwap", setup);
  if (byId("while-waiting")) { offers(byId("while-waiting")); }
  setup();
})();
