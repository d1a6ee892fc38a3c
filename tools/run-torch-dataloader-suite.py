#!/usr/bin/env python3
"""Run torch's own test/test_dataloader.py against stoker's torch door, and count the results.

Usage:
    python tools/run-torch-dataloader-suite.py PATH/TO/test_dataloader.py [--against both]
        [-k EXPRESSION] [--timeout SECONDS] [-- EXTRA PYTEST ARGUMENTS]

torch's test file is not shipped in the torch wheel and is not part of this repository: take it
from the torch source tree of the installed version (``torch.__version__``). The script writes a
copy of it into a temporary directory with only its imports changed: every
``from torch.utils.data import ...`` line (the subprocess scripts inside the file included)
imports from ``stoker.torch.data`` the names that module has (the others, torch's private
``_utils``, still from torch), and every ``torch.utils.data.DataLoader`` becomes the imported
``DataLoader``. It then runs that copy with pytest (this checkout's ``src`` first on
``PYTHONPATH``) and prints the counts. ``--against torch`` runs the unchanged file against
torch's own loader, and ``--against both`` runs both and lists the tests that pass with torch
but not with the door: the failures that apply (CUDA-only and skipped tests do not).

torch's test helpers (``torch.testing._internal.common_utils``) need the ``expecttest`` package;
``psutil`` and ``dill`` are optional (without dill, two tests change their expected outcome).
The whole file takes several minutes on two cores: pass ``-k`` to run a class or a test. The
temporary directory (its copies and each run's full pytest log) is left in place and named in
the output, so that one test can be rerun from it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOOR = "stoker.torch.data"
_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from torch\.utils\.data import "
    r"(?:\((?P<many>[^)]*)\)|(?P<one>[^\n(]+))$",
    re.MULTILINE,
)
_USE = re.compile(r"\btorch\.utils\.data\.DataLoader\b")
_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", re.MULTILINE)
_SKIPPED = re.compile(r"^SKIPPED \[(\d+)\]", re.MULTILINE)


def door_names() -> set[str]:
    """The public names of stoker's torch door, asked in a child process (this checkout's)."""
    code = f"import {DOOR} as door; print(' '.join(dir(door)))"
    env = _environment(Path.cwd())
    names = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    return set(names.split())


def convert(text: str, names: set[str]) -> tuple[str, int, int]:
    """Return torch's test file with its imports changed to the door, and how many changed."""

    def rewrite(match: re.Match[str]) -> str:
        indent = match["indent"]
        body = match["many"] if match["many"] is not None else match["one"]
        imported = [name.strip() for name in body.replace("\n", ",").split(",") if name.strip()]
        ours = [name for name in imported if name.split(" as ")[0].strip() in names]
        theirs = [name for name in imported if name not in ours]
        lines = []
        if ours:
            lines.append(f"{indent}from {DOOR} import {', '.join(ours)}")
        if theirs:
            lines.append(f"{indent}from torch.utils.data import {', '.join(theirs)}")
        return "\n".join(lines)

    text, imports = _IMPORT.subn(rewrite, text)
    text, uses = _USE.subn("DataLoader", text)
    return text, imports, uses


def _environment(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "src"), str(directory), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
    return env


def run(test_file: Path, label: str, args: argparse.Namespace) -> Counter[str] | None:
    """Run one test file with pytest in its directory; print and return its outcomes."""
    directory = test_file.parent
    (directory / "pytest.ini").write_text("[pytest]\n")  # none of this repository's settings
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["-q", "-rA", "--rootdir", str(directory), "-c", str(directory / "pytest.ini")]
    if importlib.util.find_spec("pytest_timeout") is not None:
        command.append(f"--timeout={args.timeout}")
    if args.k:
        command += ["-k", args.k]
    command += [*args.pytest_args, test_file.name]
    print(f"== {label}: {shlex.join(command[1:])}", flush=True)
    result = subprocess.run(
        command,
        check=False,
        cwd=directory,
        env=_environment(directory),
        capture_output=True,
        text=True,
    )
    log = directory / f"{test_file.stem}.log"
    log.write_text(result.stdout + result.stderr)
    outcomes: Counter[str] = Counter()
    tests: dict[str, str] = {}
    for outcome, test in _OUTCOME.findall(result.stdout):
        if outcome != "SKIPPED":
            outcomes[outcome] += 1
            tests[test.split("::", 1)[1]] = outcome
    outcomes["SKIPPED"] = sum(int(count) for count in _SKIPPED.findall(result.stdout))
    summary = result.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"   {summary[0]}")
    print("   " + ", ".join(f"{name.lower()} {count}" for name, count in sorted(outcomes.items())))
    for test, outcome in sorted(tests.items()):
        if outcome in ("FAILED", "ERROR", "XPASS"):
            print(f"   {outcome} {test}")
    print(f"   log: {log}")
    if "ModuleNotFoundError: No module named 'expecttest'" in result.stdout + result.stderr:
        print("   torch's test helpers need expecttest: pip install expecttest", file=sys.stderr)
        return None
    args.results[label] = tests
    return outcomes


def main() -> int:
    """Parse the arguments, convert, run, report; exit 1 when a test that applies fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test_dataloader", type=Path, help="torch's test/test_dataloader.py")
    parser.add_argument("--against", choices=("stoker", "torch", "both"), default="stoker")
    parser.add_argument("-k", help="pytest's -k expression (a class or test name)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per test")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args()
    args.results = {}
    source = args.test_dataloader.read_text()
    # the directory stays: its logs and copies serve to rerun one test
    directory = Path(tempfile.mkdtemp(prefix="torch-dataloader-suite-"))
    runs = []
    if args.against in ("torch", "both"):
        original = directory / "torch" / "test_dataloader.py"
        original.parent.mkdir()
        original.write_text(source)
        runs.append((original, "torch's file, torch's loader"))
    if args.against in ("stoker", "both"):
        text, imports, uses = convert(source, door_names())
        converted = directory / "stoker" / "test_dataloader_stoker.py"
        converted.parent.mkdir()
        converted.write_text(text)
        print(f"converted {imports} import lines and {uses} torch.utils.data.DataLoader uses")
        runs.append((converted, "converted file, stoker.torch.data"))
    counts = [run(path, label, args) for path, label in runs]
    if any(count is None for count in counts):
        return 2
    if args.against == "both":
        theirs, ours = args.results.values()
        gap = sorted(
            test for test, out in theirs.items() if out == "PASSED" and ours.get(test) != "PASSED"
        )
        print(f"== pass with torch, not with stoker: {len(gap)}")
        for test in gap:
            print(f"   {ours.get(test, 'MISSING')} {test}")
        return 1 if gap else 0
    return 1 if any(count and (count["FAILED"] or count["ERROR"]) for count in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
