"""DSSE envelopes signed with Ed25519 (DESIGN §6).

Envelope: {"payloadType": ..., "payload": <base64 payload bytes>, "signatures": [{"keyid", "sig"}]}.
The signature covers PAE(payloadType, payload bytes), never the JSON around it, so whitespace
in the envelope does not matter but one flipped bit of payload or signature does.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ingest.files import write_atomically
from ingest.sources.runs.errors import RunRejected

PAYLOAD_TYPE = "application/vnd.benchwh.run+json"
TRUSTED_KEYS_FILE = "trusted_keys.json"
MAX_ENVELOPE_BYTES = 10 * 1024 * 1024
MAX_SIGNATURES = 16


@dataclass(frozen=True)
class VerifiedRun:
    payload_bytes: bytes
    trust: str  # "signed" | "unverified"
    keyid: str | None
    contributor: str | None = None


@dataclass(frozen=True)
class TrustedKey:
    keyid: str
    public_key: bytes  # raw 32 bytes
    contributor: str


def default_key_path(home: Path | str) -> Path:
    """Where `benchwh keys generate` writes the private key unless told otherwise."""
    return Path(home) / "keys" / "benchwh_ed25519.pem"


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding: "DSSEv1" SP len(type) SP type SP len(body) SP body."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def keyid_for(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()


def _public_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def generate_keypair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair: (private key as unencrypted PKCS#8 PEM, raw 32-byte public key)."""
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return pem, _public_raw(private.public_key())


def write_private_key(path: Path | str) -> tuple[bytes, str]:
    """Write a new private key to `path` with mode 0600 (refuses to overwrite).

    Returns (raw public key, keyid).
    """
    path = Path(path)
    pem, public_raw = generate_keypair()
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL + mode at creation: the key is never readable by others, not even for an instant;
    # the mode is set on the descriptor, never again by path (in a folder others may write, the
    # name could by then be a link to another file, whose mode a chmod would change)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(pem)
    return public_raw, keyid_for(public_raw)


KEY_FORMS = "expected the PEM file `benchwh keys generate` writes, or a raw or base64 32-byte seed"


def load_private_key(path: Path | str) -> Ed25519PrivateKey:
    """Read a private key written by write_private_key (PEM), or a raw 32-byte seed."""
    data = Path(path).read_bytes()
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_private_key(data, password=None)
        elif len(data) == 32:
            key = Ed25519PrivateKey.from_private_bytes(data)
        else:
            key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(data.strip(), validate=True))
    except (ValueError, TypeError, binascii.Error):
        raise ValueError(f"{path}: not an Ed25519 private key ({KEY_FORMS})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 private key (a {type(key).__name__.lstrip('_')} key; "
                         f"{KEY_FORMS})")
    return key


def public_key_of(private_key: Ed25519PrivateKey) -> bytes:
    return _public_raw(private_key.public_key())


def sign_payload(payload_bytes: bytes, private_key: Ed25519PrivateKey,
                 payload_type: str = PAYLOAD_TYPE) -> dict:
    """The DSSE envelope (a dict ready for json.dumps) signing exactly `payload_bytes`."""
    sig = private_key.sign(pae(payload_type, payload_bytes))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(payload_bytes).decode("ascii"),
        "signatures": [{"keyid": keyid_for(public_key_of(private_key)),
                        "sig": base64.b64encode(sig).decode("ascii")}],
    }


def _b64(value, what: str) -> bytes:
    if not isinstance(value, str):
        raise RunRejected(f"envelope {what} is not a base64 string", "bad_base64")
    try:
        return base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        # URL-safe alphabet is allowed by DSSE; anything else is not base64
        try:
            padded = value.strip() + "=" * (-len(value.strip()) % 4)
            if not all(c.isalnum() or c in "-_=" for c in padded):
                raise ValueError
            return base64.urlsafe_b64decode(padded)
        except (binascii.Error, ValueError):
            raise RunRejected(f"envelope {what} is not valid base64", "bad_base64") from None


