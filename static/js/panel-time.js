/* The panel's times in the admin's own time zone (webapp/views/admin_form.py).
   - remembers the browser's zone in the cookie panel_tz, so the next page is drawn in it;
   - a form drawn in another zone (the first visit, or UTC) is moved to this one: each
     date and time from its data-utc, the words naming the zone, the hidden `tz`;
   - beside each date and time, the moment in UTC as it is typed.
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

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form input[name=tz]").forEach(function (tz) {
      if (tz.value !== zone) { moveForm(tz); }
      tz.form.querySelectorAll("input[type=datetime-local]").forEach(function (input) {
        input.addEventListener("input", function () { showUtc(input); });
      });
    });
  });
}());
