#!/usr/bin/env python3
"""tools/kb-sources --check-notes on a fixture (issue 34, item 2): a "not found verbatim"
note whose text is in the source, split across string literals (Python's implicit
concatenation across lines, an f-string's literal parts, adjacent C literals around a
format macro), is flagged as false; a note whose text is nowhere is not. The fixture's
source folder is made a git repository in a temporary folder; nothing is fetched."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "kb-sources")

with tempfile.TemporaryDirectory() as tmp:
    work = os.path.join(tmp, "fake")
    shutil.copytree(os.path.join(HERE, "src"), os.path.join(work, "src"))
    git = ["git", "-C", work, "-c", "user.name=fixture", "-c", "user.email=fixture@invalid", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(git + cmd, check=True)
    r = subprocess.run([sys.executable, TOOL, "--check-notes", "--kb", os.path.join(HERE, "kb"),
                        "--repo", f"fake/fake={os.path.join(work, '.git')}=fake"], capture_output=True, text=True)
    # --write on a copy: each false note becomes its source, wherever the note sits in the
    # pattern's block (joined-c's is its last line); the true note stays.
    kb_copy = os.path.join(tmp, "kb")
    shutil.copytree(os.path.join(HERE, "kb"), kb_copy)
    subprocess.run([sys.executable, TOOL, "--check-notes", "--write", "--kb", kb_copy,
                    "--repo", f"fake/fake={os.path.join(work, '.git')}=fake"], capture_output=True, text=True)
    written = open(os.path.join(kb_copy, "fake", "split.yaml"), encoding="utf-8").read()
out = r.stdout + r.stderr
failures = []
if r.returncode != 1:
    failures.append(f"exit status {r.returncode}, expected 1")
for pid, where in (("joined-python", "src/launcher.py:6"), ("joined-fstring", "src/launcher.py:9"),
                   ("joined-c", "src/transport.c:5")):
    line = next((l for l in out.splitlines() if f": {pid}: the note says" in l), "")
    if where not in line:
        failures.append(f"{pid}: not flagged at {where}")
if "really-absent: the note says" in out:
    failures.append("really-absent: flagged, but its text is in no file")
if "only-quoted: the note says" in out:
    failures.append("only-quoted: flagged, but its text is only in a comment, a CMake file and a test")
if "3 'not found verbatim' notes are false" not in out:
    failures.append("the count of false notes is not 3")
for pid, path in (("joined-python", "src/launcher.py"), ("joined-c", "src/transport.c")):
    block = written.split(f"- id: {pid}\n", 1)[-1].split("- id:", 1)[0]
    if f"path: {path}" not in block or "source_note" in block:
        failures.append(f"--write: {pid}'s note is not replaced by its source ({block.strip()!r})")
if written.count("source_note") != 2:
    failures.append(f"--write: {written.count('source_note')} notes left, expected really-absent's and only-quoted's")
if failures:
    print(out)
    print("\n".join(failures))
    sys.exit(1)
print("kb-sources --check-notes: 3 false notes flagged, the true one kept; --write puts each source in its note's place")