def parse_envelope(envelope_bytes: bytes) -> dict:
    if len(envelope_bytes) > MAX_ENVELOPE_BYTES:
        raise RunRejected(f"envelope larger than {MAX_ENVELOPE_BYTES} bytes", "too_large")
    try:
        env = json.loads(envelope_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise RunRejected("envelope is not valid UTF-8 JSON", "malformed_envelope") from None
    if not isinstance(env, dict):
        raise RunRejected("envelope is not a JSON object", "malformed_envelope")
    missing = [k for k in ("payloadType", "payload", "signatures") if k not in env]
    if missing:
        raise RunRejected(f"envelope lacks {', '.join(missing)}", "malformed_envelope")
    if env["payloadType"] != PAYLOAD_TYPE:
        shown = str(env["payloadType"])[:80]
        raise RunRejected(f"wrong payloadType {shown!r} (expected {PAYLOAD_TYPE})", "wrong_payload_type")
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise RunRejected("envelope has no signatures", "unsigned")
    if len(sigs) > MAX_SIGNATURES:
        raise RunRejected(f"envelope has more than {MAX_SIGNATURES} signatures", "malformed_envelope")
    for s in sigs:
        if not isinstance(s, dict) or not isinstance(s.get("sig"), str):
            raise RunRejected("envelope signature entry lacks a sig string", "malformed_envelope")
        if "keyid" in s and not isinstance(s["keyid"], str):
            raise RunRejected("envelope signature keyid is not a string", "malformed_envelope")
    return env


def verify_envelope(envelope_bytes: bytes, trusted_keys: list[TrustedKey] | dict | None) -> VerifiedRun:
    """Check a DSSE envelope against the trusted keys.

    - a valid signature by a trusted key -> trust `signed`;
    - a signature by a trusted keyid that does not verify -> RunRejected (payload or signature
      altered);
    - a well-formed signature whose keyid names no trusted key -> `unverified`: without the
      public key nobody can check it, so it proves nothing but is not evidence of tampering.
    Malformed envelopes (JSON, base64, payloadType, signature length) -> RunRejected.
    """
    env = parse_envelope(envelope_bytes)
    payload = _b64(env["payload"], "payload")
    message = pae(env["payloadType"], payload)
    trusted = {k.keyid: k for k in _as_keys(trusted_keys)}
    failed = None
    unknown = None
    for s in env["signatures"]:
        sig = _b64(s["sig"], "signature")
        if len(sig) != 64:
            raise RunRejected("signature is not 64 bytes (Ed25519)", "bad_signature")
        keyid = (s.get("keyid") or "").strip().lower()
        candidates = [trusted[keyid]] if keyid in trusted else ([] if keyid else list(trusted.values()))
        for key in candidates:
            if _verifies(key.public_key, sig, message):
                return VerifiedRun(payload, "signed", key.keyid, key.contributor)
        if keyid in trusted:
            failed = keyid
        elif unknown is None and keyid:
            unknown = keyid
    if failed:
        raise RunRejected(f"signature by trusted key {failed[:12]} does not verify "
                          "(payload or signature altered)", "bad_signature")
    return VerifiedRun(payload, "unverified", unknown, None)


def _verifies(public_raw: bytes, sig: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(sig, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def _as_keys(trusted_keys) -> list[TrustedKey]:
    if not trusted_keys:
        return []
    if isinstance(trusted_keys, dict):
        return parse_trusted_keys(trusted_keys)
    return list(trusted_keys)


def parse_trusted_keys(doc: dict) -> list[TrustedKey]:
    """Read the trusted_keys.json document; a bad entry is an error (the file is ours)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("keys", []), list):
        raise ValueError('trusted_keys.json must be {"keys": [...]}')
    out = []
    for i, item in enumerate(doc.get("keys", [])):
        try:
            raw = base64.b64decode(item["public_key"], validate=True)
        except (KeyError, TypeError, binascii.Error, ValueError):
            raise ValueError(f"trusted_keys.json key #{i}: public_key is not base64") from None
        if len(raw) != 32:
            raise ValueError(f"trusted_keys.json key #{i}: public_key is not 32 bytes")
        keyid = keyid_for(raw)
        if item.get("keyid") and item["keyid"].lower() != keyid:
            raise ValueError(f"trusted_keys.json key #{i}: keyid does not match its public_key")
        out.append(TrustedKey(keyid, raw, str(item.get("contributor") or "")))
    return out


def load_trusted_keys(home: Path | str) -> list[TrustedKey]:
    """Keys in $BENCHWH_HOME/trusted_keys.json (none when the file does not exist)."""
    path = Path(home) / TRUSTED_KEYS_FILE
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg})") from None
    return parse_trusted_keys(doc)


def trust_key(home: Path | str, public_key_b64: str, contributor: str) -> TrustedKey:
    """Add (or rename) a trusted key in $BENCHWH_HOME/trusted_keys.json, written atomically."""
    try:
        raw = base64.b64decode(public_key_b64.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("public key is not base64") from None
    if len(raw) != 32:
        raise ValueError("public key is not a raw 32-byte Ed25519 key in base64")
    if not contributor.strip():
        raise ValueError("contributor name is empty")
    path = Path(home) / TRUSTED_KEYS_FILE
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"keys": []}
    parse_trusted_keys(doc)  # refuse to extend a broken file
    key = TrustedKey(keyid_for(raw), raw, contributor.strip())
    keys = [k for k in doc.get("keys", []) if k.get("keyid") != key.keyid]
    keys.append({"keyid": key.keyid, "public_key": base64.b64encode(raw).decode("ascii"),
                 "contributor": key.contributor})
    doc["keys"] = keys
    write_atomically(path, json.dumps(doc, indent=2) + "\n")
    return key
