"""The deploy around a boot: what the container engine says of the run (image, digest, command,
environment, restarts, exit) and the plan's env file as it was, and the diff of two of them.

A deploy context is a plain dict (the `"deploy"` object of `show --json`, docs/figures.md):

    {"engine": "podman", "container": "frank-primary-qwen", "container_id": "5d72…",
     "image": "docker.io/tcclaviger/vllm@sha256:da40…",   # the reference as run
     "image_id": "sha256:3322…",                          # the local image id
     "image_digest": "sha256:da40…",                      # None when the engine knows none
     "command": ["/bin/sh", "-c", "…"],                   # entrypoint + args, secrets redacted
     "env": {"HF_TOKEN": "<redacted>", "GPU_MAX_HW_QUEUES": "2", …},
     "restart_count": 2, "status": "exited",
     "started_at": "2026-12-01T20:18:42.842036573Z", "finished_at": "…" | None,
     "exit_code": 3 | None, "oom_killed": False | None,   # None while it runs
     "mounts": [{"destination": "/root/.cache", "source": "/home/dank/.cache/frank-primary",
                 "type": "bind", "rw": True}, …]}

`env_file` (the plan's env file, `env_file_snapshot`) is added by the caller under "env_file".

Secret-looking names (`redact`): a name is split into words at `_`, `-`, `.` and camelCase humps;
it looks secret when a word is, or ends with, TOKEN, KEY(S), SECRET(S), PASSWORD(S), PASSWD or
PASSPHRASE, or a word is exactly PASS. So HF_TOKEN, AWS_SECRET_ACCESS_KEY, VLLM_API_KEY, APIKEY, PGPASSWORD and
DB_PASS are redacted, while PATH, KEYBOARD, MAX_NUM_BATCHED_TOKENS, KV_BYTES, BYPASS and
SSL_KEYFILE are not: a plain substring rule would hide those figures' changes from every diff
(a redacted value never differs). Values in the command line get the same rule (`--api-key X`,
`--hf-token=X`, `HF_TOKEN=X` inside a `sh -c` script).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bootlog.read import podman
from bootlog.errors import SourceError
from bootlog.safe import one_line
from bootlog.shown import Finding

REDACTED = "<redacted>"

# ------------------------------------------------------------------------------------ redaction

_SECRET_SUFFIXES = ("TOKEN", "KEY", "KEYS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE")
_SECRET_WORDS = frozenset({"PASS"})  # only as a whole word: BYPASS, COMPASS are not secrets
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[_\-.\s]+")


def is_secret_name(name: str) -> bool:
    """True when a variable or flag name looks like it holds a credential (module docstring)."""
    words = _WORD_SPLIT.split(_HUMP.sub("_", str(name)).upper())
    return any(w in _SECRET_WORDS or w.endswith(_SECRET_SUFFIXES) for w in words if w)


# the password of a URL's user info (DATABASE_URL=postgres://user:pw@host, a proxy URL)
_URL_CREDS = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)(@)")


def _redact_url_creds(s: str) -> str:
    return _URL_CREDS.sub(lambda m: f"{m[1]}{REDACTED}{m[3]}", s)


def redact(env: dict[str, str]) -> dict[str, str]:
    """A copy of `env` with the values of secret-looking names replaced by "<redacted>" (and the
    password of a URL in any other value: `postgres://user:<redacted>@db`)."""
    return {
        k: (REDACTED if is_secret_name(k) else _redact_url_creds(v) if isinstance(v, str) else v)
        for k, v in env.items()
    }


# NAME=value inside a shell script string (`sh -c 'HF_TOKEN=… exec vllm serve'`)
_ASSIGN = re.compile(r"(?<![\w-])([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)")
# --flag=value or --flag value inside a script string
_FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|\s+)(\"[^\"]*\"|'[^']*'|[^\s-]\S*)")


def _redact_text(s: str) -> str:
    s = _redact_url_creds(s)
    s = _ASSIGN.sub(lambda m: f"{m[1]}={REDACTED}" if is_secret_name(m[1]) else m[0], s)
    return _FLAG_IN_TEXT.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}" if is_secret_name(m[1].lstrip("-")) else m[0], s)


def redact_args(args: list[str]) -> list[str]:
    """A command line with the values of secret-looking flags and assignments redacted:
    `--api-key X` / `--api-key=X` / `-e HF_TOKEN=X` as separate words, and the same forms inside
    one word that is a whole script (`sh -c '…'`)."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next and not arg.startswith("-"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        flag, eq, _value = arg.partition("=")
        if arg.startswith("-") and not eq and is_secret_name(arg.lstrip("-")):
            out.append(arg)
            hide_next = True  # the next word is its value
        elif arg.startswith("-") and eq and is_secret_name(flag.lstrip("-")):
            out.append(f"{flag}={REDACTED}")
        else:
            out.append(_redact_text(arg))
    return out


