"""The SSH follower against a real sshd on 127.0.0.1 (started by conftest, throwaway keys)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.ssh.connection import SshError
from fontaine_tui.core.ssh.destination import SshTarget
from tests.core.follow.followkit import Collector, append, event_line, train_line
from tests.sshd_helper import HOST_ALIAS, free_port

pytestmark = pytest.mark.ssh
LOG = "train_log.jsonl"


def source(sshd, folder: Path | str, **kw) -> SshRun:
    kw.setdefault("backoff", (0.1, 1.0))
    return SshRun(SshTarget(HOST_ALIAS, str(folder)), ssh_options=sshd.ssh_options, **kw)


def follow_scripts(folder: Path) -> list[psutil.Process]:
    """The remote follow scripts started for this run folder (their command line names it)."""
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if (
            p.info["name"] in ("sh", "dash")
            and "fontaine" in cmd
            and str(folder) in cmd
            and "@fontaine ok" in " ".join(cmd)
        ):
            out.append(p)
    pids = {p.pid for p in out}
    return [p for p in out if p.ppid() not in pids]  # not the shell loop's subshells


def tails_for(folder: Path) -> list[psutil.Process]:
    """Every remote process of this folder's follow scripts: each script, its subshells, the
    python3 stream or the tail and loops of the shell one, whatever they run."""
    out = []
    for p in follow_scripts(folder):
        try:
            out += [p, *p.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(params=["python3", "shell"])
def stream(request) -> dict:
    """The remote stream in both forms: python3's, and the shell loop of hosts without it."""
    return {"remote_python": request.param == "python3"}


async def gone(procs: list[psutil.Process], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs):
            return True
        await asyncio.sleep(0.05)
    return False


async def cut_client(src: SshRun) -> None:
    pid = await src.master_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)


