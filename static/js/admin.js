/* The admin panel's little script; every page works without it.
   - the notice box counts its characters as you type (the limit is 280);
   - the overview's 5-second poll says so when it fails, and recovers by itself;
   - after htmx pages or searches the line, focus goes to the new table's caption
     when the element that had it is gone (no lost focus for keyboard users);
   - the waiting page's editor previews the template as it is typed, in both frames
     (the form's own "Preview" button fills the phone's frame without it). */
(function () {
  "use strict";

  function counter(box) {
    var out = document.getElementById(box.dataset.count);
    var limit = Number(box.getAttribute("maxlength"));
    if (!out || !limit) { return; }
    function update() {
      var left = limit - box.value.length;
      out.textContent = left + (left === 1 ? " character left." : " characters left.");
    }
    box.addEventListener("input", update);
    update();
  }

  function pollState(ok) {
    var rooms = document.getElementById("rooms");
    if (!rooms) { return; }
    var note = document.getElementById("rooms-stale");
    if (ok && note) { note.remove(); }
    if (!ok && !note) {
      note = document.createElement("p");
      note.id = "rooms-stale";
      note.className = "flash flash-error";
      note.setAttribute("role", "status");
      note.textContent = "Could not refresh the figures; trying again every 5 seconds.";
      rooms.before(note);
    }
  }

  // The template as typed, posted to each preview frame (a form's target), at most
  // every 600 ms while typing.
  function livePreview(form) {
    var button = document.getElementById("preview-button");
    if (!form || !button) { return; }
    var timer = null;
    function show() {
      ["preview-narrow", "preview-wide"].forEach(function (frame) {
        var post = document.createElement("form");
        post.method = "post";
        post.action = button.formAction;
        post.target = frame;
        post.hidden = true;
        new FormData(form).forEach(function (value, name) {
          var field = document.createElement("textarea");
          field.name = name;
          field.value = value;
          post.appendChild(field);
        });
        document.body.appendChild(post);
        post.submit();
        post.remove();
      });
    }
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(show, 600);
    });
    button.addEventListener("click", function (event) { event.preventDefault(); show(); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-count]").forEach(counter);
    livePreview(document.getElementById("page-form"));
    var body = document.body;
    body.addEventListener("htmx:sendError", function () { pollState(false); });
    body.addEventListener("htmx:responseError", function () { pollState(false); });
    body.addEventListener("htmx:afterSwap", function () { pollState(true); });
    body.addEventListener("htmx:afterSettle", function (event) {
      var line = document.getElementById("line");
      var target = event.detail && event.detail.target;  // none on a history restore
      if (target && target.id === "line" && line && !line.contains(document.activeElement)) {
        var caption = document.getElementById("line-caption") || document.getElementById("line-title");
        if (caption) { caption.setAttribute("tabindex", "-1"); caption.focus(); }
      }
    });
  });
}());
