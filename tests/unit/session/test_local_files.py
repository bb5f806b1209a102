"""The local bridge acts on the place that was checked: a symlink swapped into the path since is not followed.

The permission check resolves a path (`permissions.paths.resolve`) and the tool re-checks it before acting,
but a command still running in the background can swap a folder for a symlink in between. Given the real
place it was checked at, the bridge walks to it without following any symlink, so the swap makes the call
fail instead of reading or writing outside the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from coder_agent.session.bridge import BridgeError
from coder_agent.session.local_bridge import LocalBridge

pytestmark = pytest.mark.skipif(os.open not in os.supports_dir_fd, reason="needs openat()")


def swap_for_symlink(folder: Path, target: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(target, target_is_directory=True)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    return work, outside


def test_a_write_does_not_follow_a_folder_swapped_for_a_symlink(places: tuple[Path, Path]) -> None:
    work, outside = places
    checked = work / "sub" / "new.txt"
    swap_for_symlink(work / "sub", outside)
    with pytest.raises(BridgeError, match="changed since it was checked"):
        anyio.run(lambda: LocalBridge().write_text_file(checked, "pwned", real=checked))
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_read_does_not_follow_a_folder_swapped_for_a_symlink(places: tuple[Path, Path]) -> None:
    work, _ = places
    checked = work / "sub" / "secret.txt"
    (work / "sub" / "secret.txt").write_text("inside\n")
    swap_for_symlink(work / "sub", places[1])
    with pytest.raises(BridgeError, match="changed since it was checked"):
        anyio.run(lambda: LocalBridge().read_text_file(checked, real=checked))
    with pytest.raises(BridgeError, match="changed since it was checked"):
        anyio.run(lambda: LocalBridge().read_text_file(checked, line=1, limit=5, real=checked))


def test_a_file_swapped_for_a_symlink_is_replaced_not_followed(places: tuple[Path, Path]) -> None:
    work, outside = places
    checked = work / "sub" / "notes.txt"
    checked.symlink_to(outside / "secret.txt")
    anyio.run(lambda: LocalBridge().write_text_file(checked, "mine\n", real=checked))
    assert (outside / "secret.txt").read_text() == "outside secret\n"
    assert not checked.is_symlink() and checked.read_text() == "mine\n"
    link = work / "sub" / "link.txt"
    link.symlink_to(outside / "secret.txt")
    with pytest.raises(BridgeError):
        anyio.run(lambda: LocalBridge().read_text_file(link, real=link))


def test_writes_still_make_missing_folders_and_keep_the_mode(places: tuple[Path, Path]) -> None:
    work, _ = places
    target = work / "a" / "b" / "c.txt"
    anyio.run(lambda: LocalBridge().write_text_file(target, "x\n", real=target))
    assert target.read_text() == "x\n"
    script = work / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    anyio.run(lambda: LocalBridge().write_text_file(script, "#!/bin/sh\necho\n", real=script))
    assert script.stat().st_mode & 0o777 == 0o750
    assert anyio.run(lambda: LocalBridge().read_text_file(script, real=script)) == "#!/bin/sh\necho\n"
