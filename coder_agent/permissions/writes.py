"""What a command visibly writes: its flags that write files (`--output`, `curl -o`, `sed -i`, `dd of=`), and
the files it changes by naming them (`rm x`, `cp a DEST`, `tar -x -C DIR`).

`write_targets` gives the files a command's flags write (for allow rules, such a command is exact-only);
`file_operands` the files its operands change (judged for where they are, like writes, without making it
exact-only); `is_write_flag` says whether a word is a flag that writes or runs something.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from coder_agent.permissions.programs import EXEC_FLAGS, base_name

GENERIC_WRITE_FLAGS = frozenset(
    {
        "--output", "--output-file", "--output-dir", "--output-directory", "--out", "--outfile", "--out-file",
        "--outdir", "--out-dir", "--log-file", "--logfile", "--junitxml", "--junit-xml", "--basetemp", "--html",
        "--report-log", "--resultlog", "--cov-report", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii",
        "--stderr", "--in-place", "--directory-prefix", "--output-document", "--append-output", "--remote-name",
        "--remote-name-all", "--target-dir", "--cache-dir", "--html-report", "--xml-report", "--write",
    }
)  # fmt: skip
"""Long flags that make any program write a file (their value, or a name it picks)."""
SHORT_WRITE_FLAGS: dict[str, frozenset[str]] = {
    "curl": frozenset({"-o", "-O", "-D", "-c"}),
    "wget": frozenset({"-O", "-o", "-a", "-P"}),
    "sort": frozenset({"-o"}),
    "git": frozenset({"-o"}),
    "ruff": frozenset({"-o"}),
    "patch": frozenset({"-o"}),
    "pandoc": frozenset({"-o"}),
    "openssl": frozenset({"-out"}),
    "unzip": frozenset({"-d"}),
    "javac": frozenset({"-d"}),
    **{cc: frozenset({"-o"}) for cc in ("cc", "gcc", "g++", "c++", "clang", "clang++", "go", "rustc", "ld", "as")},
}
VALUELESS_WRITE_FLAGS = frozenset({"-O", "--remote-name", "--remote-name-all", "--in-place"})


def write_targets(argv: Sequence[str]) -> list[str]:
    """Files a command's own flags write (`--output=x`, `curl -o x`, `tee x`, `sed -i`, `dd of=x`, find -fprint)."""
    if not argv:
        return []
    name = base_name(argv[0])
    short = SHORT_WRITE_FLAGS.get(name, frozenset())
    found: list[str] = []
    for i, word in enumerate(argv[1:], start=1):
        head, eq, value = word.partition("=")
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if head in GENERIC_WRITE_FLAGS or head in short:
            found.append(value if eq else "" if head in VALUELESS_WRITE_FLAGS else nxt)
        elif name == "tee" and not word.startswith("-"):
            found.append(word)
        elif name in ("sed", "gsed", "perl") and re.match(r"-[A-Za-z]*i", word) and not word.startswith("--"):
            found.append("")  # in-place editing of its input files
        elif name == "dd" and head == "of":
            found.append(value)
        elif name == "find" and word in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            found.append(nxt)
        elif name == "find" and word == "-delete":
            found.append("")
    return found


_OPERANDS: dict[str, tuple[str, str]] = {
    "rm": ("all", ""),
    "rmdir": ("all", ""),
    "unlink": ("all", ""),
    "shred": ("all", "-n -s --iterations --size --random-source"),
    "touch": ("all", "-d -r -t --date --reference"),
    "mkdir": ("all", "-m --mode --context"),
    "truncate": ("all", "-s -r -o --size --reference"),
    "chmod": ("after-first", "--reference"),
    "chown": ("after-first", "--reference --from"),
    "chgrp": ("after-first", "--reference"),
    "mv": ("all", "-t -S --target-directory --suffix"),
    "cp": ("last", "-t -S --target-directory --suffix"),
    "ln": ("last", "-t -S --target-directory --suffix"),
    "install": ("last", "-m -o -g -t -S --mode --owner --group --target-directory --suffix"),
    "rsync": ("last", "-e -f -T -B --rsh --filter --exclude --include --exclude-from --include-from --files-from "
              "--chmod --chown --temp-dir --partial-dir --backup-dir --suffix --log-file --password-file --port "
              "--timeout --bwlimit --block-size --max-size --min-size --compare-dest --copy-dest --link-dest"),
}  # fmt: skip
"""Programs whose operands are files they change: every operand (`rm`, `mv`: its sources go away), all but
the first (`chmod MODE FILE…`) or the last (`cp … DEST`), and the options that take a value."""


def file_operands(argv: Sequence[str]) -> list[str]:
    """The files a command changes by naming them as operands (`rm x`, `cp a DEST`, `tar -x -C DIR`)."""
    name = base_name(argv[0]) if argv else ""
    if name == "tar":
        extracting = any(w.startswith("--extract") or (w[:2] != "--" and "x" in w) for w in argv[1:2]) or any(
            w in ("-x", "--extract", "--get") for w in argv[1:]
        )
        return _option_values(argv, ("-C", "--directory")) if extracting else []
    spec = _OPERANDS.get(name)
    if spec is None:
        return []
    which, takes = spec[0], frozenset(spec[1].split())
    operands: list[str] = []
    i, options = 1, True
    while i < len(argv):
        word = argv[i]
        if options and word == "--":
            options = False
        elif options and word.startswith("-") and len(word) > 1:
            i += 1 if word in takes else 0
        elif not (name == "rsync" and re.match(r"[^/]*:", word)):  # rsync's host:path is another machine
            operands.append(word)
        i += 1
    targets = _option_values(argv, ("-t", "--target-directory"))
    if which == "all":
        return operands + targets
    if which == "after-first":
        return operands if any(w.startswith("--reference") for w in argv) else operands[1:]
    return targets + (operands[-1:] if len(operands) >= 2 and not targets else [])


def _option_values(argv: Sequence[str], names: tuple[str, ...]) -> list[str]:
    found = []
    for i, word in enumerate(argv[1:], start=1):
        head, eq, value = word.partition("=")
        if word in names and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif eq and head in names:
            found.append(value)
        elif any(word.startswith(n) and len(word) > len(n) and not n.startswith("--") for n in names):
            found.append(word[2:])
    return found


def is_write_flag(word: str) -> bool:
    """A flag that writes a file or runs another command: never covered by a word-prefix rule."""
    return word.partition("=")[0] in GENERIC_WRITE_FLAGS or word.partition("=")[0] in EXEC_FLAGS
