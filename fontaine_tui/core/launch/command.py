"""A preset's [command] made ready to run, and the provenance frozen into prereg.json.

Ready to run means its argv, environment and folder. The provenance is the files it names,
the code's git state and the launcher script's declared platform delta, read again on
--resume to say what changed.

A script runs as `bash SCRIPT` with no arguments; it finds the run folder in
FONTAINE_OUTPUT_DIR, which every command's environment holds. Relative paths (script,
block_reference, the files argv names) are read against the command's folder.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.spec import FROZEN
from fontaine_tui.core.preset.command import (
    OUTPUT_ENV,
    CommandSpec,
    names_endpoint,
    substitute,
)
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.readfile import open_regular, read_whole
from fontaine_tui.core.run.endpoint import Endpoint
from fontaine_tui.core.secrets import mask_line, mask_lines
from fontaine_tui.core.text import literal

GIT_TIMEOUT_S = 30.0
HASH_MOST = 64 << 20  # a file argv names over this is recorded by size and time, not hashed
BLOCK_MOST = 4 << 20  # a launcher script or its reference, read whole
CHUNK = 1 << 20
RUN_MARK = "prereg.json"  # an untracked folder holding one is a run folder, not code


def spec_of(preset: Preset) -> CommandSpec:
    if preset.command is None:
        raise InputError(f"{preset.path}: command: this preset has no [command]")
    return preset.command


def command_cwd(preset: Preset, launch_cwd: Path) -> Path:
    """The folder the command runs in: [command] cwd against where launch was called."""
    spec = spec_of(preset)
    path = Path(spec.cwd or ".")
    path = (path if path.is_absolute() else launch_cwd / path).resolve()
    if not path.is_dir():
        raise InputError(
            f"{preset.path}: command.cwd: {literal(spec.cwd or '.')}: expected a "
            f"folder, {literal(str(path))} is not one"
        )
    return path


def _script(spec: CommandSpec, cwd: Path) -> Path:
    path = Path(spec.script)
    return (path if path.is_absolute() else cwd / path).absolute()


def command_argv(
    preset: Preset,
    folder: Path,
    resume: bool,
    cwd: Path | None = None,
    endpoint: Endpoint | None = None,
) -> list[str]:
    """The command line: argv, or `bash SCRIPT`.

    The argv is resume_argv with --resume, with {output_dir} as the absolute run folder and
    {endpoint} as the endpoint in force (`endpoint`, else the preset's endpoint_step). A resume
    past the pre-registered endpoint whose resume_argv cannot say so is refused (one line): the
    trainer would finish at its own end and the read stay PROVISIONAL."""
    spec = spec_of(preset)
    out = str(folder.absolute())
    if resume:
        return _resume_argv(preset, spec, out, endpoint)
    if spec.script:
        return ["bash", str(_script(spec, cwd or command_cwd(preset, Path.cwd())))]
    return [substitute(a, out) for a in spec.argv]


def _resume_argv(
    preset: Preset, spec: CommandSpec, out: str, endpoint: Endpoint | None
) -> list[str]:
    """resume_argv with the run folder and the endpoint in force; refused where it cannot be."""
    if not spec.resume_argv:
        raise InputError(f"{preset.path}: [command] has no resume_argv: this run cannot be resumed")
    if endpoint is not None and endpoint.extended and not names_endpoint(spec.resume_argv):
        raise InputError(
            f"--resume: {endpoint.ledger} moves the endpoint from step "
            f"{endpoint.registered} to {endpoint.in_force}, but [command] resume_argv "
            "cannot tell the trainer, which would stop at its own end: declare it with "
            '{endpoint} in resume_argv (e.g. "--max_steps", "{endpoint}") before launch'
        )
    at = endpoint.in_force if endpoint is not None else preset.verdict.endpoint_step
    return [substitute(a, out, at) for a in spec.resume_argv]


def frozen_env(preset: Preset, folder: Path) -> dict[str, str]:
    """The preset's env with {output_dir}, and FONTAINE_OUTPUT_DIR: what prereg.json shows."""
    out = str(folder.absolute())
    return {**{k: substitute(v, out) for k, v in spec_of(preset).env.items()}, OUTPUT_ENV: out}


def source_path(preset: Preset, folder: Path) -> str:
    """The [source] path with {output_dir} filled in as argv's is: what prereg.json freezes.

    {output_dir} is the run folder, so a path under it is kept relative to it (a reader reads
    it against the folder it reads: a copy, or the folder moved, reads its own log, never the
    one a new run at the old place writes); one outside it is kept absolute. "" where the path
    names no placeholder (it is read as written, against the run folder)."""
    path = preset.source.path if preset.source is not None else ""
    out = os.path.normpath(folder.absolute())
    filled = substitute(path, out)
    if filled == path:
        return ""
    norm = os.path.normpath(filled)
    return os.path.relpath(norm, out) if Path(norm).is_relative_to(out) else filled


def command_env(preset: Preset, folder: Path) -> dict[str, str]:
    """This process's environment less the notification secrets, with the frozen env."""
    return {**child_env(), **frozen_env(preset, folder)}


# -- provenance -----------------------------------------------------------------------------


def _against(name: str, cwd: Path) -> Path:
    path = Path(name)
    return path if path.is_absolute() else cwd / path


def file_record(path: Path) -> dict[str, object] | None:
    """The sha256 and size of a regular file; None when there is no regular file there.

    Over HASH_MOST bytes, the size and mtime alone."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    if not _is_file(path):
        return None
    if st.st_size > HASH_MOST:
        return {
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "note": f"over {HASH_MOST >> 20} MiB: not hashed",
        }
    digest = hashlib.sha256()
    try:
        with open_regular(path) as fh:
            while chunk := fh.read(CHUNK):
                digest.update(chunk)
    except (OSError, InputError) as exc:
        return {"unreadable": str(exc)}
    return {"sha256": digest.hexdigest(), "size": st.st_size}


def named_files(spec: CommandSpec, argv: list[str], cwd: Path) -> dict[str, dict[str, object]]:
    """The files a command names, by the name as written.

    They are the script, the reference launcher and each argv element that names a regular file
    (against cwd). A file named twice is kept by its first name."""
    names = [n for n in (spec.script, spec.block_reference) if n]
    names += [a for a in argv if a and "\0" not in a]
    out: dict[str, dict[str, object]] = {}
    seen: set[Path] = set()
    for name in names:
        path = _against(name, cwd)
        if path.absolute() in seen or (record := file_record(path)) is None:
            continue
        seen.add(path.absolute())
        out[name] = record
    return out


def _is_file(path: Path) -> bool:
    """Path.is_file, False for a name the system refuses (over NAME_MAX, ...)."""
    try:
        return path.is_file()
    except OSError:
        return False


# a program that runs its first argument that is no option as a script
_PYTHON = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*)")
_SHELL = re.compile(r"(?:bash|sh|dash|zsh|ksh)")
# the options whose value is the next argument (or the rest of their letters), and those after
# which no script is run (the code or module is given instead)
_PY_VALUE, _PY_NO_SCRIPT = "XWQ", "cm"
_PY_LONG_VALUE: tuple[str, ...] = ("--check-hash-based-pycs",)
_SH_VALUE, _SH_NO_SCRIPT = "oO", "cs"


def script_args(argv: tuple[str, ...]) -> list[int]:
    """Where an argv (as written, placeholders in) names the script it runs, by index.

    That is the interpreter's own script alone: python's first argument that is no option
    (none after -m or -c), a shell's (none after -c or -s); a file, a folder or a zip, as the
    interpreter runs each. An option's value and every later argument are the script's own
    (an output file, a config, a shell line), never looked for. One naming a placeholder is
    the run's own (not there before launch) and is left out."""
    i = _interpreter_script(argv)
    return [i] if i is not None and "{" not in argv[i] else []


def _interpreter_script(argv: tuple[str, ...]) -> int | None:
    """The index of the script an interpreter runs: its first argument that is no option.

    None where argv[0] is no interpreter, or it runs no script (-m, -c, - for stdin)."""
    if not argv:
        return None
    name = Path(argv[0]).name
    if _PYTHON.fullmatch(name):
        value, no_script, long_value = _PY_VALUE, _PY_NO_SCRIPT, _PY_LONG_VALUE
    elif _SHELL.fullmatch(name):
        value, no_script, long_value = _SH_VALUE, _SH_NO_SCRIPT, ()
    else:
        return None
    i = 1
    while i < len(argv) and argv[i][:1] in ("-", "+"):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-", "+"):
            return None  # the script comes on stdin
        if arg.startswith("--"):
            i += 2 if arg in long_value else 1
            continue
        letters = arg[1:]
        for n, letter in enumerate(letters):
            if letter in no_script:
                return None
            if letter in value:
                i += 1 if letters[n + 1 :] else 2  # the value: the rest, else the next
                break
        else:
            i += 1
    return i if i < len(argv) else None


def code_root(spec: CommandSpec, argv: list[str], cwd: Path) -> Path:
    """Where the code's repository is looked for.

    That is the script's folder, else the folder of the first file argv names by a relative path,
    else cwd."""
    if spec.script:
        return _against(spec.script, cwd).parent
    for arg in argv:
        if arg and "\0" not in arg and not Path(arg).is_absolute() and _is_file(cwd / arg):
            return (cwd / arg).parent
    return cwd


def _git(args: list[str], where: Path) -> bytes:
    """git's stdout; CalledProcessError, FileNotFoundError or TimeoutExpired as run raises."""
    return subprocess.run(
        ["git", "-C", str(where), *args],
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=GIT_TIMEOUT_S,
    ).stdout


def git_state(where: Path, run_folder: Path | None = None) -> dict[str, object]:
    """The git state of the repository holding `where`, or {"git": why not}.

    The state is its root, HEAD commit and a sha256 of what is not committed:
    `git diff HEAD --binary`, then each untracked, non-ignored file's name and bytes (run
    folders, those holding a prereg.json, left out)."""
    try:
        root, commit, diff, listed = _git_reads(where)
    except FileNotFoundError:
        return {"git": "git not found: the code's state is not recorded"}
    except subprocess.TimeoutExpired:
        return {
            "git": f"git did not answer within {GIT_TIMEOUT_S:g} s: the code's state is "
            "not recorded"
        }
    except subprocess.CalledProcessError:
        return {"git": "not a git checkout"}
    except OSError as exc:
        return {"git": f"git could not run ({exc.strerror or exc})"}
    digest = hashlib.sha256(diff)
    untracked = _hash_untracked(digest.update, root, listed, _run_folders(root, listed, run_folder))
    return {
        "root": str(root),
        "commit": commit,
        "diff_sha256": digest.hexdigest(),
        "dirty": bool(diff) or untracked > 0,
        "untracked": untracked,
    }


def _git_reads(where: Path) -> tuple[Path, str, bytes, bytes]:
    """(root, HEAD commit or "", what is not committed as a binary diff, untracked names).

    git's own failures are raised, for git_state to say."""
    root = Path(os.fsdecode(_git(["rev-parse", "--show-toplevel"], where).rstrip(b"\n")))
    try:
        commit = _git(["rev-parse", "--verify", "HEAD"], where).decode().strip()
        diff = _git(["diff", "HEAD", "--binary"], root)
    except subprocess.CalledProcessError:  # no commit yet: everything staged is new
        commit = ""
        diff = _git(["diff", "--cached", "--binary"], root) + _git(["diff", "--binary"], root)
    return root, commit, diff, _git(["ls-files", "--others", "--exclude-standard", "-z"], root)


def _hash_untracked(
    update: Callable[[bytes], object], root: Path, listed: bytes, skip: list[Path]
) -> int:
    """Hash each untracked file's name and bytes (a link's target) with `update`, in name order.

    Files under `skip` (run folders) are left out. Returns how many were hashed."""
    untracked = 0
    for raw in sorted(n for n in listed.split(b"\0") if n):
        path = root / os.fsdecode(raw)
        if any(path.is_relative_to(s) for s in skip):
            continue
        untracked += 1
        update(b"\0untracked\0" + raw + b"\0")
        if path.is_symlink():
            update(os.fsencode(os.readlink(path)))
        elif (record := file_record(path)) is not None:
            update(repr(sorted(record.items())).encode())
    return untracked


def _run_folders(root: Path, listed: bytes, run_folder: Path | None) -> list[Path]:
    """The run folders among the untracked files (their own output is not the code)."""
    out = [run_folder.absolute()] if run_folder is not None else []
    for raw in listed.split(b"\0"):
        if raw.endswith(b"/" + RUN_MARK.encode()) or raw == RUN_MARK.encode():
            out.append((root / os.fsdecode(raw)).parent)
    return out


def command_provenance(
    preset: Preset, argv: list[str], cwd: Path, run_folder: Path
) -> dict[str, object]:
    """What prereg.json freezes of a command.

    That is argv, cwd, env, the files named and the code (the run folder itself left out of it).
    With a block reference, also the launcher's declared platform delta (check_block); with a
    [source] path naming {output_dir}, that path filled in: every reader reads the log there
    (spec.py's frozen_path)."""
    spec = spec_of(preset)
    out: dict[str, object] = {
        "command": {"argv": list(argv), "cwd": str(cwd), "env": frozen_env(preset, run_folder)},
        "files": named_files(spec, argv, cwd),
        "code": git_state(code_root(spec, argv, cwd), run_folder),
    }
    if path := source_path(preset, run_folder):
        out[FROZEN] = {"path": path}
    if spec.block_reference:
        out["platform_delta"] = check_block(
            _script(spec, cwd), _against(spec.block_reference, cwd), spec.block_marker
        )
    return out


def code_changes(
    frozen: Mapping[str, object],
    preset: Preset,
    argv: list[str],
    cwd: Path,
    run_folder: Path | None = None,
) -> list[str]:
    """What changed since launch, as read now for --resume; [] where nothing did.

    Each frozen file that argv (or the script) names now is compared, and so are the commit and
    the uncommitted changes."""
    spec = spec_of(preset)
    out: list[str] = []
    was_files = frozen.get("files")
    now_files = named_files(spec, argv, cwd)
    if isinstance(was_files, Mapping):
        named = {*argv, spec.script, spec.block_reference}
        out += _files_changed(was_files, now_files, named)
    was_code = frozen.get("code")
    if isinstance(was_code, Mapping) and was_code.get("root"):
        now_code = git_state(code_root(spec, argv, cwd), run_folder)
        if said := _code_changed(was_code, now_code):
            out.append(said)
    return out


def _files_changed(
    was_files: Mapping[str, object], now_files: Mapping[str, object], named: set[str]
) -> list[str]:
    """Each frozen file the command still names whose record differs now, in name order."""
    return [
        f"{literal(name)} changed under the run: launched with "
        f"{_file_word(was)}, now {_file_word(now_files.get(name))}"
        for name, was in sorted(was_files.items())
        if name in named and now_files.get(name) != was
    ]


def _code_changed(was: Mapping[str, object], now: Mapping[str, object]) -> str:
    """How the code's git state differs from the frozen one, the first difference only ("")."""
    if not now.get("root"):
        return (
            f"the code's git checkout changed under the run: launched with "
            f"{_commit(was)}, now {now.get('git')}"
        )
    if now.get("commit") != was.get("commit"):
        return f"the commit changed under the run: launched with {_commit(was)}, now {_commit(now)}"
    if now.get("diff_sha256") != was.get("diff_sha256"):
        return (
            f"the uncommitted changes changed under the run: launched with diff "
            f"sha256 {str(was.get('diff_sha256'))[:12]}, now "
            f"{str(now.get('diff_sha256'))[:12]} ({literal(str(now['root']))})"
        )
    return ""


def _file_word(record: object) -> str:
    if not isinstance(record, Mapping):
        return "no such file"
    if record.get("sha256"):
        return f"sha256 {str(record['sha256'])[:12]}"
    if "unreadable" in record:
        return f"an unreadable file ({record['unreadable']})"
    return f"{record.get('size')} bytes, mtime_ns {record.get('mtime_ns')}"


def _commit(code: Mapping[str, object]) -> str:
    commit = str(code.get("commit") or "")
    return (f"git {commit[:12]}" if commit else "no commit") + (
        " + uncommitted changes" if code.get("dirty") else ""
    )


# -- the launcher block ---------------------------------------------------------------------


def _split(path: Path, marker: str) -> tuple[list[bytes], int]:
    """The file's lines (ends kept) and the index of the marker line."""
    try:
        data = read_whole(path, BLOCK_MOST)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    lines = data.splitlines(keepends=True)
    want = marker.encode()
    for i, line in enumerate(lines):
        if line.rstrip(b"\r\n") == want:
            return lines, i
    raise InputError(
        f"{path}: no line {literal(marker)!r} (command.block_marker): expected "
        "the marker line that starts the command block"
    )


def _shown(lines: list[bytes], i: int) -> str:
    """Line `i` as it may be shown: its credentials masked, the rest of it kept."""
    if i >= len(lines):
        return "(end of file)"
    return repr(literal(mask_line(lines[i].decode("utf-8", "replace").rstrip("\r\n"))))


# a simple command's start: the line's, or after ; & | ( ) { } and the words that open one
_COMMAND_START = re.compile(
    r"(?:^|[;&|(){}`]|\$\(|\b(?:then|do|else|elif|if|while|until|time|!))\s*"
)
_ASSIGNED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S*)\s+")
_EXEC = re.compile(r"(?:(?:command|builtin)\s+)*exec\b(?P<rest>[^;&|)}`]*)")
_REDIRECT = re.compile(r"^(?:\d*(?:[<>]&?|&>>?|>>|<<<?|<>)-?\s*\S*|\{\w+\}[<>]&?\S*)$")