# ---------------------------------------------------------------------------- inspect -> context

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_HEX_ID = re.compile(r"(?:sha256:)?([0-9a-f]{64})")


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v != "" else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _str_list(v: Any) -> list[str] | None:
    """A list of strings, or a string split at spaces (podman 4.3.1 prints Entrypoint as the
    list joined by spaces); None for anything else."""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    if isinstance(v, str):
        return v.split()
    return None


def _time(v: Any) -> str | None:
    """RFC 3339 UTC with nanoseconds, or None (Go's zero time, missing, unreadable)."""
    if not isinstance(v, str):
        return None
    try:
        ns = podman.parse_time(v)
    except SourceError:
        return None
    return None if ns is None else podman.format_time(ns)


def _digest_in_ref(ref: str | None) -> str | None:
    """The digest of a reference written `name@sha256:…` (how the seeds pin the image)."""
    if ref and "@" in ref:
        m = _DIGEST.fullmatch(ref.rpartition("@")[2])
        return m.group(0) if m else None
    return None


def _repo_of(ref: str) -> str:
    """`registry/name` of a reference, without its tag or digest."""
    name = ref.partition("@")[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _repo_digest(image_doc: Any, ref: str | None) -> str | None:
    """docker: the digest from the image's RepoDigests, preferring the repository the container
    was run from (the manifest digest is the same bytes in every repository it was pushed to)."""
    if not isinstance(image_doc, dict):
        return None
    digests = [d for d in (image_doc.get("RepoDigests") or []) if isinstance(d, str)]
    want = _repo_of(ref) if ref else None
    for d in sorted(digests, key=lambda d: _repo_of(d) != want):
        got = _digest_in_ref(d)
        if got:
            return got
    return None


def _env_dict(v: Any) -> dict[str, str]:
    env: dict[str, str] = {}
    if isinstance(v, list):
        for item in v:
            if isinstance(item, str) and item:
                key, _, value = item.partition("=")
                env[key] = value
    return env


def context_from_inspect(doc: Any, engine: str = "podman", image: Any = None) -> dict:
    """The deploy context (module docstring) of one container's `inspect` JSON object.

    `image`: docker's `image inspect` object of the container's image, whose RepoDigests hold
    the digest (docker's container object has none); podman needs none (`.ImageDigest`).
    Missing or odd-typed fields become None; a `doc` that is not an object is a SourceError.
    """
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]  # `inspect` prints a list of one
    if not isinstance(doc, dict):
        raise SourceError(f"{engine} inspect: expected one container object, got {_kind(doc)}")
    config = doc.get("Config") if isinstance(doc.get("Config"), dict) else {}
    state = doc.get("State") if isinstance(doc.get("State"), dict) else {}

    ref = _str(doc.get("ImageName")) or _str(config.get("Image"))
    raw_id = _str(doc.get("Image"))
    id_match = _HEX_ID.fullmatch(raw_id) if raw_id else None
    image_id = f"sha256:{id_match.group(1)}" if id_match else None
    if ref is None and raw_id and not id_match:
        ref = raw_id  # an engine that names the image here

    digest = _digest_in_ref(ref)
    if digest is None:
        podman_digest = _str(doc.get("ImageDigest"))
        digest = podman_digest if podman_digest and _DIGEST.fullmatch(podman_digest) else None
    if digest is None:
        digest = _repo_digest(image, ref)
    if digest is None:  # docker with the containerd image store
        desc = doc.get("ImageManifestDescriptor")
        d = _str(desc.get("digest")) if isinstance(desc, dict) else None
        digest = d if d and _DIGEST.fullmatch(d) else None

    path, args = _str(doc.get("Path")), _str_list(doc.get("Args"))
    declared = [*(_str_list(config.get("Entrypoint")) or []), *(_str_list(config.get("Cmd")) or [])]
    if path is not None and isinstance(doc.get("Args"), (list, type(None))):
        # the argv the engine ran: Path + Args in both engines, except that podman 4.3.1 puts
        # Path first in Args too when the command is a lone word (`run IMAGE /bin/replay`, an
        # entrypoint without a cmd): Args then is the whole argv the image and run line declare
        whole = bool(args) and args[0] == path and args == declared
        command = list(args or []) if whole else [path, *(args or [])]
    else:
        command = declared

    running = _bool(state.get("Running"))
    ended = running is False
    return {
        "engine": engine,
        "container": (_str(doc.get("Name")) or "").lstrip("/") or None,
        "container_id": _str(doc.get("Id")) or _str(doc.get("ID")),
        "image": ref,
        "image_id": image_id,
        "image_digest": digest,
        "command": redact_args(command),
        "env": redact(_env_dict(config.get("Env"))),
        "restart_count": _int(doc.get("RestartCount")),
        "status": _str(state.get("Status")),
        "started_at": _time(state.get("StartedAt")),
        # exit code and OOM flag mean something only once the run ended (0/false while running)
        "finished_at": _time(state.get("FinishedAt")) if ended else None,
        "exit_code": _int(state.get("ExitCode")) if ended else None,
        "oom_killed": _bool(state.get("OOMKilled")) if ended else None,
        "mounts": _mounts(doc.get("Mounts")),
    }


