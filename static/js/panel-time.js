/* The panel's times in the admin's own time zone (webapp/views/admin/form.py).
   - remembers the browser's zone in the cookie panel_tz, so the next page is drawn in it;
   - a form drawn in another zone (the first visit, or UTC) is moved to this one: each
     date and time from its data-utc, the words naming the zone, the hidden `tz`;
   - beside each date and time, the moment in UTC as it is typed;
   - a time shown on a page drawn in another zone (<time data-panel-time>, the first
     visit) is redrawn in this one, as the server draws it: "2026-05-01 16:02:00 CEST".
   Without this script the panel's times are UTC, and its forms say so. */
(function () {
  "use strict";
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
  if (!zone) { return; }
  document.cookie = "panel_tz=" + encodeURIComponent(zone) + "; path=/admin; max-age=31536000; SameSite=Strict";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function localValue(date) {
    var text = date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) +
      "T" + pad(date.getHours()) + ":" + pad(date.getMinutes());
    return date.getSeconds() ? text + ":" + pad(date.getSeconds()) : text;
  }

  function showUtc(input) {
    var out = document.getElementById(input.id + "-utc");
    if (!out) { return; }
    var date = input.value ? new Date(input.value) : null;  // no offset: local time
    out.textContent = date && !isNaN(date) ?
      "In UTC: " + date.toISOString().slice(0, 19).replace("T", " ") : "";
  }

  function moveForm(tz) {
    var form = tz.form;
    var inputs = Array.prototype.slice.call(form.querySelectorAll("input[type=datetime-local]"));
    // a value typed in the other zone (shown again after an error) cannot be moved: keep it
    if (inputs.some(function (input) { return input.value && !input.dataset.utc; })) { return; }
    inputs.forEach(function (input) {
      if (input.dataset.utc) { input.value = localValue(new Date(Number(input.dataset.utc) * 1000)); }
    });
    form.querySelectorAll("[data-zone]").forEach(function (words) { words.textContent = zone; });
    tz.value = zone;
  }

  function zoneWord(date) {
    try {
      var parts = new Intl.DateTimeFormat("en-GB", { timeZone: zone, timeZoneName: "short" }).formatToParts(date);
      return parts.filter(function (part) { return part.type === "timeZoneName"; })[0].value;
    } catch (e) { return zone; }
  }

  function redraw(scope) {
    scope.querySelectorAll("time[data-panel-time]").forEach(function (time) {
      if (time.dataset.zone === zone) { return; }
      var date = new Date(time.getAttribute("datetime"));
      if (isNaN(date)) { return; }
      var text = localValue(date).replace("T", " ");
      if (time.dataset.panelTime === "minutes") { text = text.slice(11, 16); }
      else if (text.length === 16) { text += ":00"; }
      time.textContent = text + " " + zoneWord(date);
      time.dataset.zone = zone;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    redraw(document);
    document.body.addEventListener("htmx:afterSwap", function () { redraw(document); });
    document.querySelectorAll("form input[name=tz]").forEach(function (tz) {
      if (tz.value !== zone) { moveForm(tz); }
      tz.form.querySelectorAll("input[type=datetime-local]").forEach(function (input) {
        input.addEventListener("input", function () { showUtc(input); });
      });
    });
  });
}());
