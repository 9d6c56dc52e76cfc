/* A waitlist entry's page (templates/waitlist/entry.html), on top of shared.js: the
   button that copies the referral link, shown only where the clipboard works. */
(function () {
  "use strict";
  var page = window.page;
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = page.byId(button.dataset.copy);
    var status = page.byId(button.dataset.copy + "-status");
    if (!field || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(field.value).then(function () {
        if (status) { status.textContent = page.t("copied"); }
      }, function () {
        field.select();
        if (status) { status.textContent = page.t("copy_by_hand"); }
      });
    });
  });
})();