def _mounts(v: Any) -> list[dict] | None:
    """The container's mounts, by destination: {"destination", "source", "type", "rw"} (a
    missing /root/.cache mount re-paid the seeds' 184 s compile on every deploy); a source path
    that looks secret is kept (a path, not a value), a named volume's source is its name."""
    if not isinstance(v, list):
        return None
    out = []
    for m in v:
        if not isinstance(m, dict) or not _str(m.get("Destination")):
            continue
        out.append(
            {
                "destination": m["Destination"],
                "source": _str(m.get("Source")) or _str(m.get("Name")),
                "type": _str(m.get("Type")),
                "rw": _bool(m.get("RW")),
            }
        )
    return sorted(out, key=lambda m: m["destination"])


def _kind(v: Any) -> str:
    if isinstance(v, list):
        return f"a list of {len(v)}"
    return {dict: "an object", str: "a string", type(None): "null", bool: "a boolean"}.get(type(v), type(v).__name__)


def _parse_inspect(out: str, engine: str, name: str, what: str = "inspect") -> dict:
    try:
        data = json.loads(out)
    except (json.JSONDecodeError, RecursionError) as err:
        raise SourceError(f"{engine} {what} {name}: output is not JSON ({one_line(err, 80)})", container=name) from None
    if isinstance(data, list) and not data:
        thing = "image" if what.startswith("image") else "container"
        raise SourceError(f"no such {thing}: {name}", container=name)
    if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
        raise SourceError(f"{engine} {what} {name}: expected a list of one object, got {_kind(data)}", container=name)
    return data[0]


def _engine(engine: str, args: list[str], name: str, what: str, timeout: float) -> str:
    """podman.py's runner, its error made one printable line (the engine's stderr is quoted in
    it and may hold anything)."""
    try:
        return podman.run_engine(engine, args, name, what, timeout)
    except SourceError as e:
        raise SourceError(one_line(str(e), 300), **e.data) from None


def inspect(name: str, engine: str = "podman", timeout: float = 10) -> dict:
    """`<engine> inspect --type container NAME` as a dict, through podman.py's runner (same
    binary/args environment, name check, process-group kill on timeout, one-line errors).
    Missing container, engine not installed, timeout, non-JSON or odd JSON: SourceError."""
    out = _engine(engine, ["inspect", "--type", "container", name], name, "inspect", timeout)
    return _parse_inspect(out, engine, name)


def inspect_image(image_id: str, engine: str = "docker", timeout: float = 10) -> dict:
    """`<engine> image inspect ID` as a dict (docker keeps a container's digest there)."""
    hexid = image_id.removeprefix("sha256:")
    out = _engine(engine, ["image", "inspect", hexid], hexid, "image inspect", timeout)
    return _parse_inspect(out, engine, hexid, "image inspect")


def deploy_context(name: str, engine: str = "podman", timeout: float = 10) -> dict:
    """`inspect` + `context_from_inspect`; for docker also the image's RepoDigests. A failing
    `image inspect` only leaves the digest unknown."""
    doc = inspect(name, engine, timeout)
    image = None
    config = doc.get("Config") if isinstance(doc.get("Config"), dict) else {}
    if engine == "docker" and _digest_in_ref(_str(config.get("Image"))) is None:
        raw = _str(doc.get("Image"))
        if raw and _HEX_ID.fullmatch(raw):
            try:
                image = inspect_image(raw, engine, timeout)
            except SourceError:
                image = None
    return context_from_inspect(doc, engine, image)


