"""The parts of class mode that need no browser: the teacher's key guard (constant-time comparison, a delay on
each wrong key, a lockout after too many), the time cap on a computation, and ``headprune serve``'s command."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest

from headprune_core.base.progress import TimeCapExceeded, report, time_cap
from headprune_core.cli.serve import class_lines, secrets_key, serve_command


def test_the_key_guard_delays_wrong_keys_and_locks_after_too_many():
    from headprune_app.roles import KeyGuard

    slept = []
    guard = KeyGuard(max_tries=3, window_s=600, lockout_s=300, delay_s=1.0)
    ok, msg = guard.check("secret", "secret", now=0.0, sleep=slept.append)
    assert ok and not slept
    for i, now in enumerate((1.0, 2.0), 1):
        ok, msg = guard.check("guess", "secret", now=now, sleep=slept.append)
        assert not ok and f"{i} of 3" in msg
    assert slept == [1.0, 2.0]  # each wrong key waits longer
    ok, msg = guard.check("guess", "secret", now=3.0, sleep=slept.append)
    assert not ok and "no key is taken from here for 300 s" in msg
    ok, msg = guard.check("secret", "secret", now=10.0, sleep=slept.append)  # even the right key, while locked
    assert not ok and "Too many wrong keys" in msg
    ok, _ = guard.check("secret", "secret", now=304.0, sleep=slept.append)  # the lockout is over
    assert ok
    ok, msg = guard.check("anything", None, now=400.0, sleep=slept.append)
    assert not ok and "HEADPRUNE_TEACHER_KEY" in msg


def test_wrong_keys_lock_their_caller_and_its_address_not_another():
    """Counted per identity: a student's session and their address are locked; the teacher's session elsewhere
    unlocks; another session from the student's address is held too (opening session after session does not help)."""
    from headprune_app.roles import KeyGuard

    guard = KeyGuard(max_tries=3, window_s=600, lockout_s=300, delay_s=0.0)
    student = ("session:a", "address:10.0.0.7")
    for now in (1.0, 2.0, 3.0):
        ok, _ = guard.check("guess", "secret", who=student, now=now, sleep=lambda s: None)
    ok, msg = guard.check("secret", "secret", who=student, now=4.0, sleep=lambda s: None)
    assert not ok and "from here" in msg
    ok, _ = guard.check("secret", "secret", who=("session:t", "address:10.0.0.2"), now=4.0, sleep=lambda s: None)
    assert ok
    ok, _ = guard.check("secret", "secret", who=("session:b", "address:10.0.0.7"), now=5.0, sleep=lambda s: None)
    assert not ok


def test_a_time_cap_stops_work_at_its_next_step_and_only_inside_the_block():
    seen = []
    with time_cap(60):
        report(lambda *a: seen.append(a), "evaluating", 1, 3)  # well inside the cap
    with time_cap(0.0), pytest.raises(TimeCapExceeded, match="ran past the cap of 0 s"):
        import time
        time.sleep(0.01)
        report(None, "evaluating", 2, 3)
    report(None, "evaluating", 3, 3)  # no cap outside the block
    assert seen == [("evaluating", 1, 3)]


def _args(**kw) -> Namespace:
    return Namespace(**{"class_mode": False, "port": 8501, "address": None, "student_cap": None,
                        "streamlit_args": [], **kw})


def test_serve_starts_streamlit_and_class_mode_needs_a_key(tmp_path):
    root = Path(__file__).resolve().parents[2]
    argv, env = serve_command(_args(streamlit_args=["--theme.base", "dark"]), root=root,
                              environ={"HEADPRUNE_CLASS": "1"})
    assert argv[1:5] == ["-m", "streamlit", "run", str(root / "app.py")] and argv[-2:] == ["--theme.base", "dark"]
    assert "HEADPRUNE_CLASS" not in env  # the single user's dashboard, whatever the shell had
    with pytest.raises(ValueError, match="class mode needs the teacher's key"):
        serve_command(_args(class_mode=True), root=root, environ={"HOME": str(tmp_path)})
    argv, env = serve_command(_args(class_mode=True, student_cap=30), root=root,
                              environ={"HEADPRUNE_TEACHER_KEY": "k"})
    assert env["HEADPRUNE_CLASS"] == "1" and env["HEADPRUNE_STUDENT_CAP_S"] == "30"
    assert "--client.toolbarMode" in argv and "k" not in argv  # the key never on the command line
    opts = dict(zip(argv[7::2], argv[8::2]))
    assert opts["--client.showErrorDetails"] == "none" and opts["--server.maxUploadSize"] == "1"
    token = env["HEADPRUNE_UNLOCK_TOKEN"]
    assert len(token) >= 24 and token not in argv  # the one-time link's token: in the environment only
    lines = class_lines(_args(class_mode=True), env)
    assert any("only" in line and "--address 0.0.0.0" in line for line in lines)
    assert any(f"?unlock={token}" in line for line in lines)
    argv, env2 = serve_command(_args(class_mode=True, uploads=50, address="0.0.0.0"), root=root,
                               environ={"HEADPRUNE_TEACHER_KEY": "k"})
    assert dict(zip(argv[5::2], argv[6::2]))["--server.maxUploadSize"] == "50"
    assert env2["HEADPRUNE_UNLOCK_TOKEN"] != token  # a new link for each start
    assert not any("only" in line for line in class_lines(_args(class_mode=True, address="0.0.0.0"), env2))
    for option, value in (("uploads", 50), ("student_cap", 30)):  # said, never ignored, without --class
        with pytest.raises(ValueError, match=f"--{option.replace('_', '-')} apply to class mode only"):
            serve_command(_args(**{option: value}), root=root, environ={"HEADPRUNE_TEACHER_KEY": "k"})
    with pytest.raises(ValueError, match="not beside the package"):
        serve_command(_args(), root=tmp_path, environ={})


def test_the_key_can_come_from_streamlit_secrets(tmp_path):
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('teacher_key = "from-secrets"\n')
    assert secrets_key([tmp_path / "nothing", tmp_path]) == "from-secrets"
    (tmp_path / ".streamlit" / "secrets.toml").write_text("teacher_key = \n")
    with pytest.raises(ValueError, match="secrets.toml: not readable as TOML"):
        secrets_key([tmp_path])


def test_exports_run_one_at_a_time_and_a_repeat_is_served_from_the_last():
    """Three clicks at once on three charts' exports build one after the other (never two Chromiums at once); a
    repeat click of the same chart builds nothing."""
    import threading
    import time

    from headprune_app import exports

    running, most, builds = [0], [0], []
    lock = threading.Lock()

    def build(name):
        def run():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
            builds.append(name)
            return name.encode()
        return run

    tag = str(time.time())  # keys of this test only
    clicks = [threading.Thread(target=exports.deferred(lambda n=n: exports.build_key(tag, n), build(n)))
              for n in ("a", "b", "c")]
    for t in clicks:
        t.start()
    for t in clicks:
        t.join()
    assert most[0] == 1 and sorted(builds) == ["a", "b", "c"]
    assert exports.one_at_a_time(exports.build_key(tag, "a"), build("again")) == b"a" and "again" not in builds
