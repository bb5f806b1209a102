"""Where the agent's own code lives, so that nothing a session's commands write can become it.

The agent runs on an interpreter, from a virtual environment, with packages it imports late (the Python grammar of
the syntax check at the first edit of a `.py` file, pygls at the first language server, litellm at the first
request), runs `rg` from its environment's scripts, starts its launcher and reaper with its interpreter, and renders
prompt templates (Jinja, which can run Python). All of that runs outside the walls, with the user's rights and, in
the agent's own process, the key. When the agent is started from inside the project it works on (a project with
coder-agent among its development tools, in its `.venv`; a checkout of coder-agent worked on by itself), those files
lie in the session's folder, where sandboxed commands and the model's edits write.

* `own_places()`: the folders and files of that code, resolved once: the interpreter, the virtual environment, the
  standard library, the site-packages folders, the scripts folder, the `coder_agent` package and its prompts.
* The walls keep those inside a session's writable folders read-only for its commands (`sandbox.walls`), and a
  session folder inside one of them (a session opened in `.venv`) gets no walls; the policy asks before a file
  tool changes one of them (`permissions.policy`).
* `stop_importing_from(folders)`: the other folders on `sys.path` inside a session's folders (the project's own
  source folder that an editable install of it puts there, the checkout an editable coder-agent runs from, the
  working folder `python -m` puts first) are taken off it, so a module first imported later is never found there.
  `coder_agent`'s own modules are found through its package (`coder_agent.__path__`), kept read-only as above.

Standard library only.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import site
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

__all__ = ["own_places", "stop_importing_from"]

log = logging.getLogger(__name__)

PACKAGE = Path(__file__).resolve().parent
PATHS = ("stdlib", "platstdlib", "purelib", "platlib", "scripts")
"""The interpreter's folders (`sysconfig`) the agent runs and imports from."""


@functools.cache
def own_places() -> tuple[Path, ...]:
    """The agent's own code, resolved (see the module docstring); only what exists."""
    raw: list[str | Path] = [sys.executable, os.path.realpath(sys.executable), PACKAGE]
    raw += [PACKAGE / "prompts", PACKAGE.parent / "prompts"]  # an installed wheel's, a checkout's
    raw += [sysconfig.get_path(name) for name in PATHS]
    raw += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        raw.append(site.getusersitepackages())
    if sys.prefix != sys.base_prefix:  # a virtual environment: its `pyvenv.cfg` and `bin/python` too
        raw.append(sys.prefix)
    found = [Path(os.path.realpath(path)) for path in raw if path and os.path.lexists(path)]
    return tuple(dict.fromkeys(found))


def inside(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def stop_importing_from(folders: Iterable[str | Path]) -> list[str]:
    """Take off `sys.path` every entry inside `folders` (`~` expanded, resolved) that is not one of `own_places()`
    (those stay, kept read-only by the walls); the entries taken off."""
    real = [Path(os.path.realpath(os.path.expanduser(folder))) for folder in folders]
    own = own_places()
    dropped = []
    for entry in list(sys.path):
        where = Path(os.path.realpath(entry or os.getcwd()))
        if inside(where, real) and where not in own:
            sys.path.remove(entry)
            dropped.append(entry)
    if dropped:
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        log.info("no longer importing from %s: it lies in a session's folder", ", ".join(dropped))
    return dropped
