"""The scripts the SSH follower (`ssh.py`) runs on the remote host.

They are POSIX sh with GNU coreutils, and a stdlib-only python3 stream where the host has python3.
They are sent with every command (nothing is installed on the remote host) and take their arguments
as $1... The protocol lines they answer with start with "@fontaine"."""

from __future__ import annotations

from fontaine_tui.core import limits
from fontaine_tui.core.readfile import KIND_SH

# $1 folder, $2 file, $3 offset (past the last complete line read), $4 device:inode we had,
# $5 head length, $6 head sha256, $7 sha256 of all $3 bytes read, $8 anchor length, $9 sha256
# of the anchor (the last $8 bytes before $3).
# A file that is not a regular one (a FIFO, a link to /dev/zero) is never opened (a FIFO would
# hold the open, and this script, for ever): "@fontaine special KIND", a key of readfile.KINDS.
# Answers "@fontaine ok ID START MODE" and streams from START. MODE: resume (the same file),
# same (another file with exactly what was read), continue (the file was truncated: its new
# content goes on from the old), segment (another file took the name), fresh (nothing read
# yet). Before that, "@fontaine rest N NAME" and N bytes: the rest of the file we were reading, found
# rotated to $2.1 (renamed away, or copied by a copy-truncate rotation) or an older segment;
# then for each segment rotated after it, "@fontaine next N KIND NAME" and its N bytes (KIND
# file: a file of its own, renamed away; copy: the stream's next part, copied out).
#
# The stream reads the open file (fd 3; it goes on after a rename) in chunks. Each chunk is
# held in a private temp folder until the file is seen to still hold, just before the chunk,
# the last bytes sent (up to 4 KiB of the chunk before, or the anchor the local side sent): a
# truncate-and-refill, however fast, never passes its new bytes off as the old file's. On a mismatch or a shorter file it says "@fontaine truncated"
# on stderr and stops; so does the name watch ("@fontaine moved") when another file with data
# has the name. The local side then reconnects and this header check decides what happened.
# Where the host has python3, STREAM_PY (below) does the streaming in one process; else a shell
# loop does, where `tail -f` on the name only wakes the reader (with inotify where there is one:
# not on /dev/fd), the name watch once a second besides, so a missed wake costs a second, never
# data. Same rules either way; the shell loop costs more CPU on the remote host (docs/performance.md).
FOLLOW_SCRIPT = (
    KIND_SH
    + r"""
dir=$1 name=$2 off=$3 had=$4 hl=$5 hh=$6 dig=$7 al=$8 ah=$9 py=${10}
cd -- "$dir" 2>/dev/null || { if [ -e "$dir" ]; then echo "@fontaine denied"; else echo "@fontaine norun"; fi; exit 0; }
[ -e "$name" ] || { echo "@fontaine absent"; exit 0; }
[ -f "$name" ] || { echo "@fontaine special $(kind "$name")"; exit 0; }
[ -r "$name" ] || { echo "@fontaine denied"; exit 0; }
exec 3<"$name" || exit 1
f=/dev/fd/3
s=$(stat -L -c '%d:%i %s' -- "$f") || exit 1
id=${s% *} size=${s#* }
d=$(mktemp -d "${TMPDIR:-/tmp}/fontaine-follow.XXXXXX") || exit 1
trap 'rm -rf -- "$d"' EXIT
trap 'exit 1' HUP INT TERM PIPE
a=$d/anchor c=$d/chunk
piece() { dd if="$1" iflag=skip_bytes,count_bytes,fullblock skip="$2" count="$3" bs=65536 status=none; }
starts() { s=$(piece "$1" 0 "$2" | sha256sum) && [ "${s%% *}" = "$3" ]; }
anchor() { piece "$f" $((off - al)) "$al" > "$a" && s=$(sha256sum < "$a") && [ "${s%% *}" = "$ah" ]; }
unpack() { case $1 in *.gz) gzip -dc -- "$1" 2>/dev/null ;; *) cat -- "$1" ;; esac; }
matches() {  # $1 (a rotated segment) starts with the $off bytes we read
  case $1 in
    *.gz) s=$(unpack "$1" | head -c "$off" | sha256sum) && [ "${s%% *}" = "$dig" ] ;;
    *) [ "$(stat -L -c %s -- "$1")" -ge "$off" ] && starts "$1" "$off" "$dig" ;;
  esac
}
send() {  # "@fontaine $1 N$4" and the N bytes of $2 past $3 (N fixed first: a file that grows
          # while it is sent, the old log still written after a rename, sends what it had)
  case $2 in
    *.gz) n=$(unpack "$2" | wc -c) ;;
    *) n=$(stat -L -c %s -- "$2") || n=0 ;;
  esac
  [ "$n" -ge "$3" ] || n=$3
  echo "@fontaine $1 $((n - $3))$4"
  case $2 in
    *.gz) unpack "$2" | piece /dev/stdin "$3" $((n - $3)) ;;
    *) piece "$2" "$3" $((n - $3)) ;;
  esac
}
start=0 mode=fresh
if [ "$off" -gt 0 ]; then
  if [ "$id" = "$had" ] && [ "$size" -ge "$off" ] && anchor && starts "$f" "$hl" "$hh"; then
    start=$off mode=resume
  elif [ "$size" -ge "$off" ] && anchor && starts "$f" "$off" "$dig"; then
    start=$off mode=same
  else
    # where did what we read go? the newest rotated segment (.1, .1.gz, .2, ...) that is the
    # file we had (renamed) or starts with all we read (a copy): its rest, then the segments
    # after it, oldest first
    j=1 found=0
    while [ "$j" -le 99 ] && [ "$found" = 0 ]; do
      for r in "$name.$j" "$name.$j.gz"; do
        [ -f "$r" ] && [ -r "$r" ] || continue
        case $r in
          *.gz) rid=- ;;
          *) rid=$(stat -L -c %d:%i -- "$r") || continue ;;
        esac
        if [ "$rid" = "$had" ] || matches "$r"; then found=$j kind=copy; [ "$rid" = "$had" ] && kind=file; break; fi
      done
      [ -e "$name.$j" ] || [ -e "$name.$j.gz" ] || break
      j=$((j + 1))
    done
    if [ "$found" != 0 ]; then
      send rest "$r" "$off" " $r"
      j=$((found - 1))
      while [ "$j" -ge 1 ]; do
        for r in "$name.$j" "$name.$j.gz"; do
          [ -f "$r" ] && [ -r "$r" ] && { send next "$r" 0 " $kind $r"; break; }
        done
        j=$((j - 1))
      done
    fi
    if [ "$id" = "$had" ]; then mode=continue; else mode=segment; fi
  fi
fi
# from the start: the stream finds the head seen here still in place before it sends
# anything (a truncate between this check and its first read would pass new bytes off as
# these); from $start: the anchor, already checked, before $start
hd=0
if [ "$start" = 0 ]; then
  hd=$size; [ "$hd" -gt 4096 ] && hd=4096
  piece "$f" 0 "$hd" > "$a"
fi
mkfifo -- "$d/wake" || exit 1
echo "@fontaine ok $id $start $mode"
if [ -n "$py" ] && command -v python3 >/dev/null 2>&1; then
  python3 -S -c "$py" "$start" "$a" "$name" "$id" &
  l=$!
  cat >/dev/null
  kill "$l" 2>/dev/null
  wait
  exit 0
fi
tail -c 0 -f -s 1 --pid=$$ -- "$name" > "$d/wake" 2>/dev/null &
t=$!
(
  exec 5>"$d/wake"
  while sleep 1; do
    kill -0 $$ 2>/dev/null && echo >&5 || exit 0
    now=$(stat -L -c %d:%i -- "$name" 2>/dev/null) || continue
    [ "$now" = "$id" ] && continue
    [ "$(stat -L -c %s -- "$name" 2>/dev/null || echo 0)" -gt 0 ] && { echo "@fontaine moved" >&2; exit 0; }
  done
) &
w=$!
(
  exec 4<"$d/wake"
  pos=$start la=$(stat -c %s -- "$a") more=1  # $a: the last $la bytes sent, up to $pos
  # (from the start: the file's first $la bytes, checked at offset 0 until the first send)
  while :; do
    if [ "$more" = 0 ]; then  # wait for a wake; none left to come: the script is ending
      dd bs=1048576 count=1 status=none of="$d/woke" <&4 && [ -s "$d/woke" ] || exit 0
    fi
    more=0
    size=$(stat -L -c %s -- "$f") || exit 0
    [ "$size" -eq "$pos" ] && continue
    [ "$size" -gt "$pos" ] && [ "$size" -ge "$la" ] || { echo "@fontaine truncated" >&2; exit 0; }
    n=$((size - pos)) k=$la
    [ "$n" -gt 4194304 ] && n=4194304 more=1
    [ "$k" -gt 4096 ] && k=4096
    at=$((pos - k)); [ "$pos" = 0 ] && at=0
    piece "$f" "$pos" "$n" > "$c"
    cmp -s -n "$k" -i "$at:$((la - k))" -- "$f" "$a" || { echo "@fontaine truncated" >&2; exit 0; }
    cat -- "$c" || exit 0
    mv -f -- "$c" "$a"
    pos=$((pos + n)) la=$n
    [ "$more" = 1 ] || sleep 0.1  # a busy writer's lines go in batches, not a cycle each
  done
) &
l=$!
cat >/dev/null
kill "$t" "$w" "$l" 2>/dev/null
wait
"""
)