async def test_cut_mid_line_three_times_at_100_lines_per_s(sshd, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, train_line(1))
    src = source(sshd, run)
    c = Collector(src).start()
    await c.until(lambda: c.steps == [1], timeout=20)
    n, cuts = 400, {100: "client", 200: "server", 300: "client", 350: "server"}
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    for step in range(2, n + 1):
        line = train_line(step)
        os.write(fd, line[: len(line) // 2])
        if step in cuts:
            await c.until(lambda s=step: c.steps[-1] == s - 1, timeout=20)
            if cuts[step] == "client":
                await cut_client(src)
            else:
                assert sshd.cut() > 0
        await asyncio.sleep(0.003)
        os.write(fd, line[len(line) // 2 :])
        await asyncio.sleep(max(0.0, t0 + step * 0.01 - loop.time()))
    os.write(fd, event_line(n + 1, "end"))
    os.close(fd)
    await c.until(lambda: c.steps[-1:] == [n + 1], timeout=30)
    await c.quiet(0.3)
    assert c.steps == list(range(1, n + 2))  # every step once, in order
    assert [k for k, _ in c.lines] == list(range(1, n + 2))
    assert c.segments == 0 and c.store.malformed_count == 0
    assert src.reconnects >= len(cuts)
    assert sum("reconnecting" in note for note in c.notes) >= len(cuts)
    await c.stop()
    assert await gone(tails_for(run))


@pytest.mark.parametrize("side", ["client", "server"])
async def test_remote_tail_dies_with_the_connection(sshd, tmp_path, stream, side):
    run = tmp_path / "idle run"
    run.mkdir()
    append(run / LOG, train_line(1))
    src = source(sshd, run, backoff=(2.0, 2.0), **stream)
    c = Collector(src).start()
    await c.until(lambda: c.steps == [1], timeout=20)
    assert len(follow_scripts(run)) == 1
    before = tails_for(run)
    streamer = "python3" if stream["remote_python"] else "tail"
    assert [p.name() for p in before].count(streamer) == 1
    if side == "client":
        await cut_client(src)
    else:
        sshd.cut()
    # the log is idle: no write will SIGPIPE the old stream, it must go on its own
    assert await gone(before), "orphan process left on the remote"
    append(run / LOG, train_line(2))
    await c.until(lambda: c.steps == [1, 2], timeout=20)
    await c.stop()
    assert await gone(tails_for(run))


async def test_replaced_and_truncated_remote_log_keeps_what_was_read(sshd, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / LOG
    append(log, b"".join(train_line(s) for s in (1, 2, 3)))
    c = Collector(source(sshd, run)).start()
    await c.until(lambda: c.steps == [1, 2, 3], timeout=20)
    os.rename(log, run / "old.jsonl")
    append(log, b"".join(train_line(s) for s in (10, 11)))
    await c.until(lambda: c.segments == 1 and c.steps == [1, 2, 3, 10, 11], timeout=20)
    with open(log, "r+b") as f:
        f.truncate(0)
    await asyncio.sleep(0.2)
    append(log, train_line(20))
    await c.until(lambda: c.steps == [1, 2, 3, 10, 11, 20], timeout=20)
    await c.quiet(0.3)
    assert c.history == [1, 2, 3, ("SEGMENT", LOG), 10, 11, 20]
    assert c.numbering_ok()
    await c.stop()


async def test_rename_rotation_over_ssh_reads_the_rest_of_the_old_file(sshd, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"".join(train_line(s) for s in (1, 2)))
    c = Collector(source(sshd, run)).start()
    await c.until(lambda: c.steps == [1, 2], timeout=20)
    os.rename(log, run / (LOG + ".1"))
    os.write(fd, b"".join(train_line(s) for s in (3, 4)) + train_line(5)[:20])  # old file grows
    os.close(fd)
    append(log, b"".join(train_line(s) for s in (6, 7)))
    await c.until(lambda: c.steps == [1, 2, 3, 4, 6, 7], timeout=20)
    await c.quiet(0.3)
    assert c.history == [1, 2, 3, 4, ("SEGMENT", LOG), 6, 7]
    assert c.store.malformed_count == 1  # the cut line at the old file's end
    assert c.numbering_ok()
    await c.stop()


async def test_copy_truncate_rotation_over_ssh(sshd, tmp_path, stream):
    """Copy, truncate and refill past the old size with no pause: the remote side never sees
    the file shorter than what it sent, and must still not take the new bytes for the old
    file's. The rest comes from .1, the new file after it, nothing twice, nothing lost."""
    import shutil

    for attempt in range(3):  # the race is in the remote poll; three tries at it
        run = tmp_path / f"run{attempt}"
        run.mkdir()
        log = run / LOG
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b"".join(train_line(s) for s in (1, 2)))
        c = Collector(source(sshd, run, **stream)).start()
        await c.until(lambda c=c: c.steps == [1, 2], timeout=20)
        os.write(fd, train_line(3) + train_line(4)[:30])
        shutil.copyfile(log, run / (LOG + ".1"))
        os.ftruncate(fd, 0)
        os.write(fd, train_line(4)[30:] + b"".join(train_line(s) for s in range(5, 9)))
        os.close(fd)
        await c.until(lambda c=c: list(c.store.steps) == list(range(1, 9)), timeout=20)
        await c.quiet(0.3)
        assert list(c.store.steps) == list(range(1, 9)) and c.segments == 0
        assert c.store.malformed_count == 0 and c.store.repeats == 0
        await c.stop()


async def test_copy_truncate_rotations_while_writing_over_ssh(sshd, tmp_path, stream):
    """logrotate's copytruncate three times while lines stream at ~200/s (the writer holds
    still only for the copy and the truncate, which copytruncate itself cannot close)."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    log = run / LOG
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, train_line(1))
    c = Collector(source(sshd, run, **stream)).start()
    await c.until(lambda: c.steps == [1], timeout=20)
    n, rotate_at = 300, (80, 160, 240)
    for step in range(2, n + 1):
        line = train_line(step)
        if step in rotate_at:
            os.write(fd, line[:25])  # a torn line across every rotation
            for k in (3, 2, 1):
                if (run / f"{LOG}.{k}").exists():
                    os.replace(run / f"{LOG}.{k}", run / f"{LOG}.{k + 1}")
            shutil.copyfile(log, run / (LOG + ".1"))
            os.ftruncate(fd, 0)
            os.write(fd, line[25:])
        else:
            os.write(fd, line)
        await asyncio.sleep(0.005)
    os.close(fd)
    await c.until(lambda: list(c.store.steps) == list(range(1, n + 1)), timeout=30)
    await c.quiet(0.3)
    assert list(c.store.steps) == list(range(1, n + 1))
    assert c.store.malformed_count == 0 and c.store.repeats == 0 and c.segments == 0
    await c.stop()


def rotate_copy(run: Path, fd: int, gz_from: int = 2) -> None:
    """logrotate with copytruncate, compress and delaycompress: .1 -> .2.gz, copy, truncate."""
    import gzip
    import shutil

    for k in (3, 2, 1):
        old = run / f"{LOG}.{k}"
        older = run / f"{LOG}.{k + 1}"
        if (run / f"{LOG}.{k}.gz").exists():
            os.replace(run / f"{LOG}.{k}.gz", run / f"{LOG}.{k + 1}.gz")
        if old.exists():
            if k + 1 >= gz_from:
                (run / f"{LOG}.{k + 1}.gz").write_bytes(gzip.compress(old.read_bytes()))
                old.unlink()
            else:
                os.replace(old, older)
    shutil.copyfile(run / LOG, run / f"{LOG}.1")
    os.ftruncate(fd, 0)


async def test_two_copy_truncate_rotations_while_disconnected(sshd, tmp_path, stream):
    """Cut off while the log is rotated twice (the older copy compressed): on reconnect the
    rest comes from .2.gz, then all of .1, then the live file; nothing lost or doubled."""
    run = tmp_path / "run"
    run.mkdir()
    fd = os.open(run / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"".join(train_line(s) for s in range(1, 11)))
    src = source(sshd, run, backoff=(2.0, 2.0), **stream)
    c = Collector(src).start()
    await c.until(lambda: c.steps == list(range(1, 11)), timeout=20)
    await cut_client(src)
    await c.until(lambda: any("reconnecting" in n for n in c.notes), timeout=20)
    os.write(fd, b"".join(train_line(s) for s in range(11, 16)) + train_line(16)[:20])
    rotate_copy(run, fd)
    os.write(
        fd,
        train_line(16)[20:] + b"".join(train_line(s) for s in range(17, 21)) + train_line(21)[:10],
    )
    rotate_copy(run, fd)
    os.write(fd, train_line(21)[10:] + b"".join(train_line(s) for s in range(22, 26)))
    os.close(fd)
    assert sorted(p.name for p in run.iterdir()) == [LOG, LOG + ".1", LOG + ".2.gz"]
    await c.until(lambda: list(c.store.steps) == list(range(1, 26)), timeout=20)
    await c.quiet(0.3)
    assert list(c.store.steps) == list(range(1, 26)) and c.segments == 0
    assert c.store.malformed_count == 0 and c.store.repeats == 0
    assert any(n.endswith(f"the rest read from {LOG}.2.gz") for n in c.notes)
    await c.stop()


async def test_two_rename_rotations_while_disconnected(sshd, tmp_path):
    """Cut off while the log is renamed away twice: the rest of the file we had (now .2),
    then .1 and the live file, each a segment of its own."""
    run = tmp_path / "run"
    run.mkdir()
    append(run / LOG, b"".join(train_line(s) for s in range(1, 6)))
    src = source(sshd, run, backoff=(2.0, 2.0))
    c = Collector(src).start()
    await c.until(lambda: c.steps == list(range(1, 6)), timeout=20)
    await cut_client(src)
    await c.until(lambda: any("reconnecting" in n for n in c.notes), timeout=20)
    append(run / LOG, train_line(6) + train_line(7))
    os.replace(run / LOG, run / (LOG + ".1"))
    append(run / LOG, train_line(8) + train_line(9))
    os.replace(run / (LOG + ".1"), run / (LOG + ".2"))
    os.replace(run / LOG, run / (LOG + ".1"))
    append(run / LOG, train_line(10))
    await c.until(lambda: list(c.store.steps) == list(range(1, 11)), timeout=20)
    await c.quiet(0.3)
    assert [h for h in c.history if isinstance(h, tuple)] == [
        ("SEGMENT", LOG + ".1"),
        ("SEGMENT", LOG),
    ]
    assert c.store.malformed_count == 0 and c.store.repeats == 0
    await c.stop()


async def test_rotated_segments_over_ssh_come_first(sshd, tmp_path):
    import gzip

    run = tmp_path / "run"
    run.mkdir()
    (run / (LOG + ".2.gz")).write_bytes(gzip.compress(train_line(1)))
    (run / (LOG + ".1")).write_bytes(train_line(2))
    append(run / LOG, train_line(3))
    c = Collector(source(sshd, run)).start()
    await c.until(lambda: c.steps == [1, 2, 3], timeout=20)
    assert [h for h in c.history if isinstance(h, tuple)] == [
        ("SEGMENT", LOG + ".2.gz"),
        ("SEGMENT", LOG + ".1"),
        ("SEGMENT", LOG),
    ]
    await c.stop()


async def test_late_file_then_two_files_and_telemetry_over_one_connection(sshd, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    before = {p.pid for p in sshd.connection_processes()}  # another test's, still closing
    src = source(sshd, run)
    log, out = Collector(src).start(), Collector(src, "engine.out.log").start()
    await log.until(lambda: any("waiting for" in n for n in log.notes), timeout=20)
    append(run / LOG, train_line(1))
    append(run / "engine.out.log", b"hello\n")
    await log.until(lambda: log.steps == [1], timeout=20)
    await out.until(lambda: out.lines == [(1, b"hello")], timeout=20)
    meminfo = await src.run_command(["cat", "/proc/meminfo"])
    assert meminfo.startswith(b"MemTotal:")
    assert await src.master_pid() is not None
    # two tails and a telemetry command, one TCP connection (one post-auth sshd process)
    sessions = [
        p
        for p in sshd.connection_processes()
        if p.pid not in before and "@notty" in " ".join(p.cmdline())
    ]
    assert len(sessions) == 1
    await log.stop()
    await out.stop()


async def test_remote_paths_are_quoted_not_interpreted(sshd, tmp_path):
    run = tmp_path / "we ird $(touch PWNED) `touch PWNED2` 'q' \"d\"; ls *"
    run.mkdir()
    append(run / LOG, train_line(7))
    (run / "prereg.json").write_bytes(b'{"preset": {}}')
    src = source(sshd, run)
    assert await src.read_bytes("prereg.json") == b'{"preset": {}}'
    assert await src.read_bytes("amendments.jsonl") is None
    out = await src.run_command(["printf", "%s", "$(echo no) ; 'x'"])
    assert out == b"$(echo no) ; 'x'"
    c = Collector(src).start()
    await c.until(lambda: c.steps == [7], timeout=20)
    await c.stop()
    for where in (tmp_path, Path.home(), Path.cwd()):
        assert not (where / "PWNED").exists() and not (where / "PWNED2").exists()


async def test_a_chatty_login_shell_does_not_confuse_the_stream(tmp_path):
    """Remote startup files that print to stdout (a banner in .bashrc) come before our header."""
    from tests.sshd_helper import Sshd

    chatty = tmp_path / "chatty-login"
    chatty.write_text(
        "#!/bin/sh\necho 'Welcome to the cluster'\necho '@fontaine? not ours'\n"
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    chatty.chmod(0o755)
    server = Sshd(tmp_path / "sshd", extra_config=f"ForceCommand {chatty}")
    try:
        server.start()
        run = tmp_path / "run"
        run.mkdir()
        append(run / LOG, train_line(1) + train_line(2))
        src = source(server, run)
        c = Collector(src).start()
        await c.until(lambda: c.steps == [1, 2], timeout=20)
        assert c.lines == [(1, train_line(1)[:-1]), (2, train_line(2)[:-1])]
        await c.stop()
    finally:
        server.stop()


async def test_errors_are_one_line_with_a_command_to_try(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")  # a refused port: said at once
    run = tmp_path / "run"
    run.mkdir()
    src = source(sshd, tmp_path / "missing")
    with pytest.raises(
        SshError, match=r"no such run folder; try by hand: ssh -F \S+ -- fontaine-test 'ls -la /"
    ):
        await src.read_bytes("prereg.json")
    await src.close()

    stranger = tmp_path / "stranger_key"
    os.system(f"ssh-keygen -q -t ed25519 -N '' -f {stranger}")  # noqa: S605 - fixed argv
    cfg = tmp_path / "bad_auth_config"
    sshd.write_client_config(cfg, stranger)
    bad = SshRun(SshTarget(HOST_ALIAS, str(run)), ssh_options=("-F", str(cfg)))
    with pytest.raises(SshError) as err:
        await bad.read_bytes("prereg.json")
    assert "authentication failed" in str(err.value) and "\n" not in str(err.value)
    assert f"try by hand: ssh -F {cfg} -- {HOST_ALIAS} 'ls -la {run}'" in str(err.value)
    await bad.close()

    cfg2 = tmp_path / "no_server_config"
    cfg2.write_text(sshd.config.read_text().replace(f"Port {sshd.port}", f"Port {free_port()}"))
    down = SshRun(SshTarget(HOST_ALIAS, str(run)), ssh_options=("-F", str(cfg2)))
    with pytest.raises(SshError, match="host unreachable .*Connection refused"):
        await down.read_bytes("prereg.json")
    await down.close()


def _other_user() -> str | None:
    """A non-root login for the permission test: root reads every file."""
    import pwd
    import shutil
    import subprocess

    name = "fontaine-sshtest"
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        return None
    try:
        pwd.getpwnam(name)
    except KeyError:
        # password "*": no password login, but not "locked" (sshd refuses locked accounts)
        done = subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/bin/sh",
                "--password",
                "*",
                name,
            ],
            capture_output=True,
        )
        if done.returncode != 0:
            return None
    subprocess.run(["usermod", "--password", "*", name], capture_output=True)
    return name


async def test_permission_denied(sshd, tmp_path):
    import tempfile

    user = _other_user() if os.geteuid() == 0 else None
    if os.geteuid() == 0 and user is None:
        pytest.skip("running as root and cannot add a non-root user")
    base = Path(tempfile.mkdtemp(prefix="fontaine-perm-", dir="/tmp"))
    try:
        base.chmod(0o755)
        run, closed = base / "run", base / "closed"
        run.mkdir(mode=0o755)
        closed.mkdir(mode=0o700)
        append(run / "prereg.json", b"{}")
        append(run / LOG, train_line(1))
        for f in (run / "prereg.json", run / LOG):
            f.chmod(0o600 if user else 0)
        options = sshd.ssh_options
        if user:
            cfg = tmp_path / "other_user_config"
            cfg.write_text(sshd.config.read_text().replace(f"User {sshd.user}", f"User {user}"))
            options = ("-F", str(cfg))
        src = SshRun(SshTarget(HOST_ALIAS, str(run)), ssh_options=options, backoff=(0.1, 0.5))
        with pytest.raises(SshError, match="prereg.json: permission denied; try by hand: ssh"):
            await src.read_bytes("prereg.json")
        c = Collector(src).start()
        await c.until(lambda: any("permission denied" in n for n in c.notes), timeout=20)
        await c.stop()
        if user:
            shut = SshRun(SshTarget(HOST_ALIAS, str(closed)), ssh_options=options)
            with pytest.raises(SshError, match="permission denied"):
                await shut.read_bytes("prereg.json")
            await shut.close()
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


async def test_a_remote_fifo_or_device_is_refused_not_read_forever(sshd, tmp_path):
    from fontaine_tui.core.errors import InputError

    run = tmp_path / "run"
    run.mkdir()
    append(run / LOG, train_line(7))
    os.mkfifo(run / "prereg.json")
    (run / "amendments.jsonl").symlink_to("/dev/zero")
    src = source(sshd, run)
    try:
        for name in ("prereg.json", "amendments.jsonl"):
            with pytest.raises(InputError, match=f"run/{name}: not a regular file"):
                await asyncio.wait_for(src.read_bytes(name), 20)
    finally:
        await src.close()


async def test_the_first_connection_is_tried_again_until_sshd_listens(tmp_path, monkeypatch):
    """A host whose sshd starts listening 3 s after the attach begins (a host booting, a
    loaded machine): the first connection is tried again with the reconnect back-off, and
    the run folder is read, not "host unreachable; try by hand"."""
    from tests.sshd_helper import Sshd, find_sshd

    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    run = tmp_path / "run"
    run.mkdir()
    (run / "prereg.json").write_text("{}")
    late = Sshd(tmp_path / "late").start(listen_after=3.0)
    try:
        src = SshRun(
            SshTarget(HOST_ALIAS, str(run)), ssh_options=late.ssh_options, backoff=(0.25, 1.0)
        )
        assert await src.read_bytes("prereg.json") == b"{}"
        assert src.connect_tries >= 2
        await src.close()
        # the limit holds: with none left, a refused port is said at once
        monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")
        cfg = tmp_path / "down_config"
        cfg.write_text(late.config.read_text().replace(f"Port {late.port}", f"Port {free_port()}"))
        down = SshRun(SshTarget(HOST_ALIAS, str(run)), ssh_options=("-F", str(cfg)))
        with pytest.raises(SshError, match="host unreachable"):
            await down.read_bytes("prereg.json")
        assert down.connect_tries == 1
        await down.close()
    finally:
        late.stop()


async def test_the_first_connection_gives_up_within_its_limit(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "2")
    cfg = tmp_path / "down_config"
    cfg.write_text(sshd.config.read_text().replace(f"Port {sshd.port}", f"Port {free_port()}"))
    down = SshRun(
        SshTarget(HOST_ALIAS, str(tmp_path)), ssh_options=("-F", str(cfg)), backoff=(0.25, 1.0)
    )
    start = time.monotonic()
    with pytest.raises(SshError, match=r"host unreachable .*tries in [0-9]+ s; try by hand"):
        await down.read_bytes("prereg.json")
    assert 1.5 <= time.monotonic() - start < 10 and down.connect_tries >= 3
    await down.close()
