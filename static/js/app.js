/* The little JavaScript the pages need; everything works without it as far as it can.
   No inline scripts anywhere: the Content-Security-Policy forbids them.
   - waiting page: title shows the position; an offer to notify when it is your turn.
   - room page: the presence websocket (reconnects with backoff), live participants,
     and a title change + notification when you were let in while the tab was hidden.
   - chat on the room page, on the same socket (docs/chat.md, "In the browser").
   - a waitlist entry's page: the button that copies the referral link.
   Other code plugs into the socket with window.roomSocket.on(type, fn) and
   window.roomSocket.send({type: ...}); "socket.open" and "socket.close" are told too. */
(function () {
  "use strict";
  var body = document.body;
  var room = body.dataset.room;

  var CLOSE_TOO_MANY = 4008;  // the server's close code: over the open-socket cap
  var CLOSE_TRY_AGAIN = 1013;  // the server's close code: briefly unavailable (Redis away)

  function byId(id) { return document.getElementById(id); }

  // The waiting page's words (one place, for translation). {name} is filled in.
  var TEXT = {
    inLine: "Number {n} in line · {room}",
    updatedNow: "Updated just now",
    updatedAgo: "Updated {n} s ago",
    updatedMinutes: "Updated {n} min ago",
    lost: "Connection lost, trying again… (updated {age})",
    lostSaid: "Connection lost. This page keeps trying to check in for you.",
    justNow: "just now",
    secondsAgo: "{n} s ago",
    minutesAgo: "{n} min ago",
    around: " (around {time} your time)",
    turnTitle: "It's your turn! · {room}",
    turnGo: "Taking you in… {n}",
    turnHidden: "Come back to this tab to go in.",
    turnNotify: "It's your turn",
    turnNotifyBody: "A seat in {room} is free for you.",
    endedTitle: "Your place has ended · {room}",
    seatEndedTitle: "Your seat has ended · {room}"
  };
  var TURN_MOMENT = 3;  // seconds the "it's your turn" moment shows before going in

  function say(key, values) {
    return TEXT[key].replace(/\{(\w+)\}/g, function (all, name) {
      return values && values[name] !== undefined ? values[name] : all;
    });
  }
  function clockText(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    return Math.floor(seconds / 60) + ":" + twoDigits(seconds % 60);
  }
  function ago(seconds) {
    if (seconds < 5) { return TEXT.justNow; }
    if (seconds < 60) { return say("secondsAgo", { n: seconds }); }
    return say("minutesAgo", { n: Math.floor(seconds / 60) });
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

  function notify(title, text) {
    if (!("Notification" in window) || Notification.permission !== "granted") { return; }
    try { new Notification(title, { body: text }); }
    catch (e) { /* some browsers only notify from a service worker */ }
  }

  function waitingPage() {
    var updatedAt = Date.now();
    var failing = false;
    var misses = 0;
    var turnTimer = null;
    if (soundWanted()) {  // a sound needs a gesture first: the first click or key gives it
      document.addEventListener("pointerdown", audioReady, { once: true });
      document.addEventListener("keydown", audioReady, { once: true });
    }

    function offers(status) {
      var offer = status.querySelector(".notify-offer");
      if (offer && "Notification" in window && Notification.permission === "default") {
        offer.hidden = false;
        byId("notify").addEventListener("click", function () {
          Notification.requestPermission().then(function () { offer.hidden = true; });
        });
      }
      // (no id on it: htmx would carry a screenshot tool's style="" over to the new one)
      var sound = status.querySelector(".sound-offer input");
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
        text.textContent = say("lost", { age: ago(age) });
      } else if (age < 5) {
        text.textContent = TEXT.updatedNow;
      } else if (age < 60) {
        text.textContent = say("updatedAgo", { n: age });
      } else {
        text.textContent = say("updatedMinutes", { n: Math.floor(age / 60) });
      }
    }
    setInterval(tick, 1000);

    // A lost poll leaves the old status on screen: say so, and ask again soon (backing
    // off, never slower than half the usual pace): the place is kept while the service
    // is away, as long as this page keeps asking.
    function stale() {
      var status = byId("line-status");
      var announce = byId("announce");
      if (!failing && announce) { announce.textContent = TEXT.lostSaid; }  // said once
      failing = true;
      tick();
      if (!status || status.dataset.state !== "waiting") { return; }
      misses += 1;
      var cap = Math.min(5000, 500 * Number(status.dataset.poll || 10));
      var delay = Math.min(cap, 1000 * Math.pow(2, misses - 1)) * (0.5 + Math.random() / 2);
      setTimeout(function () { htmx.trigger(status, "retry"); }, delay);
    }

    // A seat is free: say so (title, sound, notification), then go in after a visible
    // moment, or at a click. A hidden tab waits for the visitor, showing the time the
    // seat is held; when that runs out, the page asks the server what became of it.
    function yourTurn(status) {
      var left = Number(status.dataset.left || 0);
      var started = Date.now();
      var moment = TURN_MOMENT;
      var go = byId("turn-go"), held = byId("turn-left");
      document.title = say("turnTitle", { room: room });
      beep();
      if (document.hidden) { notify(TEXT.turnNotify, say("turnNotifyBody", { room: room })); }
      go.hidden = false;
      function step() {
        var remaining = left - (Date.now() - started) / 1000;
        if (remaining <= 0) {
          htmx.ajax("GET", status.dataset.line, { target: "#line-status", swap: "outerHTML" });
          return;
        }
        held.textContent = clockText(remaining);
        if (document.hidden) {
          moment = TURN_MOMENT;  // the moment starts over when the visitor is back
          go.textContent = TEXT.turnHidden;
        } else if (moment <= 0) {
          location.assign(status.dataset.go);
          return;
        } else {
          go.textContent = say("turnGo", { n: moment });
          moment -= 1;
        }
        turnTimer = setTimeout(step, 1000);
      }
      step();
    }

    function setup() {
      var status = byId("line-status");
      clearTimeout(turnTimer);
      if (!status) { return; }
      var state = status.dataset.state;
      if (state === "waiting") {
        updatedAt = Date.now();
        failing = false;
        misses = 0;
        offers(status);
        document.title = say("inLine", { n: status.dataset.position, room: room });
        var eta = status.querySelector(".eta");
        if (eta && status.dataset.wait) {  // the wait as a clock time, in the visitor's zone
          var at = new Date(Date.now() + 1000 * Number(status.dataset.wait));
          var time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
          eta.textContent = say("around", { time: time });
          eta.hidden = false;
        }
        tick();
      } else if (state === "turn") {
        yourTurn(status);
      } else if (state === "ended") {
        document.title = say("endedTitle", { room: room });
      }
    }

    body.addEventListener("htmx:sendError", stale);
    body.addEventListener("htmx:responseError", stale);
    body.addEventListener("htmx:afterSwap", setup);
    setup();
  }

  function welcome() {
    if (!body.dataset.welcome || !document.hidden) { return; }
    var title = document.title;
    document.title = "It is your turn! · " + room;
    if ("Notification" in window && Notification.permission === "granted") {
      try { new Notification("It is your turn", { body: "You are in " + room + " now." }); }
      catch (e) { /* some browsers only notify from a service worker */ }
    }
    document.addEventListener("visibilitychange", function restore() {
      if (!document.hidden) {
        document.title = title;
        document.removeEventListener("visibilitychange", restore);
      }
    });
  }

  // -- chat on the room page -------------------------------------------------------
  // Frames (docs/chat.md, "In the browser"): chat.history on a fresh connect, then
  // message frames in id order; a reconnect asks for ?after=<last shown id> and gets
  // only what came after. Text is only ever set with textContent.
  var MAX_TEXT = 2000;  // characters (code points), as the server counts them
  var COUNT_FROM = 1800;  // the live character count shows from here on
  var RATE_LIMIT = 20, RATE_WINDOW = 10000;  // the server's: 20 messages per 10 s
  var NEAR_BOTTOM = 48;  // px from the end that still count as "at the bottom"
  var TITLE_COUNT = /^\(\d+\) /;

  function chars(text) { return Array.from(text).length; }
  function number(n) { return n.toLocaleString("en-US"); }
  function plural(n, one, many) { return number(n) + " " + (n === 1 ? one : many); }
  function twoDigits(n) { return (n < 10 ? "0" : "") + n; }
  function sentence(text) {  // the server's reasons start in lower case, mid-sentence style
    text = String(text || "something went wrong");
    return text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? "" : ".");
  }

  function chat(roomSocket) {
    var part = byId("chat-body");
    if (!part) { return; }
    part.hidden = false;
    var log = byId("chat-log"), list = byId("messages"), empty = byId("chat-empty");
    var jump = byId("chat-jump"), form = byId("chat-form"), box = byId("chat-text");
    var button = byId("chat-send"), count = byId("chat-count"), error = byId("chat-error");
    var lastId = 0;  // the newest message shown; anything at or below it is a repeat
    var reading = true;  // false from the first unread message until the reader catches up
    var unseen = 0;  // messages that arrived while scrolled up or hidden, not yet caught up
    var hiddenCount = 0;  // for the title while the tab is hidden
    var divider = null;  // the "New" line above the first unread message
    var previous = null;  // the last message shown, to group a sender's run of messages
    var sent = [];  // texts sent and not seen back yet: a refused one goes back in the box
    var byRef = {};  // the same texts by the ref each send carried (a refusal echoes it)
    var nextRef = 1;
    var sends = [];  // when recent messages were sent (the rate limit, checked here first)
    var errorTimer = null;

    roomSocket.param(function () { return lastId ? "after=" + lastId : ""; });

    function atBottom() {
      return log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_BOTTOM;
    }
    function toBottom() { log.scrollTop = log.scrollHeight; }

    function setTitle() {
      var base = document.title.replace(TITLE_COUNT, "");
      document.title = hiddenCount ? "(" + hiddenCount + ") " + base : base;
    }

    // The reader is at the end and looking: nothing is unread any more. The divider
    // stays where it is until the next unread message moves it.
    function update() {
      if (!document.hidden && atBottom()) {
        reading = true;
        unseen = 0;
      }
      jump.hidden = unseen === 0;
      jump.textContent = plural(unseen, "new message", "new messages");
    }

    function item(className, text) {
      var li = document.createElement("li");
      li.className = className;
      var span = document.createElement("span");
      span.textContent = text;
      li.append(span);
      previous = null;
      return li;
    }

    function notice(text) { list.append(item("chat-notice", text)); }

    function messageItem(m) {
      var li = document.createElement("li");
      li.className = "message" + (m.mine ? " mine" : "");
      li.dataset.id = m.id;
      if (previous && previous.sender === m.sender && m.ts - previous.ts < 120) {
        li.classList.add("follow");  // same sender, moments later: the name is hidden
      }
      var meta = document.createElement("p");
      meta.className = "meta";
      var who = document.createElement("span");
      who.className = "sender";
      who.textContent = m.name;
      meta.append(who);
      if (m.mine) {
        var you = document.createElement("span");
        you.className = "you-tag";
        you.textContent = "you";
        meta.append(" ", you);
      }
      var when = new Date(m.ts * 1000);
      var time = document.createElement("time");
      time.dateTime = when.toISOString();
      time.title = when.toLocaleString();
      time.textContent = twoDigits(when.getHours()) + ":" + twoDigits(when.getMinutes());
      meta.append(" ", time);
      var text = document.createElement("p");
      text.className = "text";
      text.textContent = m.text;
      li.append(meta, text);
      previous = m;
      return li;
    }

    function add(m, history) {
      if (typeof m.id !== "number" || m.id <= lastId) { return; }  // shown already
      var follow = atBottom();
      var ownHere = m.mine && sent.indexOf(m.text) >= 0;  // sent from this page, not another tab
      var unread = !history && !m.mine && (document.hidden || !follow);
      if (unread) {
        if (reading) {  // a new stretch of unread messages starts here
          if (divider) { divider.remove(); }
          divider = item("unread", "New");
          list.append(divider);
          reading = false;
        }
        unseen += 1;
        if (document.hidden) {
          hiddenCount += 1;
          setTitle();
        }
      }
      list.append(messageItem(m));
      lastId = m.id;
      empty.hidden = true;
      if (ownHere) {  // the writer wants to see what they wrote
        sent.splice(sent.indexOf(m.text), 1);
        reading = true;
        unseen = 0;
      }
      // Follow the conversation only if the reader was already at its end (and looking).
      if (history || ownHere || (follow && !document.hidden)) { toBottom(); }
      update();
    }

    roomSocket.on("chat.history", function (frame) {
      if (lastId) {  // our ?after= was past the chat's end: the chat began again
        notice("The chat started over.");
        lastId = 0;
      }
      log.setAttribute("aria-busy", "true");
      (frame.messages || []).forEach(function (m) { add(m, true); });
      log.setAttribute("aria-busy", "false");
      toBottom();
    });
    roomSocket.on("message", function (m) { add(m, false); });
    roomSocket.on("chat.missed", function (frame) {
      notice(plural(frame.count, "earlier message is", "earlier messages are") +
        " no longer available.");
    });
    roomSocket.on("error", function (frame) {
      if (frame["for"] !== "send") { return; }
      var back = byRef[frame.ref];  // give the refused text back rather than lose it
      delete byRef[frame.ref];
      if (back !== undefined && sent.indexOf(back) >= 0) { sent.splice(sent.indexOf(back), 1); }
      if (back !== undefined && !box.value) {
        box.value = back;
        counter();
      }
      showError(sentence(frame.error), frame.retry_after);
    });
    roomSocket.on("socket.open", function () {
      if (error.dataset.kind === "offline") { clearError(); }
    });
    roomSocket.on("socket.close", function (frame) {
      if (!frame.final) { return; }
      box.disabled = true;
      button.disabled = true;
      showError(frame.code === CLOSE_TOO_MANY
        ? sentence("The chat is not connected: " + (frame.reason || "too many open connections"))
        : "The chat is closed: you are no longer in this room.");
    });

    function showError(text, retryAfter) {
      clearTimeout(errorTimer);
      error.textContent = text;
      error.hidden = false;
      error.dataset.kind = retryAfter ? "rate" : "";
      if (retryAfter) {  // the wait is over: the reason no longer holds
        errorTimer = setTimeout(clearError, retryAfter * 1000);
      }
    }
    function clearError() {
      clearTimeout(errorTimer);
      error.hidden = true;
      error.textContent = "";
      error.dataset.kind = "";
    }

    function problem(text) {
      var clean = text.replace(/\r\n/g, "\n").trim();
      if (!clean) { return "An empty message cannot be sent."; }
      var n = chars(clean);
      if (n > MAX_TEXT) {
        return "A message can be at most " + number(MAX_TEXT) + " characters; this one has " +
          number(n) + ".";
      }
      return "";
    }

    function counter() {
      var n = chars(box.value.trim());
      count.hidden = n < COUNT_FROM;
      count.classList.toggle("over", n > MAX_TEXT);
      count.textContent = number(n) + " / " + number(MAX_TEXT) +
        (n > MAX_TEXT ? " (" + number(n - MAX_TEXT) + " too many)" : "");
    }

    function submit() {
      var text = box.value;
      var reason = problem(text);
      if (reason) {
        showError(reason);
        return;
      }
      var now = Date.now();
      sends = sends.filter(function (t) { return now - t < RATE_WINDOW; });
      if (sends.length >= RATE_LIMIT) {
        var wait = Math.ceil((sends[0] + RATE_WINDOW - now) / 1000);
        showError("You are sending too fast: at most " + RATE_LIMIT + " messages every " +
          RATE_WINDOW / 1000 + " seconds; try again in " + wait + " s.", wait);
        return;
      }
      var ref = nextRef++;
      if (!roomSocket.send({ type: "send", text: text, ref: ref })) {
        showError("Not connected right now; your message is still in the box. " +
          "Send it again once the page says Live.");
        error.dataset.kind = "offline";
        return;
      }
      sends.push(now);
      sent.push(text.replace(/\r\n/g, "\n").trim());
      byRef[ref] = sent[sent.length - 1];
      if (sent.length > 50) { delete byRef[ref - 50]; sent.shift(); }
      box.value = "";
      counter();
      if (error.dataset.kind !== "rate") { clearError(); }
    }

    box.addEventListener("keydown", function (event) {
      // Enter sends; Shift+Enter is a new line; Enter that ends an IME composition is not a send.
      if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) {
        return;
      }
      event.preventDefault();
      submit();
    });
    box.addEventListener("input", function () {
      counter();
      if (!error.hidden && error.dataset.kind === "") { clearError(); }
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      submit();
      box.focus();
    });
    log.addEventListener("scroll", update, { passive: true });
    jump.addEventListener("click", function () {
      toBottom();
      update();
      log.focus();
    });
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) { return; }
      hiddenCount = 0;
      setTitle();
      update();
    });
  }

  function roomPage() {
    var handlers = {};
    var socket = null;
    var stopped = false;
    var failures = 0;
    var connection = byId("connection");
    var params = [];  // functions giving query parameters for the next connect

    function setState(state, text) {
      connection.dataset.state = state;
      connection.querySelector(".text").textContent = text;
    }

    function notice(frame) {
      var box = byId("notice");
      if (!box || frame.notice === undefined && frame.text === undefined) { return; }
      var text = frame.type === "notice" ? frame.text : frame.notice;
      byId("notice-text").textContent = text || "";
      box.hidden = !text;
    }

    function render(frame) {
      notice(frame);
      byId("active").textContent = frame.active;
      byId("capacity").textContent = frame.capacity;
      byId("waiting").textContent = frame.waiting;
      var list = byId("participants");
      var items = frame.participants.map(function (person) {
        var li = document.createElement("li");
        li.dataset.id = person.id;
        li.textContent = person.name;
        if (person.id === body.dataset.you) {
          li.className = "you";
          var me = document.createElement("span");
          me.className = "muted";
          me.textContent = " (you)";
          li.appendChild(me);
        }
        return li;
      });
      list.replaceChildren.apply(list, items);
    }

    // The socket is over for good: an alert at the top of the page says why.
    function stop(state, text) {
      stopped = true;
      setState("ended", state);
      var box = document.createElement("section");
      box.className = "card flash flash-error";
      box.setAttribute("role", "alert");
      var p = document.createElement("p");
      p.textContent = text;
      box.append(p);
      byId("main").prepend(box);
      return box;
    }

    // The seat ended: the live parts give way to the ended state (the server's
    // _ended.html says why and what next); the alert below only if that cannot load.
    function ended(frame) {
      stopped = true;
      if (socket) { socket.close(); }
      var live = byId("room-live");
      if (!live || !body.dataset.ended || !window.htmx) { return endedAlert(frame); }
      htmx.ajax("GET", body.dataset.ended, { target: "#room-live", swap: "outerHTML" })
        .then(function () {
          if (byId("room-live")) { return endedAlert(frame); }  // the request failed
          var heading = byId("room-heading"), name = document.createElement("span");
          name.className = "room-name";
          name.textContent = room;
          heading.replaceChildren(name);
          connection.hidden = true;
          document.title = say("seatEndedTitle", { room: room });
          var title = document.querySelector("#line-status h2");
          if (title) {
            title.tabIndex = -1;
            title.focus();
          }
        }, function () { endedAlert(frame); });
    }

    function endedAlert(frame) {
      var box = stop("Disconnected", "Your seat has ended: " + frame.message + ".");
      var again = document.createElement("a");
      again.className = "button primary";
      again.href = frame.rejoin;
      again.textContent = "Join again";
      var lobby = document.createElement("a");
      lobby.href = frame.lobby;
      lobby.textContent = "Back to the lobby";
      box.append(again, " ", lobby);
      if (socket) { socket.close(); }
    }

    handlers["room.state"] = [render];
    handlers.notice = [notice];
    handlers.gone = [ended];

    function emit(frame) {
      (handlers[frame.type] || []).forEach(function (fn) { fn(frame); });
    }

    // Over the visitor's cap of open sockets (all tabs, all servers): reconnecting
    // would only be refused again, so say why and stop.
    function refused(reason) {
      stop("Not connected", "This page could not connect: " +
        (reason || "too many open connections") + ". Reload the page to try again.");
    }

    function connect() {
      var scheme = location.protocol === "https:" ? "wss://" : "ws://";
      var query = params.map(function (fn) { return fn(); }).filter(Boolean).join("&");
      socket = new WebSocket(scheme + location.host + body.dataset.ws + (query ? "?" + query : ""));
      socket.addEventListener("open", function () {
        failures = 0;
        setState("live", "Live");
        emit({ type: "socket.open" });
      });
      socket.addEventListener("message", function (event) {
        var frame;
        try { frame = JSON.parse(event.data); } catch (e) { return; }
        emit(frame);
      });
      socket.addEventListener("close", function (event) {
        if (event.code === CLOSE_TOO_MANY) { refused(event.reason); }
        emit({ type: "socket.close", code: event.code, reason: event.reason, final: stopped });
        if (stopped) { return; }
        // Briefly unavailable: the seat is kept meanwhile, so keep trying every few
        // seconds. Anything else: back off, and after a few tries let the gate decide.
        var away = event.code === CLOSE_TRY_AGAIN;
        if (!away) { failures += 1; }
        if (failures > 6) { location.reload(); return; }
        setState("reconnecting", away ? "Reconnecting (briefly unavailable)…" : "Reconnecting…");
        var delay = away ? 4000 : Math.min(15000, 500 * Math.pow(2, failures - 1));
        setTimeout(connect, delay * (0.5 + Math.random() / 2));
      });
    }

    document.querySelectorAll("form.leave").forEach(function (form) {
      form.addEventListener("submit", function () {
        stopped = true;
        if (socket) { socket.close(); }
      });
    });

    window.roomSocket = {
      on: function (type, fn) { (handlers[type] = handlers[type] || []).push(fn); },
      param: function (fn) { params.push(fn); },
      send: function (frame) {
        if (!socket || socket.readyState !== WebSocket.OPEN) { return false; }
        socket.send(JSON.stringify(frame));
        return true;
      }
    };
    chat(window.roomSocket);
    connect();
    welcome();
  }

  // A copy button (data-copy="<input id>"), shown only where the clipboard works.
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = byId(button.dataset.copy);
    var status = byId(button.dataset.copy + "-status");
    if (!field || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(field.value).then(function () {
        if (status) { status.textContent = "Copied to the clipboard."; }
      }, function () {
        field.select();
        if (status) { status.textContent = "Select the link and copy it."; }
      });
    });
  });

  if (body.dataset.page === "waiting") { waitingPage(); }
  if (body.dataset.page === "room") { roomPage(); }
})();