# The stream of FOLLOW_SCRIPT in one python3 process (stdlib only): argv start, anchor file
# (at start 0: the file's head, found at offset 0), name, device:inode. Polls the open file
# (fd 3) every 20 ms and the name once a second.
STREAM_PY = r"""
import os, sys, time
pos, name, ident = int(sys.argv[1]), sys.argv[3], sys.argv[4]
with open(sys.argv[2], "rb") as f:
    anchor = f.read()[-4096:]
parent, checked = os.getppid(), time.monotonic()

def said(what):
    os.write(2, b"@fontaine " + what + b"\n")
    sys.exit(0)

try:
    while os.getppid() == parent:
        size = os.fstat(3).st_size
        if size < max(pos, len(anchor)):
            said(b"truncated")
        if size > pos:
            chunk = os.pread(3, min(size - pos, 4 << 20), pos)
            at = pos - len(anchor) if pos else 0
            if anchor and os.pread(3, len(anchor), at) != anchor:
                said(b"truncated")
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view):]
            anchor = (anchor + chunk if pos else chunk)[-4096:]
            pos += len(chunk)
            if len(chunk) == 4 << 20:
                continue
        elif time.monotonic() - checked >= 1:
            checked = time.monotonic()
            try:
                st = os.stat(name)
            except OSError:
                st = None
            if st is not None and f"{st.st_dev}:{st.st_ino}" != ident and st.st_size > 0:
                said(b"moved")
        time.sleep(0.02)
except (BrokenPipeError, KeyboardInterrupt):
    pass
"""

