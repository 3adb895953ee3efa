"""``headprune serve``: start the dashboard (``streamlit run app.py``), for one user or, with ``--class``, for a
class: student sessions read the cache and do not change it, the teacher unlocks with a key
(:mod:`headprune_app.roles`)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tomllib
from pathlib import Path

from headprune_core.base.cache import SOURCE_ROOT, is_checkout
from headprune_core.base.defaults import (
    CLASS_ENV,
    CLASS_STREAMLIT,
    CLASS_UPLOAD_ENV,
    CLASS_UPLOAD_MB,
    STUDENT_CAP_ENV,
    TEACHER_KEY_ENV,
    UNLOCK_ENV,
)


def class_args(uploads_mb: int = CLASS_UPLOAD_MB) -> list[str]:
    """Streamlit's own settings for a class as command-line options (:data:`CLASS_STREAMLIT`), with the largest
    upload taken, in MB."""
    settings = {**CLASS_STREAMLIT, "server.maxUploadSize": str(uploads_mb)}
    return [v for name, value in settings.items() for v in (f"--{name}", value)]


def secrets_key(folders: list[Path]) -> str | None:
    """``teacher_key`` of the first ``.streamlit/secrets.toml`` in ``folders`` that has one (Streamlit reads the
    project's and the user's); None if none does. An unreadable file is an error naming it."""
    for folder in folders:
        path = folder / ".streamlit" / "secrets.toml"
        if not path.is_file():
            continue
        try:
            key = tomllib.loads(path.read_text()).get("teacher_key")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: not readable as TOML ({err})") from None
        if key:
            return str(key)
    return None


def serve_command(args, *, root: Path = SOURCE_ROOT, environ=None) -> tuple[list[str], dict]:
    """(argv, environment) that start the dashboard for ``args`` (``--class``, ``--port``, ``--address`` and
    Streamlit's own options after ``--``)."""
    environ = dict(os.environ if environ is None else environ)
    if not is_checkout(root):
        raise ValueError(f"the dashboard's app.py is not beside the package in {root}: run 'headprune serve' from "
                         "a checkout of headprune (git clone), or 'streamlit run app.py' there")
    class_only = [f"--{name}" for name, value in (("student-cap", args.student_cap),
                                                   ("uploads", getattr(args, "uploads", None))) if value]
    if class_only and not args.class_mode:
        raise ValueError(f"{' and '.join(class_only)} apply to class mode only: add --class, or leave them out")
    argv = [sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.port", str(args.port)]
    if args.address:
        argv += ["--server.address", args.address]
    if args.class_mode:
        if not (environ.get(TEACHER_KEY_ENV) or secrets_key([root, Path.home()])):
            raise ValueError(f"class mode needs the teacher's key: set {TEACHER_KEY_ENV} (e.g. export "
                             f"{TEACHER_KEY_ENV}=$(python -c 'import secrets; print(secrets.token_urlsafe(12))')) "
                             "or teacher_key in .streamlit/secrets.toml")
        environ[CLASS_ENV] = "1"
        if args.student_cap:
            environ[STUDENT_CAP_ENV] = str(args.student_cap)
        uploads = getattr(args, "uploads", None) or CLASS_UPLOAD_MB
        environ[CLASS_UPLOAD_ENV] = str(uploads)
        environ[UNLOCK_ENV] = secrets.token_urlsafe(24)
        argv += class_args(uploads)
    else:
        for name in (CLASS_ENV, UNLOCK_ENV, CLASS_UPLOAD_ENV):
            environ.pop(name, None)
    return argv + list(args.streamlit_args or []), environ


def class_lines(args, environ: dict) -> list[str]:
    """What the teacher reads when a class-mode server starts: where students connect, and the one-time link
    that unlocks the teacher's session whatever wrong keys students tried."""
    where = args.address or "localhost"
    lines = [f"Students open http://<this machine's address>:{args.port}/ (listening on {where})."]
    if not args.address:
        lines.append("Listening on localhost only: students on other machines cannot connect. Add --address "
                     "0.0.0.0 to serve the lab network; beyond it, put the standard reverse proxy with TLS in "
                     "front (README, class mode).")
    lines.append(f"Teacher, once: http://{where if args.address not in (None, '0.0.0.0') else 'localhost'}:"
                 f"{args.port}/?unlock={environ[UNLOCK_ENV]} unlocks the first session that opens it (then it is "
                 "spent; the key still works).")
    return lines


def cmd_serve(args) -> int:
    argv, environ = serve_command(args)
    mode = "class mode: students read, the teacher unlocks with the key" if args.class_mode else "single user"
    print(f"headprune dashboard on port {args.port} ({mode}); Ctrl+C stops it.", file=sys.stderr)
    for line in class_lines(args, environ) if args.class_mode else ():
        print(line, file=sys.stderr)
    return subprocess.run(argv, env=environ, cwd=str(Path(argv[4]).parent)).returncode
