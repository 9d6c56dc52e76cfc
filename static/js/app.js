/* The little JavaScript the pages need; everything works without it as far as it can.
   No inline scripts anywhere: the Content-Security-Policy forbids them.
   - waiting page: title shows the position; an offer to notify when it is your turn.
   - room page: the presence websocket (reconnects with backoff), live participants,
     and a title change + notification when you were let in while the tab was hidden.
   Chat (next issue) plugs into the socket with window.roomSocket.on(type, fn) and
   window.roomSocket.send({type: ...}). */
(function () {
  "use strict";
  var body = document.body;
  var room = body.dataset.room;

  function byId(id) { return document.getElementById(id); }

  function waitingPage() {
    var offer = document.querySelector(".notify-offer");
    if (offer && "Notification" in window && Notification.permission === "default") {
      offer.hidden = false;
      byId("notify").addEventListener("click", function () {
        Notification.requestPermission().then(function () { offer.hidden = true; });
      });
    }
    // A lost poll leaves the old status on screen: say so instead of "just now".
    function stale() {
      var live = document.querySelector("#line-status .live");
      if (live) {
        live.dataset.state = "reconnecting";
        live.lastChild.textContent = "Connection lost, trying again…";
      }
    }
    body.addEventListener("htmx:sendError", stale);
    body.addEventListener("htmx:responseError", stale);
    body.addEventListener("htmx:afterSwap", function () {
      var status = byId("line-status");
      if (status && status.dataset.position) {
        document.title = "Number " + status.dataset.position + " in line · " + room;
      }
    });
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

  function roomPage() {
    var handlers = {};
    var socket = null;
    var stopped = false;
    var failures = 0;
    var connection = byId("connection");

    function setState(state, text) {
      connection.dataset.state = state;
      connection.querySelector(".text").textContent = text;
    }

    function render(frame) {
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

    function ended(frame) {
      stopped = true;
      setState("ended", "Disconnected");
      var box = document.createElement("section");
      box.className = "card flash flash-error";
      box.setAttribute("role", "alert");
      var p = document.createElement("p");
      p.textContent = "Your seat has ended: " + frame.message + ".";
      var again = document.createElement("a");
      again.className = "button primary";
      again.href = frame.rejoin;
      again.textContent = "Join again";
      var lobby = document.createElement("a");
      lobby.href = frame.lobby;
      lobby.textContent = "Back to the lobby";
      box.append(p, again, " ", lobby);
      byId("main").prepend(box);
      if (socket) { socket.close(); }
    }

    handlers["room.state"] = [render];
    handlers.gone = [ended];

    function connect() {
      var scheme = location.protocol === "https:" ? "wss://" : "ws://";
      socket = new WebSocket(scheme + location.host + body.dataset.ws);
      socket.addEventListener("open", function () {
        failures = 0;
        setState("live", "Live");
      });
      socket.addEventListener("message", function (event) {
        var frame;
        try { frame = JSON.parse(event.data); } catch (e) { return; }
        (handlers[frame.type] || []).forEach(function (fn) { fn(frame); });
      });
      socket.addEventListener("close", function () {
        if (stopped) { return; }
        failures += 1;
        if (failures > 6) { location.reload(); return; }  // let the gate decide
        setState("reconnecting", "Reconnecting…");
        var delay = Math.min(15000, 500 * Math.pow(2, failures - 1));
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
      send: function (frame) {
        if (!socket || socket.readyState !== WebSocket.OPEN) { return false; }
        socket.send(JSON.stringify(frame));
        return true;
      }
    };
    connect();
    welcome();
  }

  if (body.dataset.page === "waiting") { waitingPage(); }
  if (body.dataset.page === "room") { roomPage(); }
})();