def _execs(line: str) -> bool:
    """Whether a shell line `exec`s another program: the block below it would never run.

    That is `exec CMD`, also after `;`, `&&`, `then`, assignments or `command`, and inside
    `eval`. An `exec` with only redirections (`exec > log 2>&1`, `exec 3<&-`) replaces nothing."""
    text = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
    if re.search(r"\beval\b.*\bexec\b", text):
        return True
    return any(_execs_at(text, start.end()) for start in _COMMAND_START.finditer(text))


def _execs_at(text: str, at: int) -> bool:
    """Whether the simple command at `at` (after its assignments) is an `exec` of a program.

    exec's own options (-a NAME, -c, -l) are skipped; only redirections after them replace
    nothing."""
    while (m := _ASSIGNED.match(text, at)) is not None:
        at = m.end()
    m = _EXEC.match(text, at)
    if m is None:
        return False
    words = m["rest"].split()
    while words and words[0] in ("-a", "-c", "-l", "-cl", "-lc"):
        words = words[2:] if words[0] == "-a" else words[1:]
    return any(not _REDIRECT.match(w) for w in _joined_redirects(words))


def _joined_redirects(words: list[str]) -> list[str]:
    """Words with a lone redirection operator joined to its target (`>`, `log` -> `>log`)."""
    out: list[str] = []
    for word in words:
        if out and re.fullmatch(r"\d*(?:[<>]&?|&>>?|>>|<<<?|<>)", out[-1]):
            out[-1] += word
        else:
            out.append(word)
    return out


