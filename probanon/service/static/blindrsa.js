// probanon respondent-side blind RSA (globalThis.ProbanonBlindRSA): the client steps of
// RSABSSA-SHA384-PSS-Deterministic (RFC 9474 §5: EMSA-PSS with SHA-384, MGF1-SHA-384, a 48-byte
// salt, the identity preparation) and the Privacy Pass token input (RFC 9578 §5.1, token type
// 0x0002), so that the respondent's browser, not the collector, holds the unblinded token.
//
// Only the RFC's steps are written here; every hash is WebCrypto's (crypto.subtle.digest), the
// public key is parsed by WebCrypto (importKey "spki", exportKey "jwk"), and Finalize's signature
// check is WebCrypto's RSA-PSS verification. The arithmetic modulo n is BigInt.
(function (root) {
  "use strict";

  const ALGORITHM = "RSABSSA-SHA384-PSS-Deterministic";
  const HASH = "SHA-384";
  const H_LEN = 48; // bytes of SHA-384
  const SALT_LEN = 48; // RFC 9474 §5: sLen = 48 for the PSS variants
  const TOKEN_TYPE = 0x0002; // RFC 9578 §8.2.1: Blind RSA (2048-bit)
  const NONCE_LEN = 32;
  const CHALLENGE_PREFIX = "probanon/1 "; // the contract's challenge: "probanon/1 " + the survey's digest

  const subtle = () => {
    if (!root.crypto || !root.crypto.subtle) throw new Error("this browser offers no WebCrypto here (a secure context is needed)");
    return root.crypto.subtle;
  };

  // ------------------------------------------------------------------ bytes and integers

  // base64url without '=' padding (RFC 4648 §5), as everywhere in the collector's contract.
  function b64urlEncode(bytes) {
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function b64urlDecode(text) {
    if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
      throw new Error("not base64url text: " + JSON.stringify(String(text).slice(0, 40)));
    }
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  }

  function hexEncode(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function hexDecode(text) {
    if (typeof text !== "string" || !/^([0-9a-fA-F]{2})*$/.test(text)) throw new Error("not hexadecimal text");
    const out = new Uint8Array(text.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
    return out;
  }

  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  // OS2IP (RFC 8017 §4.2): big-endian bytes to a non-negative integer.
  function bytesToInt(bytes) {
    return bytes.length ? BigInt("0x" + hexEncode(bytes)) : 0n;
  }

  // I2OSP (RFC 8017 §4.1): a non-negative integer to exactly len big-endian bytes.
  function intToBytes(x, len) {
    if (x < 0n) throw new Error("negative integer"); // never: callers pass residues mod n
    const hex = x.toString(16);
    if (hex.length > 2 * len) throw new Error("integer too large");
    return hexDecode(hex.padStart(2 * len, "0"));
  }

  function bitLength(x) {
    return x === 0n ? 0 : x.toString(2).length;
  }

  // x^y mod m (square and multiply; y >= 0).
  function modPow(x, y, m) {
    let result = 1n;
    let base = ((x % m) + m) % m;
    while (y > 0n) {
      if (y & 1n) result = (result * base) % m;
      base = (base * base) % m;
      y >>= 1n;
    }
    return result;
  }

  function gcd(a, b) {
    while (b) [a, b] = [b, a % b];
    return a;
  }

  // inverse_mod(x, n) (RFC 9474 §3): x^-1 mod n by the extended Euclidean algorithm; null when
  // x and n are not co-prime.
  function inverseMod(x, n) {
    let [oldR, r] = [((x % n) + n) % n, n];
    let [oldS, s] = [1n, 0n];
    while (r) {
      const q = oldR / r;
      [oldR, r] = [r, oldR - q * r];
      [oldS, s] = [s, oldS - q * s];
    }
    return oldR === 1n ? ((oldS % n) + n) % n : null;
  }

  function randomBytes(len) {
    return root.crypto.getRandomValues(new Uint8Array(len));
  }

  // random_integer_uniform(1, n) (RFC 9474 §3, §4.2 "typically done via rejection sampling"):
  // bit_len(n) random bits, drawn again until the value is in [1, n).
  function randomBelow(n) {
    const bits = bitLength(n);
    const len = Math.ceil(bits / 8);
    const mask = (1 << (bits - 8 * (len - 1))) - 1; // the top byte keeps only bit_len(n) bits in all
    for (;;) {
      const bytes = randomBytes(len);
      bytes[0] &= mask;
      const r = bytesToInt(bytes);
      if (r >= 1n && r < n) return r;
    }
  }

  async function digest(name, bytes) {
    return new Uint8Array(await subtle().digest(name, bytes));
  }

  // ------------------------------------------------------------------ the public key

  // The issuer's public key from its SubjectPublicKeyInfo DER: WebCrypto parses it (importKey
  // "spki" as RSA-PSS with SHA-384) and gives the modulus and exponent (exportKey "jwk").
  // Returns {key, n, e, modulusLen, spki, keyId (raw SHA-256 of the DER)}.
  async function importPublicKey(spki) {
    const der = new Uint8Array(spki);
    const key = await subtle().importKey("spki", der, { name: "RSA-PSS", hash: HASH }, true, ["verify"]);
    const jwk = await subtle().exportKey("jwk", key);
    const n = bytesToInt(b64urlDecode(jwk.n));
    const e = bytesToInt(b64urlDecode(jwk.e));
    const keyId = await digest("SHA-256", der);
    return Object.freeze({ key: key, n: n, e: e, modulusLen: Math.ceil(bitLength(n) / 8), spki: der, keyId: keyId });
  }

  // The issuer's public form as served in the survey description ("issuer": {algorithm,
  // public_key: base64url SPKI DER, key_id: hex SHA-256 of the DER}); refused unless the
  // algorithm is RSABSSA-SHA384-PSS-Deterministic and the key id is the key's.
  async function importIssuer(issuer) {
    if (issuer === null || typeof issuer !== "object") throw new Error("the survey names no token issuer");
    if (issuer.algorithm !== ALGORITHM) {
      throw new Error("the token issuer uses " + JSON.stringify(issuer.algorithm) + ", not " + ALGORITHM);
    }
    let pk;
    try {
      pk = await importPublicKey(b64urlDecode(issuer.public_key));
    } catch (e) { // WebCrypto's DataError carries no message
      throw new Error("the token issuer's public key is not readable" + (e.message ? ": " + e.message : ""));
    }
    if (hexEncode(pk.keyId) !== String(issuer.key_id).toLowerCase()) {
      throw new Error("the token issuer's key id does not match its public key");
    }
    if (pk.modulusLen !== 256) throw new Error("the token issuer's key is not a 2048-bit RSA key");
    return pk;
  }

  // ------------------------------------------------------------------ RFC 8017 §9.1.1 and B.2.1

  // MGF1 with SHA-384 (RFC 8017 §B.2.1): T = Hash(seed || C) for C = 0, 1, ...; the first maskLen bytes.
  async function mgf1(seed, maskLen) {
    const blocks = [];
    for (let counter = 0; counter * H_LEN < maskLen; counter++) {
      const c = new Uint8Array([counter >>> 24, (counter >>> 16) & 255, (counter >>> 8) & 255, counter & 255]);
      blocks.push(await digest(HASH, concat(seed, c)));
    }
    return concat(...blocks).slice(0, maskLen);
  }

  // EMSA-PSS-ENCODE(M, emBits) (RFC 8017 §9.1.1) with SHA-384, MGF1-SHA-384 and sLen = 48.
  // salt: 48 bytes, fresh from crypto.getRandomValues unless given (tests only).
  async function emsaPssEncode(msg, emBits, salt) {
    const emLen = Math.ceil(emBits / 8);
    const mHash = await digest(HASH, msg); // step 2
    if (emLen < H_LEN + SALT_LEN + 2) throw new Error("encoding error"); // step 3
    const s = salt === undefined ? randomBytes(SALT_LEN) : new Uint8Array(salt); // step 4
    if (s.length !== SALT_LEN) throw new Error("the salt must be " + SALT_LEN + " bytes");
    const mPrime = concat(new Uint8Array(8), mHash, s); // step 5
    const h = await digest(HASH, mPrime); // step 6
    const db = concat(new Uint8Array(emLen - SALT_LEN - H_LEN - 2), new Uint8Array([1]), s); // steps 7-8
    const dbMask = await mgf1(h, emLen - H_LEN - 1); // step 9
    const maskedDb = db.map((b, i) => b ^ dbMask[i]); // step 10
    maskedDb[0] &= 0xff >>> (8 * emLen - emBits); // step 11: the leftmost 8 emLen - emBits bits to zero
    return concat(maskedDb, h, new Uint8Array([0xbc])); // steps 12-13
  }

  // ------------------------------------------------------------------ RFC 9474 §4.2, §4.4

  // Blind(pk, msg) (RFC 9474 §4.2). Returns {blindedMsg (modulusLen bytes), inv (BigInt)}.
  // For the published test vectors only, options may fix the salt (48 bytes) and the blind:
  // {r} or {inv} (then r = inv^-1 mod n).
  // EMSA-PSS-ENCODE gets emBits = bit_len(n) - 1, the RSASSA-PSS value (RFC 8017 §8.1.1 step 1),
  // so that the result is an ordinary RSASSA-PSS signature (RFC 9474 §4.5); for a 2048-bit n both
  // give emLen = 256 and the vectors of Appendix A.
  async function blind(pk, msg, options) {
    const opts = options || {};
    const n = pk.n;
    const encoded = await emsaPssEncode(msg, bitLength(n) - 1, opts.salt); // steps 1-2
    const m = bytesToInt(encoded); // step 3
    if (gcd(m, n) !== 1n) throw new Error("invalid input"); // steps 4-5
    let r, inv;
    if (opts.inv !== undefined || opts.r !== undefined) {
      r = opts.r !== undefined ? BigInt(opts.r) : inverseMod(BigInt(opts.inv), n);
      if (r === null || r < 1n || r >= n) throw new Error("blinding error");
    } else {
      r = randomBelow(n); // step 6
    }
    inv = inverseMod(r, n); // step 7
    if (inv === null) throw new Error("blinding error"); // step 8 (the caller draws again)
    const x = modPow(r, pk.e, n); // step 9: RSAVP1(pk, r)
    const z = (m * x) % n; // step 10
    return { blindedMsg: intToBytes(z, pk.modulusLen), inv: inv }; // steps 11-12
  }

  // Finalize(pk, msg, blind_sig, inv) (RFC 9474 §4.4): unblind, then refuse unless the result is a
  // valid RSASSA-PSS signature over msg (WebCrypto's RSA-PSS verification, saltLength 48).
  async function finalize(pk, msg, blindSig, inv) {
    const z = new Uint8Array(blindSig);
    if (z.length !== pk.modulusLen) throw new Error("unexpected input size"); // step 1
    const zi = bytesToInt(z); // step 2
    if (zi >= pk.n) throw new Error("invalid signature");
    const s = (zi * BigInt(inv)) % pk.n; // step 3
    const sig = intToBytes(s, pk.modulusLen); // step 4
    const valid = await subtle().verify({ name: "RSA-PSS", saltLength: SALT_LEN }, pk.key, sig, msg); // step 5
    if (!valid) throw new Error("invalid signature"); // step 6
    return sig;
  }

  // ------------------------------------------------------------------ RFC 9578 §5.1 token input

  // challenge_digest = SHA-256(UTF-8 of "probanon/1 " + the survey's digest string).
  async function challengeDigest(surveyDigest) {
    return digest("SHA-256", new TextEncoder().encode(CHALLENGE_PREFIX + surveyDigest));
  }

  // token_type (0x0002) || nonce (32) || challenge_digest (32) || token_key_id (32) (RFC 9578 §5.1).
  async function tokenInput(nonce, surveyDigest, keyId) {
    const nb = new Uint8Array(nonce);
    const kid = new Uint8Array(keyId);
    if (nb.length !== NONCE_LEN || kid.length !== 32) throw new Error("a nonce and a key id are 32 bytes each");
    return concat(new Uint8Array([TOKEN_TYPE >> 8, TOKEN_TYPE & 255]), nb, await challengeDigest(surveyDigest), kid);
  }

  // A new token request for a survey: a fresh nonce, its token input, and the blinded message.
  // Returns {nonce, blindedMsg, inv}; the caller keeps nonce and inv to finalize.
  async function request(pk, surveyDigest, options) {
    const opts = options || {};
    const nonce = opts.nonce !== undefined ? new Uint8Array(opts.nonce) : randomBytes(NONCE_LEN);
    const input = await tokenInput(nonce, surveyDigest, pk.keyId);
    for (let attempt = 0; ; attempt++) { // RFC 9474 §4.2: on a "blinding error", try again
      try {
        const { blindedMsg, inv } = await blind(pk, input, opts);
        return { nonce: nonce, blindedMsg: blindedMsg, inv: inv };
      } catch (e) {
        if (e.message !== "blinding error" || attempt >= 3 || opts.inv !== undefined || opts.r !== undefined) throw e;
      }
    }
  }

  // The unblinded token from the issuer's blind signature: {nonce, signature} (base64url), as the
  // submission carries it. Refused (Finalize's check) unless the signature verifies.
  async function token(pk, surveyDigest, nonce, blindSig, inv) {
    const input = await tokenInput(nonce, surveyDigest, pk.keyId);
    const sig = await finalize(pk, input, blindSig, inv);
    return { nonce: b64urlEncode(nonce), signature: b64urlEncode(sig) };
  }

  root.ProbanonBlindRSA = Object.freeze({
    ALGORITHM: ALGORITHM,
    b64urlEncode: b64urlEncode,
    b64urlDecode: b64urlDecode,
    hexEncode: hexEncode,
    hexDecode: hexDecode,
    bytesToInt: bytesToInt,
    intToBytes: intToBytes,
    modPow: modPow,
    inverseMod: inverseMod,
    importPublicKey: importPublicKey,
    importIssuer: importIssuer,
    emsaPssEncode: emsaPssEncode,
    blind: blind,
    finalize: finalize,
    challengeDigest: challengeDigest,
    tokenInput: tokenInput,
    request: request,
    token: token,
  });
})(globalThis);
