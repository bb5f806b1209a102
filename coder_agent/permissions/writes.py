"""What a command visibly writes: its flags that write files (`--output`, `curl -o`, `sed -i`, `dd of=`), and
the files it changes by naming them (`rm x`, `cp a DEST`, `tar -x -C DIR`).

Options are read as each program reads them (`options.scan`): attached short values (`curl -sSLo F`, `wget -qOF`,
`sort -oF`, `unzip -dDIR`), combined flags (`install -Dt DIR`, `cp -at DIR`), `--name=value`, and tar's old style
(`tar xfC a.tar DIR`). `write_targets` gives the files a command's flags write (for allow rules, such a command is
exact-only); `file_operands` the files its operands change (judged for where they are, like writes, without making
it exact-only); `is_write_flag` says whether a word is a flag that writes or runs something.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from coder_agent.permissions.options import Syntax, names_in, scan, words
from coder_agent.permissions.programs import EXEC_FLAGS, base_name

GENERIC_WRITE_FLAGS = frozenset(
    {
        "--output", "--output-file", "--output-dir", "--output-directory", "--out", "--outfile", "--out-file",
        "--outdir", "--out-dir", "--log-file", "--logfile", "--junitxml", "--junit-xml", "--basetemp", "--html",
        "--report-log", "--resultlog", "--cov-report", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii",
        "--stderr", "--in-place", "--directory-prefix", "--output-document", "--append-output", "--remote-name",
        "--remote-name-all", "--target-dir", "--cache-dir", "--html-report", "--xml-report", "--write",
        "--etag-save", "--alt-svc", "--hsts", "--reject-file", "--index-file", "--write-batch", "--only-write-batch",
    }
)  # fmt: skip
"""Long flags that make any program write a file (their value, or a name it picks)."""
VALUELESS_WRITE_FLAGS = frozenset({"--remote-name", "--remote-name-all", "--in-place"})
GENERIC_VALUES = frozenset(flag[2:] for flag in GENERIC_WRITE_FLAGS - VALUELESS_WRITE_FLAGS)
COMPILERS = ("cc", "gcc", "g++", "c++", "clang", "clang++", "rustc", "ld", "as", "ld.lld", "ld.gold", "tcc")
TAR = Syntax(
    short_values="bCfFgHIKLNTVX",
    long_values=words("directory file to-command checkpoint-action use-compress-program rsh-command rmt-command "
                      "info-script new-volume-script index-file exclude exclude-from files-from transform xform owner "
                      "group mode mtime newer after-date label blocking-factor record-size format listed-incremental "
                      "starting-file volno-file tape-length suffix strip-components newer-mtime sort warning"),
    long_optional=words("checkpoint backup occurrence atime-preserve one-top-level"),
    long_known=words("extract get create append update catenate concatenate delete list diff compare "
                     "force-local to-stdout verbose"),
)  # fmt: skip
RSYNC = Syntax(
    short_values="efTBM",
    long_values=words("rsh rsync-path filter exclude include exclude-from include-from files-from temp-dir "
                      "partial-dir backup-dir suffix log-file password-file port timeout bwlimit write-batch "
                      "only-write-batch read-batch chmod chown compare-dest copy-dest link-dest remote-option "
                      "block-size max-size min-size"),
)  # fmt: skip
WRITERS: dict[str, tuple[Syntax, frozenset[str]]] = {
    "curl": (
        Syntax(
            short_values="AbcCdDeEFHKmoPQrTuUwxXyYz",
            abbreviate=False,
            long_values=words(
                "output dump-header cookie-jar trace trace-ascii stderr output-dir etag-save "
                "alt-svc hsts header data user-agent user request url config cookie form"
            ),
        ),
        words("-o -D -c -O"),
    ),
    "wget": (
        Syntax(
            short_values="oaiBtOTwQPlARDXIUen",
            long_values=words(
                "output-file append-output output-document directory-prefix input-file execute use-askpass config"
            ),
        ),
        words("-o -a -O -P"),
    ),
    "sort": (
        Syntax(
            short_values="ktoST",
            long_values=words("key field-separator output buffer-size temporary-directory compress-program"),
        ),
        words("-o"),
    ),
    "ruff": (Syntax(short_values="o"), words("-o")),
    "patch": (
        Syntax(short_values="BDFiopVYzrdg", long_values=words("output reject-file input directory")),
        words("-o -r"),
    ),
    "pandoc": (Syntax(short_values="ofrtdMVcHBAL"), words("-o")),
    "unzip": (Syntax(short_values="dP", permute=True), words("-d")),
    "strace": (Syntax(short_values="abeEIoOpPsSuUX"), words("-o")),
    "ltrace": (Syntax(short_values="aAeEnolpsSuwx"), words("-o")),
    "less": (Syntax(short_values="bhjkoOpPtTxyz#D"), words("-o -O")),
    "javac": (
        Syntax(
            single_dash=words("d s h cp classpath sourcepath"),
            single_dash_values=words("d s h cp classpath sourcepath"),
            abbreviate=False,
        ),
        words("-d -s -h"),
    ),
    "openssl": (
        Syntax(single_dash=words("out keyout"), single_dash_values=words("out keyout"), abbreviate=False),
        words("-out -keyout"),
    ),
    **{cc: (Syntax(short_values="oIlLDUxu"), words("-o")) for cc in COMPILERS},
}
"""Programs with short or one-dash flags that write a file: how they read options, and those flags."""
SHORT_WRITE_FLAGS = {name: names for name, (_, names) in WRITERS.items()}
GIT_WRITERS = {"archive": "o", "format-patch": "o"}


def write_targets(argv: Sequence[str]) -> list[str]:
    """Files a command's own flags write (`--output=x`, `curl -sSLo x`, `tee x`, `sed -i`, `dd of=x`,
    `find -fprint x`)."""
    if not argv:
        return []
    name = base_name(argv[0])
    found: list[str] = []
    syntax, flags = WRITERS.get(name, (Syntax(abbreviate=False), frozenset()))
    if name == "go":
        return _go_writes(argv)
    if name == "git" and (sub := next((w for w in argv[1:] if not w.startswith("-")), "")) in GIT_WRITERS:
        syntax, flags = Syntax(short_values=GIT_WRITERS[sub]), frozenset({f"-{GIT_WRITERS[sub]}"})
    options, _ = scan(argv, dataclasses.replace(syntax, long_values=syntax.long_values | GENERIC_VALUES))
    for option in options:
        if names_in(option, GENERIC_WRITE_FLAGS) or names_in(option, flags):
            found.append(option.value if option.value is not None else "")  # without one: a name it picks
    for i, word in enumerate(argv[1:], start=1):
        head, _, value = word.partition("=")
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if name == "tee" and not word.startswith("-"):
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


GO_WRITE_FLAGS = words("o cpuprofile memprofile blockprofile mutexprofile coverprofile trace outputdir fuzzcachedir")
"""go build/test flags (and the test binary's `-test.…` ones) whose value is a file or folder it writes."""


def _go_writes(argv: Sequence[str]) -> list[str]:
    """go's flag package: `-name=v`, `-name v`, one dash or two, never combined letters."""
    found = []
    for i, word in enumerate(argv[1:], start=1):
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, eq, value = word.lstrip("-").partition("=")
        if name.removeprefix("test.") in GO_WRITE_FLAGS:
            found.append(value if eq else argv[i + 1] if i + 1 < len(argv) else "")
    return found


def _copier(short: str = "", values: str = "", optional: str = "") -> Syntax:
    """cp, mv, ln and install: `-t DIR`/`--target-directory`, `-S`/`--suffix`, `--backup[=…]`, and their own."""
    return Syntax(
        short_values="tS" + short,
        long_values=words(f"target-directory suffix {values}"),
        long_optional=words(f"backup {optional}"),
    )


_OPERANDS: dict[str, tuple[str, Syntax]] = {
    "rm": ("all", Syntax()),
    "rmdir": ("all", Syntax()),
    "unlink": ("all", Syntax()),
    "shred": ("all", Syntax(short_values="ns", long_values=words("iterations size random-source"))),
    "touch": ("all", Syntax(short_values="drt", long_values=words("date reference time"))),
    "mkdir": ("all", Syntax(short_values="m", long_values=words("mode"), long_optional=words("context"))),
    "truncate": ("all", Syntax(short_values="sro", long_values=words("size reference"))),
    "chmod": ("after-first", Syntax(long_values=words("reference"))),
    "chown": ("after-first", Syntax(long_values=words("reference from"))),
    "chgrp": ("after-first", Syntax(long_values=words("reference"))),
    "mv": ("all", _copier(optional="update")),
    "cp": ("last", _copier(optional="update preserve no-preserve reflink sparse")),
    "ln": ("last", _copier()),
    "install": ("last", _copier("mgo", "mode owner group strip-program")),
    "rsync": ("last", RSYNC),
    "scp": ("last", Syntax(short_values="cDFiJloPSX", abbreviate=False)),
}
"""Programs whose operands are files they change: every operand (`rm`, `mv`: its sources go away), all but
the first (`chmod MODE FILE…`) or the last (`cp … DEST`), and how they read their options."""
REMOTE = re.compile(r"[^/]*:")
"""`host:path` (rsync, scp): a file on another machine."""


def file_operands(argv: Sequence[str]) -> list[str]:
    """The files a command changes by naming them as operands (`rm x`, `cp a DEST`, `tar -x -C DIR`, `sed -i … F`,
    `split F PREFIX`, the start points of `find … -delete`)."""
    name = base_name(argv[0]) if argv else ""
    if name in ("tar", "gtar", "bsdtar"):
        return _tar_writes(argv)
    if name in EDITORS_IN_PLACE:
        return EDITORS_IN_PLACE[name](argv)
    spec = _OPERANDS.get(name)
    if spec is None:
        return []
    which, syntax = spec
    options, indexes = scan(argv, syntax)
    operands = [argv[k] for k in indexes if not (name in ("rsync", "scp") and REMOTE.match(argv[k]))]
    targets = [o.value for o in options if names_in(o, {"-t", "--target-directory"}) and o.value is not None]
    if which == "all":
        return operands + targets
    if which == "after-first":
        return operands if any(names_in(o, {"--reference"}) for o in options) else operands[1:]
    return targets + (operands[-1:] if len(operands) >= 2 and not targets else [])


def _tar_writes(argv: Sequence[str]) -> list[str]:
    """tar extracting writes under `-C DIR`; creating or adding writes the archive (`-f`)."""
    if len(argv) > 1 and not argv[1].startswith("-"):
        argv = tar_old_style(argv)
    options, _ = scan(argv, TAR)
    letters = {name for option in options for name in option.names}
    extracting = bool(letters & {"-x", "--extract", "--get"})
    creating = bool(letters & {"-c", "-r", "-u", "-A", "--create", "--append", "--update", "--catenate",
                               "--concatenate", "--delete"})  # fmt: skip
    found: list[str] = []
    for option in options:
        if option.value is None:
            continue
        into = extracting and names_in(option, {"-C", "--directory"})
        if into or (creating and names_in(option, {"-f", "--file"}) and option.value != "-"):
            found.append(option.value)
    return found


def tar_old_style(argv: Sequence[str]) -> list[str]:
    """`tar xfC a.tar DIR`: the letters of the first word are options, their values the next words in order."""
    letters, rest = argv[1], list(argv[2:])
    out = [argv[0]]
    for letter in letters:
        if letter in TAR.short_values and rest:
            out += [f"-{letter}", rest.pop(0)]
        else:
            out.append(f"-{letter}")
    return out + rest


def is_write_flag(word: str) -> bool:
    """A flag that writes a file or runs another command: never covered by a word-prefix rule."""
    return word.partition("=")[0] in GENERIC_WRITE_FLAGS or word.partition("=")[0] in EXEC_FLAGS


SED = Syntax(
    short_values="efl", short_optional="i",
    long_values=words("expression file line-length"), long_optional=words("in-place"),
    long_known=words("quiet silent debug posix regexp-extended separate sandbox unbuffered null-data follow-symlinks"),
)  # fmt: skip
SPLIT = Syntax(
    short_values="abClnt",
    long_values=words("suffix-length additional-suffix bytes line-bytes lines number separator filter"),
    long_optional=words("numeric-suffixes hex-suffixes"),
)
CSPLIT = Syntax(short_values="bfn", long_values=words("suffix-format prefix digits"))


def _sed(argv: Sequence[str]) -> list[str]:
    """`sed -i` edits its input files: the operands after the script (the first operand, without `-e`/`-f`)."""
    options, operands = scan(argv, SED)
    if not any(names_in(o, {"-i", "--in-place"}) for o in options):
        return []
    scripted = any(names_in(o, {"-e", "--expression", "-f", "--file"}) for o in options)
    return [argv[k] for k in operands[0 if scripted else 1 :]]


def _perl(argv: Sequence[str]) -> list[str]:
    """`perl -i` edits the files named after its script (perl's switches end at the first operand; `-i`, `-e` and
    the switches with a value take the rest of their word)."""
    i, in_place, scripted = 1, False, False
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        word = argv[i]
        if word == "--":
            i += 1
            break
        for k in range(1, len(word)):
            letter = word[k]
            if letter in "eE":
                scripted = True
                i += 1 if k + 1 == len(word) else 0  # the code is the next word, or the rest of this one
                break
            if letter == "i":
                in_place = True
                break
            if letter in "0CdDFIlmMx":
                break
        i += 1
    operands = list(argv[i:])
    return (operands if scripted else operands[1:]) if in_place else []


def _split(argv: Sequence[str]) -> list[str]:
    """`split [FILE [PREFIX]]`: the files it writes start with PREFIX."""
    _, operands = scan(argv, SPLIT)
    return [argv[k] for k in operands[1:2]]


def _csplit(argv: Sequence[str]) -> list[str]:
    """`csplit -f PREFIX`: the files it writes start with PREFIX."""
    options, _ = scan(argv, CSPLIT)
    return [o.value for o in options if names_in(o, {"-f", "--prefix"}) and o.value is not None]


def _find(argv: Sequence[str]) -> list[str]:
    """`find START… -delete` removes what it finds under its start points."""
    if "-delete" not in argv[1:]:
        return []
    starts = []
    for word in argv[1:]:
        if word.startswith("-") or word in ("(", "!", ","):
            break
        starts.append(word)
    return starts or ["."]


EDITORS_IN_PLACE = {
    "sed": _sed, "gsed": _sed, "perl": _perl, "split": _split, "gsplit": _split, "csplit": _csplit,
    "gcsplit": _csplit, "find": _find,
}  # fmt: skip
"""Programs whose changed files are found by a reader of their own (in-place editors, splitters, `find -delete`)."""
