/* The chat of the room page (templates/room.html), on the room's socket (room.js's
   window.roomSocket). Frames (docs/chat.md, "In the browser"): chat.history on a fresh
   connect, then message frames in id order; a reconnect asks for ?after=<last shown
   id> and gets only what came after. Text is only ever set with textContent. The
   limits are the server's (js-config), checked here first to say why at once. */
(function () {
  "use strict";
  var page = window.page, byId = page.byId, t = page.t, tn = page.tn, number = page.number;
  var MAX_TEXT = page.config("maxText", 2000);  // characters (code points), as the server counts
  var COUNT_FROM = Math.round(MAX_TEXT * 0.9);  // the live character count shows from here on
  var RATE_LIMIT = page.config("rateLimit", 20);  // messages per window, the server's
  var RATE_WINDOW = 1000 * page.config("rateWindow", 10);  // ms
  var CLOSE_TOO_MANY = page.config("closeTooMany", 4008);
  var NEAR_BOTTOM = 48;  // px from the end that still count as "at the bottom"
  var TITLE_COUNT = /^\(\d+\) /;

  function chars(text) { return Array.from(text).length; }
  function sentence(text) {  // the server's reasons start in lower case, mid-sentence style
    text = String(text || t("something_wrong"));
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
      jump.textContent = tn("new_messages", unseen);
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
        you.textContent = t("you");
        meta.append(" ", you);
      }
      var when = new Date(m.ts * 1000);
      var time = document.createElement("time");
      time.dateTime = when.toISOString();
      time.title = when.toLocaleString(page.locale);
      time.textContent = page.clock(when);
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
          divider = item("unread", t("new_divider"));
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
        notice(t("chat_restarted"));
        lastId = 0;
      }
      log.setAttribute("aria-busy", "true");
      (frame.messages || []).forEach(function (m) { add(m, true); });
      log.setAttribute("aria-busy", "false");
      toBottom();
    });
    roomSocket.on("message", function (m) { add(m, false); });
    roomSocket.on("chat.missed", function (frame) {
      notice(tn("missed", frame.count));
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
        ? sentence(t("chat_not_connected", { reason: frame.reason || t("too_many_connections") }))
        : t("chat_closed"));
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
      if (!clean) { return t("empty_message"); }
      var n = chars(clean);
      if (n > MAX_TEXT) {
        return t("message_too_long", { max: number(MAX_TEXT), count: number(n) });
      }
      return "";
    }

    function counter() {
      var n = chars(box.value.trim());
      count.hidden = n < COUNT_FROM;
      count.classList.toggle("over", n > MAX_TEXT);
      count.textContent = number(n) + " / " + number(MAX_TEXT) +
        (n > MAX_TEXT ? " " + t("over_by", { count: number(n - MAX_TEXT) }) : "");
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
        showError(t("too_fast", { count: RATE_LIMIT, seconds: RATE_WINDOW / 1000, wait: wait }),
          wait);
        return;
      }
      var ref = nextRef++;
      if (!roomSocket.send({ type: "send", text: text, ref: ref })) {
        showError(t("not_connected_kept"));
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

  if (window.roomSocket) { chat(window.roomSocket); }
})();
