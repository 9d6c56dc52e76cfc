/* The room page (templates/room.html), on top of shared.js: the presence websocket
   (reconnects with backoff), live figures and participants, the notice, the ended state
   when the seat ends, and a title change and notification when the visitor was let in
   while the tab was hidden. Other code (chat.js) plugs into the socket with
   window.roomSocket.on(type, fn), .param(fn) and .send({type: ...}); "socket.open" and
   "socket.close" are told too. The close codes come from the server (js-config). */
(function () {
  "use strict";
  var page = window.page, byId = page.byId, t = page.t, title = page.title;
  var body = document.body;
  var CLOSE_TOO_MANY = page.config("closeTooMany", 4008);  // over the open-socket cap
  var CLOSE_TRY_AGAIN = page.config("closeTryAgain", 1013);  // briefly unavailable

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
        me.textContent = t("you_marker");
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
        name.textContent = title;
        heading.replaceChildren(name);
        connection.hidden = true;
        document.title = t("seatEndedTitle", { room: title });
        var said = document.querySelector("#line-status h2");
        if (said) {
          said.tabIndex = -1;
          said.focus();
        }
      }, function () { endedAlert(frame); });
  }

  // The ended state could not be loaded: say why, with the room's page, which shows
  // what is true now (and joins only at the visitor's click), and the lobby.
  function endedAlert(frame) {
    var box = stop(t("disconnected"), t("seat_ended", { reason: frame.message }));
    var again = document.createElement("a");
    again.className = "button primary";
    again.href = frame.rejoin;
    again.textContent = t("join_again");
    var lobby = document.createElement("a");
    lobby.href = frame.lobby;
    lobby.textContent = t("back_to_lobby");
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
    stop(t("not_connected"),
      t("could_not_connect", { reason: reason || t("too_many_connections") }));
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var query = params.map(function (fn) { return fn(); }).filter(Boolean).join("&");
    socket = new WebSocket(scheme + location.host + body.dataset.ws + (query ? "?" + query : ""));
    socket.addEventListener("open", function () {
      failures = 0;
      setState("live", t("live"));
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
      // seconds. Anything else: back off, and after a few tries let the server decide.
      var away = event.code === CLOSE_TRY_AGAIN;
      if (!away) { failures += 1; }
      if (failures > 6) { location.reload(); return; }
      setState("reconnecting", away ? t("reconnecting_away") : t("reconnecting"));
      var delay = away ? 4000 : Math.min(15000, 500 * Math.pow(2, failures - 1));
      setTimeout(connect, delay * (0.5 + Math.random() / 2));
    });
  }

  // Leaving (the dialog's form, asked once): the socket goes first, so the seat's
  // end is not taken for a lost connection.
  document.addEventListener("submit", function (event) {
    if (event.target.closest("form.leave")) {
      stopped = true;
      if (socket) { socket.close(); }
    }
  });

  function welcome() {
    if (!body.dataset.welcome || !document.hidden) { return; }
    var title = document.title;
    document.title = t("title_your_turn", { room: title });
    if ("Notification" in window && Notification.permission === "granted") {
      try { new Notification(t("your_turn"), { body: t("your_turn_body", { room: title }) }); }
      catch (e) { /* some browsers only notify from a service worker */ }
    }
    document.addEventListener("visibilitychange", function restore() {
      if (!document.hidden) {
        document.title = title;
        document.removeEventListener("visibilitychange", restore);
      }
    });
  }

  window.roomSocket = {
    on: function (type, fn) { (handlers[type] = handlers[type] || []).push(fn); },
    param: function (fn) { params.push(fn); },
    send: function (frame) {
      if (!socket || socket.readyState !== WebSocket.OPEN) { return false; }
      socket.send(JSON.stringify(frame));
      return true;
    }
  };
  // chat.js (loaded after this file) plugs in before the socket connects.
  document.addEventListener("DOMContentLoaded", function () {
    connect();
    welcome();
  });
})();