# $1 folder, $2 file: the names of its rotated segments beside it, one per line
LIST_SCRIPT = r"""
cd -- "$1" 2>/dev/null || exit 0
for f in "$2".*; do [ -f "$f" ] && printf '%s\n' "$f"; done
exit 0
"""

# $1 folder: each regular file as "SIZE INODE NAME" (one line each; a name with a newline
# is left out); exit 3 no such folder
FILES_SCRIPT = r"""
[ -d "$1" ] || exit 3
cd -- "$1" 2>/dev/null || exit 3
for f in * .[!.]*; do
  [ -f "$f" ] || continue
  case "$f" in *'
'*) continue ;; esac
  s=$(wc -c < "$f" 2>/dev/null) || continue
  i=$(ls -di -- "$f" 2>/dev/null) || continue
  printf '%s %s %s\n' $s "${i%% *}" "$f"
done
exit 0
"""

# $1 folder, $2 file, $3 byte offset: the file's bytes from the offset (exit 4 no such file,
# 6 not a regular file: tail would wait on a FIFO)
RANGE_SCRIPT = r"""
cd -- "$1" 2>/dev/null || exit 3
[ -e "$2" ] || exit 4
[ -f "$2" ] || exit 6
[ -r "$2" ] || exit 5
exec tail -c +"$(($3 + 1))" -- "$2"
"""