def _logical_lines(lines: list[bytes]) -> list[tuple[int, str]]:
    """The lines, a backslash-continued line joined to the next: (first line's index, text)."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for i, raw in enumerate(lines):
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if pending is not None:
            pending = (pending[0], pending[1] + text)
        else:
            pending = (i, text)
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1])
            continue
        out.append(pending)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def check_block(script: Path, reference: Path, marker: str) -> list[str]:
    """Check the script's block against the reference, and return the declared platform delta.

    The block below the marker line in `script` must equal `reference`'s byte for byte
    (InputError showing the first differing line), and no line above it may `exec` another
    program (InputError showing it): the block would never run. Lines are shown with their
    credentials masked (core/secrets.py), never dropped. The declared platform delta is the lines
    above the marker that differ from the reference's, as a small unified diff (a line that
    differs only by a credential is a difference, shown masked on both sides)."""
    ours, at = _split(script, marker)
    theirs, ref_at = _split(reference, marker)
    for i, line in _logical_lines(ours[:at]):
        if _execs(line):
            raise InputError(
                f"{script}: line {i + 1} {_shown(ours, i)} execs another program above "
                f"{literal(marker)!r}: the checked command block would never run"
            )
    block, ref_block = ours[at + 1 :], theirs[ref_at + 1 :]
    if block != ref_block:
        i = next(
            (k for k, (a, b) in enumerate(zip(block, ref_block, strict=False)) if a != b),
            min(len(block), len(ref_block)),
        )
        raise InputError(
            f"{script}: the command block below {literal(marker)!r} differs from "
            f"{reference}'s: line {at + 2 + i} is {_shown(ours, at + 1 + i)}, line "
            f"{ref_at + 2 + i} of the reference is {_shown(theirs, ref_at + 1 + i)}"
        )
    return _platform_delta(_text(theirs[:ref_at]), _text(ours[:at]), reference, script)


def _text(lines: list[bytes]) -> list[str]:
    """The lines decoded as the delta shows them, without their line ends."""
    return [ln.decode("utf-8", "replace").rstrip("\r\n") for ln in lines]


def _platform_delta(
    before: list[str], after: list[str], reference: Path, script: Path
) -> list[str]:
    """The lines above the marker that differ from the reference's, as a small unified diff."""
    # each differing line as it may be frozen and shown: its credentials masked, read with
    # the lines a backslash joins it to (core/secrets.py), the rest kept
    shown: dict[str, str] = {}
    for raw, masked in zip(before + after, mask_lines(before) + mask_lines(after), strict=True):
        if masked != raw or raw not in shown:  # masked in any place, masked in all
            shown[raw] = masked
    delta = difflib.unified_diff(before, after, str(reference), str(script), n=0, lineterm="")
    return [  # the two file lines first, then hunks: a removed "--x" is "---x", not a header
        ln if i < 2 or ln.startswith("@@") else ln[:1] + shown[ln[1:]] for i, ln in enumerate(delta)
    ]
