/* The Web Worker that solves the join's proof of work (issue 29; webapp/domain/
   challenge.py): an ALTCHA v2 challenge of PBKDF2/SHA-256. Handed the challenge's
   parameters and a range of counters, it derives, for each counter in turn, the key of
   the nonce followed by the counter (four bytes, big endian) with the salt, inside
   WebCrypto (crypto.subtle.deriveBits: native code, so a native solver gains little on
   a browser), and answers the counter whose key starts with keyPrefix, with that key
   in hex, or a null counter when the range holds none. */
"use strict";

function bytes(hex) {
  var out = new Uint8Array(hex.length / 2);
  for (var i = 0; i < out.length; i += 1) { out[i] = parseInt(hex.substr(i * 2, 2), 16); }
  return out;
}

function hex(buffer) {
  return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
    return (b < 16 ? "0" : "") + b.toString(16);
  }).join("");
}

function digest(algorithm) {
  return { "PBKDF2/SHA-512": "SHA-512", "PBKDF2/SHA-384": "SHA-384" }[algorithm] || "SHA-256";
}

async function search(parameters, start, max) {
  var nonce = bytes(parameters.nonce);
  var password = new Uint8Array(nonce.length + 4);
  password.set(nonce, 0);
  var counter = new DataView(password.buffer);
  var prefix = bytes(parameters.keyPrefix);
  var how = { name: "PBKDF2", salt: bytes(parameters.salt), iterations: parameters.cost,
              hash: digest(parameters.algorithm) };
  var bits = (parameters.keyLength || 32) * 8;
  var began = performance.now();
  for (var n = start; n <= max; n += 1) {
    counter.setUint32(nonce.length, n, false);
    var key = await crypto.subtle.importKey("raw", password, "PBKDF2", false, ["deriveBits"]);
    var derived = new Uint8Array(await crypto.subtle.deriveBits(how, key, bits));
    var i = 0;
    while (i < prefix.length && derived[i] === prefix[i]) { i += 1; }
    if (i === prefix.length) {
      return { counter: n, derivedKey: hex(derived), took: performance.now() - began };
    }
  }
  return { counter: null };
}

self.onmessage = function (event) {
  var work = event.data;
  search(work.parameters, work.start, work.max).then(
    function (result) { self.postMessage(result); },
    function () { self.postMessage({ error: true }); }
  );
};