# $1 folder, $2 store file (mlflow.db), $3 the python program below: the store's active runs
# and each one's metric rows as JSON, from a read-only connection (exit 4 no such store, 6 no
# python3 on the host, 7 refused: JSON naming the store, or a file SQLite opens beside it, that
# is not a regular file (a FIFO would hold the open, and python3 there, for ever: none is
# opened), what the store computes on a read (its views, virtual tables or virtual generated
# columns), or the SQLite error's extended code and message, which core/limits.py words as it
# words them here)
MLFLOW_SCRIPT = r"""
command -v python3 >/dev/null 2>&1 || exit 6
cd -- "$1" 2>/dev/null || exit 3
[ -e "$2" ] || exit 4
exec python3 -c "$3" "$2"
"""

# the budget of each statement and the wait for a lock as core/limits.py opens a store here,
# and its own code for the rest (`sqlite_guard_source`: a store, or a file beside it, that is
# not a regular file refused before anything opens it, read-only, sorts in memory, the heap
# bounded by SQLITE_HEAP, views, virtual tables and virtual generated columns refused, a read
# past the heap said so); a Python older than 3.11 gives no error code, so a "readonly"
# refusal with a journal (or WAL) left beside the store is sent as a hot journal's
_MLFLOW_READ = r"""
from urllib.parse import quote
path = os.path.abspath(sys.argv[1])
def refuse(doc):
    sys.stdout.write(json.dumps(doc))
    sys.exit(7)
irregular = _irregular(sys.argv[1])
if irregular:
    refuse({"irregular": [irregular[0], irregular[1]]})
def left(name):
    try:
        return os.path.getsize(name) > 0
    except OSError:
        return False
try:
    db = sqlite3.connect("file:" + quote(path) + "?mode=ro", uri=True, timeout=BUSY)
    end = time.monotonic() + BUDGET
    db.set_progress_handler(lambda: time.monotonic() > end, 1000)
    _settle(db, HEAP)
    computed = _computed_kind(db)
    if computed:
        refuse({"computed": [computed[0], computed[1]]})
    runs = db.execute("SELECT r.run_uuid, r.name, r.experiment_id, e.name FROM runs r JOIN "
                      "experiments e ON r.experiment_id = e.experiment_id WHERE "
                      "r.lifecycle_stage = 'active' ORDER BY r.start_time").fetchall()
    rows = {}
    for run in runs:
        rows[str(run[0])] = db.execute("SELECT step, timestamp, key, value, is_nan FROM "
                                       "metrics WHERE run_uuid = ? ORDER BY step, timestamp",
                                       (run[0],)).fetchall()
except sqlite3.Error as exc:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None and "readonly" in str(exc) and (left(path + "-journal") or
                                                    left(path + "-wal")):
        code = HOT
    refuse({"sqlite": [code, str(exc)]})
except MemoryError:
    refuse({"sqlite": [None, _over_heap_text(HEAP)]})
sys.stdout.write(json.dumps({"runs": [[str(a), str(b or ""), str(c), str(d)]
                                      for a, b, c, d in runs], "rows": rows}))
"""


def mlflow_program() -> str:
    """The python3 program MLFLOW_SCRIPT runs on the host, with the bounds as they are now."""
    return (
        f"BUDGET = {limits.SQLITE_BUDGET_S!r}\nBUSY = {limits.SQLITE_BUSY_S!r}\n"
        f"HOT = {limits.SQLITE_HOT!r}\nHEAP = {int(limits.SQLITE_HEAP)!r}\n"
        "import json, os, sqlite3, stat, sys, time\n" + limits.sqlite_guard_source() + _MLFLOW_READ
    )
