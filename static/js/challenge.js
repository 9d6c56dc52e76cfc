/* The proof of work before a join (issues 25 and 29), on top of shared.js: a join form
   with data-challenge (templates/_challenge.html) gets a fresh ALTCHA v2 challenge when
   it is sent, solves it in Web Workers (static/js/challenge-worker.js, PBKDF2 in
   WebCrypto; each handed a range of counters in turn, so the page can show how far it
   got), puts the solution in the form's "altcha" field and sends the form. The progress
   is a <progress> bar and a sentence in a live region (its text alternative). Without
   JavaScript the form goes without a solution and the server's page says why it cannot
   join. A form with data-join-now (a site room's gate sent the visitor) is sent at once,
   without a press of the button. */
(function () {
  "use strict";
  var form = document.querySelector("form[data-challenge]");
  if (!form) { return; }
  var box = document.getElementById("challenge");
  var bar = document.getElementById("challenge-progress");
  var said = document.getElementById("challenge-status");
  var field = form.querySelector("input[name=altcha]");
  var button = form.querySelector("button[type=submit]");
  var WORKER = box.getAttribute("data-worker");
  var CHUNKS = 40;  // the range of numbers is tried in this many parts
  var busy = false;

  function say(text) { said.textContent = text; }

  function words(name, percent) {
    return (box.getAttribute("data-" + name) || "").replace("%(percent)s", percent + "%");
  }

  function show(done, total) {
    var percent = Math.min(Math.round((done / total) * 100), 100);
    bar.value = percent;
    bar.textContent = percent + "%";
    say(words("solving", percent));
  }

  function fail(why) {
    busy = false;
    button.disabled = false;
    box.classList.add("failed");
    say(why || words("failed"));
  }

  // Solves the challenge: resolves with the base64 payload the server verifies.
  function solve(challenge) {
    return new Promise(function (resolve, reject) {
      var most = challenge.maxnumber;
      var size = Math.max(Math.ceil((most + 1) / CHUNKS), 10);
      var parts = Math.ceil((most + 1) / size);
      var next = 0, done = 0, found = false;
      var count = Math.max(Math.min(navigator.hardwareConcurrency || 2, 4), 1);
      var workers = [];
      function stop() { workers.forEach(function (w) { w.terminate(); }); }
      function hand(worker) {
        if (next >= parts) { return; }
        var start = next * size;
        next += 1;
        worker.postMessage({ parameters: challenge.parameters, start: start,
                             max: Math.min(start + size - 1, most) });
      }
      for (var i = 0; i < Math.min(count, parts); i += 1) {
        var worker = new Worker(WORKER);
        worker.onmessage = function (event) {
          if (found) { return; }
          var result = event.data || {};
          if (result.error) { stop(); reject(new Error("worker failed")); return; }
          if (typeof result.counter === "number") {
            found = true;
            stop();
            show(1, 1);
            resolve(btoa(JSON.stringify({
              challenge: { parameters: challenge.parameters, signature: challenge.signature },
              solution: { counter: result.counter, derivedKey: result.derivedKey,
                          time: Math.round(result.took) }
            })));
            return;
          }
          done += 1;
          show(done, parts);
          if (done >= parts) { stop(); reject(new Error("no solution")); return; }
          hand(this);
        };
        worker.onerror = function () { stop(); reject(new Error("worker failed")); };
        workers.push(worker);
        hand(worker);
      }
    });
  }

  form.addEventListener("submit", function (event) {
    if (field.value) { return; }  // solved: the join goes
    event.preventDefault();
    if (busy) { return; }
    if (!window.Worker || !window.crypto || !window.crypto.subtle) {
      fail(words("unable"));
      return;
    }
    busy = true;
    button.disabled = true;
    box.hidden = false;
    box.classList.remove("failed");
    show(0, 1);
    fetch(form.getAttribute("data-challenge"), { credentials: "same-origin", cache: "no-store" })
      .then(function (reply) {
        if (!reply.ok) { throw new Error("challenge " + reply.status); }
        return reply.json();
      })
      .then(solve)
      .then(function (payload) {
        field.value = payload;
        say(words("done"));
        form.submit();
      })
      .catch(function () { fail(); });
  });

  // A site room's gate sent the visitor here (issue 30): the puzzle is solved and the
  // join sent without a press of the button.
  if (form.hasAttribute("data-join-now")) {
    if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
  }
})();