# ----------------------------------------------------------------------------------- env file


def _text(v: Any) -> str:
    """An env-file value as envfile.load_env coerced it, back as text (None -> "")."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def env_file_snapshot(path: str | Path) -> dict[str, str]:
    """The env file as it is now, redacted, through the plan's own reader (envfile.load_env: comments,
    blank lines, `export`, quotes, `${NAME}`; PlanError with the line for a bad file). Values are
    its coerced values written back as text, so `1.00` reads `1.0` and `yes` reads `true`."""
    from bootlog.read.envfile import load_env

    return redact({k: _text(v) for k, v in load_env(path).items()})


# ----------------------------------------------------------------------------------- findings

# Keys of the context that describe what was deployed (causes). restart_count, exit_code,
# started_at and oom_killed are what happened to it (outcomes): they feed crash_loop, never
# the explanation of a capacity move, so they are not diffed here.
_TOP_KEYS = ("image_digest", "image", "image_id", "command")
# The engine sets HOSTNAME to the container's short id: it differs for every new container.
_ENGINE_ENV = frozenset({"HOSTNAME"})
_WHY = {
    "image_digest": "different image bytes",
    "image": "the image reference changed",
    "image_id": "a different local image",
    "command": "the command line changed",
}


def _finding(key: str, old: Any, new: Any, verdict: str, why: str) -> Finding:
    """A deploy row; deploy values are text, so no delta and no percentage."""
    return Finding(key, "deploy", None, old, new, None, None, verdict, why)


def _verdict(key: str, has_old: bool, has_new: bool, old: Any, new: Any) -> Finding:
    if not has_old:
        return _finding(key, None, new, "new", "")
    if not has_new:
        return _finding(key, old, None, "gone", "")
    if old == new:
        return _finding(key, old, new, "same", "")
    return _finding(key, old, new, "changed", _WHY.get(key, ""))


def _mount_map(mounts: Any) -> dict[str, str] | None:
    """destination -> "source (ro)" / "source" of a context's mounts; None when it has none known."""
    if not isinstance(mounts, list):
        return None
    return {
        m["destination"]: f"{m.get('source') or '?'}{' (ro)' if m.get('rw') is False else ''}"
        for m in mounts
        if isinstance(m, dict) and m.get("destination")
    }


def deploy_findings(old: dict | None, new: dict | None) -> list[Finding]:
    """Findings (section "deploy") between an older and a newer deploy context, in a stable
    order: image_digest, image, image_id (only when neither side knows a digest, else it repeats
    the digest's news), command, then mount.DESTINATION, env.NAME and env_file.NAME by name. Verdicts: same,
    changed, new (only in `new`), gone (only in `old`). [] when either side is missing (a boot
    read from a plain file has no deploy to compare)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return []
    if not any(old.get(k) is not None for k in _TOP_KEYS) or not any(new.get(k) is not None for k in _TOP_KEYS):
        return []  # (an earlier run's exit alone, from its died event: nothing deployed to compare)
    out = []
    no_digest = old.get("image_digest") is None and new.get("image_digest") is None
    for key in _TOP_KEYS:
        if key == "image_id" and not no_digest:
            continue
        a, b = old.get(key), new.get(key)
        if a is None and b is None:
            continue
        out.append(_verdict(key, a is not None, b is not None, a, b))
    a, b = _mount_map(old.get("mounts")), _mount_map(new.get("mounts"))
    if a is not None and b is not None:  # (a context stored before mounts were read has none)
        for dest in sorted(set(a) | set(b)):
            found = _verdict(f"mount.{dest}", dest in a, dest in b, a.get(dest), b.get(dest))
            if found.verdict == "gone":
                found.why = "the mount is gone: what the run kept there (a compile cache) starts empty"
            elif found.verdict == "changed":
                found.why = "mounted from elsewhere"
            out.append(found)
    for section in ("env", "env_file"):
        a = old.get(section) if isinstance(old.get(section), dict) else None
        b = new.get(section) if isinstance(new.get(section), dict) else None
        if a is None or b is None:
            continue  # one side never read it (no --plan): nothing to say about its names
        for name in sorted(set(a) | set(b)):
            if section == "env" and name in _ENGINE_ENV:
                continue
            out.append(_verdict(f"{section}.{name}", name in a, name in b, a.get(name), b.get(name)))
    return out
