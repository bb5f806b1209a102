"""`ToolContext`: what a tool may ask of its session while it prepares and runs one call.

Paths are resolved and held against the session's roots here, once (`path`): a tool acts on the place the
policy judged and refuses to go on if a symlink was swapped in since (`still_there`, checked again just
before a write; on the disk, reads and writes reach the checked place without following any symlink). Files are read as
UTF-8 text only (a binary file is refused before it is read), through the session's `ClientBridge`; a file
too big to read whole is read as a window of lines. Writes are checked against what the model last read,
snapshotted for `/undo`, and remembered. Commands run through the bridge (the editor's terminal or a local
process group) and show themselves in the call as soon as they start, and so do background jobs (`start_job`);
the agent's own checks run locally (`run_local`, the local bridge's process machinery). Questions for the user go
through the bridge too, tied to the call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from coder_agent import nofollow
from coder_agent.checkpoints import CheckpointError
from coder_agent.errors import CallFailed
from coder_agent.permissions import Action, Choice, PermissionPolicy, Place, analyse, resolve, still_there
from coder_agent.permissions.paths import command_writes
from coder_agent.protocol.content import TerminalContent, ToolCallContent, ToolKind
from coder_agent.protocol.schema import NoticeSeverity, SessionUpdate
from coder_agent.session.bridge import CommandResult, NoOneToAsk
from coder_agent.session.jobs import Job
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.turn_context import SwitchMode, TurnContext
from coder_agent.session.user_questions import Answer, Question
from coder_agent.tools.calls import ToolError
from coder_agent.tools.file_view import SNIFF_BYTES, content_hash, looks_binary
from coder_agent.tools.images import MAX_IMAGE_BYTES, SNIFF, image_mime

log = logging.getLogger(__name__)

WHOLE_FILE_BYTES = 4_000_000
"""Files up to this size are read whole (and can be edited); bigger ones only as a window of lines."""

Progress = Callable[[list[ToolCallContent]], Awaitable[None]]
AskOutside = Callable[[str], Awaitable[bool]]
"""Ask the user whether a command may run again outside the sandbox (why it seems to need to)."""


async def _never_outside(why: str) -> bool:
    return False


AcceptsImages = Callable[[], Awaitable[bool | None]]
"""Whether the turn's model takes images: True, False, or None when that is not known."""
Choose = Callable[[list[ToolCallContent], list[Choice]], Awaitable[str]]
"""Ask the user to pick one of some choices about the call, showing some content; the id picked."""


async def _no_one_chooses(content: list[ToolCallContent], choices: list[Choice]) -> str:
    raise NoOneToAsk


@dataclass(frozen=True)
class FileChange:
    """A change of one file: its text before (None: it does not exist) and after (None: delete it)."""

    place: Place
    old: str | None
    new: str | None


@dataclass(frozen=True)
class FileText:
    """What was read of a file: all of it, or lines `first`.. of it when the file is too big to read whole."""

    text: str
    first: int = 1
    whole: bool = True
    size: int = 0


class ToolContext:
    """One tool call's view of its turn."""

    def __init__(
        self,
        turn: TurnContext,
        progress: Progress,
        call_id: str | None = None,
        ask_outside: AskOutside = _never_outside,
        accepts_images: AcceptsImages | None = None,
        choose: Choose = _no_one_chooses,
    ) -> None:
        self.call_id = call_id
        """The tool call this context serves (None for calls that are not shown as one)."""
        self.cwd = turn.cwd
        self.roots = list(turn.roots)
        self.policy: PermissionPolicy = turn.policy
        self.config = turn.config
        """The settings the turn started with."""
        self._files = turn.files
        self._checkpoints = turn.checkpoints
        self._bridge = turn.bridge
        self._sandbox = turn.sandbox
        self.jobs = turn.jobs
        self.lsp = turn.lsp
        """The project's language servers that check edits (None: none to ask)."""
        self._switch_mode = turn.switch_mode
        self.delegate = turn.delegate
        """Runs `task` calls as sub-agents (None in a sub-agent's own calls)."""
        self.reading_refused = turn.reading_refused
        """Why the agent must not read a file on its own (a project's skill): `TurnContext.reading_refused`."""
        """The session's background jobs."""
        self._job_owner = turn.session_id if turn.parent_id is not None else None
        self._ask_outside = ask_outside
        self._progress = progress
        self._shown: list[ToolCallContent] = []
        self._accepts_images = accepts_images
        self._choose = choose

    # ---- paths --------------------------------------------------------------------------------

    def path(self, raw: str | Path) -> Place:
        """Where `raw` really lies (symlinks and `..` resolved), held against the session's roots."""
        return resolve(raw, self.roots)

    def display(self, path: Path) -> str:
        """A path as the user reads it: relative inside the working directory, absolute elsewhere."""
        return (
            path.relative_to(self.cwd).as_posix() if path.is_relative_to(self.cwd) and path != self.cwd else str(path)
        )

    def action(self, kind: ToolKind, place: Place) -> Action:
        return Action(kind, places=(place,))

    @property
    def commands_have_own_loopback(self) -> bool:
        """Whether the session's commands run in a network of their own (the Linux sandbox, not full-auto), whose
        127.0.0.1 the agent's own requests (`fetch`) do not reach."""
        return self._sandbox is not None and self._sandbox.network is not None and self.policy.mode != "full-auto"

    def command_action(self, command: str, outside_because: str | None = None) -> Action:
        """A command line, parsed, with the files it visibly writes resolved against the roots; where it will run:
        inside the session's sandbox, unless the session has none, the mode is full-auto, or it is to run outside
        (`outside_because`: the model asked, and why)."""
        line = analyse(command)
        writes = command_writes(line, self.roots)
        if self._sandbox is None or self.policy.mode == "full-auto":
            return Action("execute", command=line, writes=writes)
        if outside_because is not None:
            return Action("execute", command=line, writes=writes, outside_because=outside_because)
        return Action("execute", command=line, writes=writes, sandboxed=True)

    def still_there(self, place: Place) -> None:
        """Refuse to act if the path no longer resolves to what was checked (a symlink swapped in since)."""
        if not still_there(place):
            raise _swapped(place.path)

    # ---- files --------------------------------------------------------------------------------

    async def exists(self, path: Path) -> bool:
        return await anyio.Path(path).exists()

    async def read(self, path: Path, *, first: int = 1, limit: int | None = None, real: Path | None = None) -> FileText:
        """The file's text, whole if it is small enough, else lines `first`..`first+limit-1`; ToolError.
        `real`: the place the path was checked at (`Place.real`); the disk is read there, following no symlink."""
        size = await self._check_text_file(path, real)
        if size <= WHOLE_FILE_BYTES:
            return FileText(await self._bridge.read_text_file(path, real=real), size=size)
        window = await self._bridge.read_text_file(path, line=first, limit=limit, real=real)
        return FileText(window, first=first, whole=False, size=size)

    async def read_whole(self, path: Path, verb: str, real: Path | None = None) -> str:
        """The whole text of a file the model is about to change (ToolError for files too big to edit)."""
        text = await self.read(path, real=real)
        if not text.whole:
            raise ToolError(
                f"{path} is too big to {verb} with this tool ({text.size:,} bytes); change it with a command instead."
            )
        return text.text

    async def read_image(self, path: Path, real: Path | None = None) -> tuple[str, bytes] | None:
        """(type, bytes) when the file is an image a model takes (told by its first bytes), else None; ToolError
        for one too big to send. Read from the disk (an editor serves text only), along the checked path."""
        try:
            return await anyio.to_thread.run_sync(_image, path, real)
        except nofollow.Swapped:
            raise _swapped(path) from None
        except (FileNotFoundError, IsADirectoryError):
            return None  # the text read says what is wrong
        except OSError as exc:
            raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None

    async def model_sees_images(self) -> bool | None:
        """Whether the turn's model takes images (None: not known)."""
        return await self._accepts_images() if self._accepts_images is not None else None

    def remember(self, path: Path, text: str) -> None:
        """The text the model has now seen of a file (after a whole read or its own write)."""
        self._files.remember(path, content_hash(text))

    def has_read(self, path: Path) -> bool:
        """Whether the model has read the file (or written it) in this session."""
        return self._files.known(path) is not None

    def check_fresh(self, path: Path, text: str, verb: str) -> None:
        """Refuse to change a file the model has not read, or that changed since it did."""
        known = self._files.known(path)
        if known is None:
            raise ToolError(f"Read {path} with read_file before you {verb} it.")
        if known != content_hash(text):
            raise ToolError(
                f"{path} has changed since you last read it (edited by the user or another program). "
                "Read it again, then make your change against the current text."
            )

    async def write(self, place: Place, old: str | None, new: str) -> None:
        """Write a file the model changed: re-check it, snapshot it for /undo, write, remember the new text."""
        await self.write_all([FileChange(place, old, new)])

    async def write_all(self, changes: Sequence[FileChange]) -> None:
        """Make several changes, all or none: re-check every file (still where it was checked, still the text the
        change was made against), snapshot them all for /undo, then write (or delete) each. If one fails, those
        done before it are put back and the error says so."""
        for change in changes:
            self.still_there(change.place)
            path = change.place.path
            current = await self.read_whole(path, "write", change.place.real) if await self.exists(path) else None
            if current != change.old:
                raise ToolError(f"{path} changed while waiting for permission; read it again and redo the change.")
        checkpoints = self._checkpoints
        for change in changes:
            if self.lsp is not None:
                await self.lsp.before_write(change.place.path)
            try:
                await checkpoints.before_change(change.place.path, change.old)
            except CheckpointError as exc:
                log.warning("no undo snapshot of %s: %s", change.place.path, exc)
        done: list[FileChange] = []
        try:
            for change in changes:
                self.still_there(change.place)
                await self._put(change.place, change.new)
                done.append(change)
        except (CallFailed, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if not done:
                raise ToolError(why) from None
            for change in reversed(done):
                try:
                    await self._put(change.place, change.old)
                except (CallFailed, OSError):
                    log.exception("could not put back %s", change.place.path)
            raise ToolError(
                f"{why} The {len(done)} file(s) changed before this one were put back, so nothing changed."
            ) from None
        for change in changes:
            if change.new is None:
                self._files.forget(change.place.path)
                continue
            checkpoints.after_change(change.place.path, change.new)
            self.remember(change.place.path, change.new)

    async def _put(self, place: Place, text: str | None) -> None:
        """Write `text` to the file, or delete the file (None)."""
        if text is not None:
            await self._bridge.write_text_file(place.path, text, real=place.real)
            return
        try:
            await anyio.to_thread.run_sync(nofollow.unlink, place.real)
        except FileNotFoundError:
            return
        except nofollow.Swapped:
            raise _swapped(place.path) from None
        except OSError as exc:
            raise ToolError(f"Could not delete {place.path}: {exc.strerror or exc}.") from None

    async def _check_text_file(self, path: Path, real: Path | None = None) -> int:
        """The file's size; ToolError unless it is a file that looks like UTF-8 text."""
        if await anyio.Path(path).is_dir():
            raise ToolError(f"{path} is a directory; use glob to list it.")
        try:
            size, head = await anyio.to_thread.run_sync(_sniff, path, real)
        except nofollow.Swapped:
            raise _swapped(path) from None
        except FileNotFoundError:
            raise ToolError(f"{path} does not exist.") from None
        except OSError as exc:
            raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None
        if looks_binary(head, head=len(head) > SNIFF_BYTES):
            raise ToolError(
                f"{path} is not a UTF-8 text file (binary or another encoding); it was not read or changed."
            )
        return size

    # ---- commands and the call's display ------------------------------------------------------

    async def run_command(self, command: str, timeout: float, *, sandboxed: bool) -> CommandResult:
        """Run a command line in the working directory, inside the session's sandbox if `sandboxed`; what lets the
        user watch it joins the call's content."""
        sandbox = self._sandbox if sandboxed else None
        return await self._bridge.run_command(
            command, cwd=self.cwd, timeout=timeout, show=self.show, sandbox=sandbox, folders=self.planted
        )

    async def start_job(
        self, command: str, *, sandboxed: bool, with_input: bool = False, description: str | None = None
    ) -> Job:
        """Start a command line in the background as one of the session's jobs, inside the sandbox if `sandboxed`;
        the terminal the user watches it in joins the call's content. CallFailed if it cannot start."""
        self.jobs.check_room()
        sandbox = self._sandbox if sandboxed else None
        handle = await self._bridge.start_command(
            command, cwd=self.cwd, sandbox=sandbox, with_input=with_input, folders=self.planted
        )
        job = self.jobs.add(handle, command, description=description, sandboxed=sandboxed, owner=self._job_owner)
        if job.terminal_id is not None:
            await self.show(TerminalContent(terminal_id=job.terminal_id))
        return job

    @property
    def planted(self) -> tuple[Path, ...]:
        """Where the session's commands may write (its folders; with walls, also their temp, cache and extra
        writable folders): a program the agent starts itself (`rg`, a shell let out of the walls) never comes from a
        PATH entry there."""
        return self._sandbox.walls.writable if self._sandbox is not None else tuple(self.roots)

    @property
    def walls(self) -> list[str]:
        """The session's sandbox in words (empty without one)."""
        return self._sandbox.walls.describe() if self._sandbox is not None else []

    async def ask_outside(self, why: str) -> bool:
        """Ask the user whether the call's command may run again, outside the sandbox; False if not."""
        return await self._ask_outside(why)

    async def run_local(self, command: str, timeout: float) -> CommandResult:
        """Run a command line of the agent's own (a check after an edit) as a local process, never in the editor's
        terminal: in the working directory, inside the session's sandbox whatever the mode (where it has one), in
        its own process group, with the environment commands get (no keys), its output capped, killed after
        `timeout`. Nothing is shown."""
        return await LocalBridge().run_command(
            command, cwd=self.cwd, timeout=timeout, show=_shown_nowhere, sandbox=self._sandbox, folders=self.planted
        )

    async def show(self, content: ToolCallContent) -> None:
        """Add to what the call shows while it runs (a terminal, progress)."""
        self._shown.append(content)
        await self._progress(list(self._shown))

    async def show_all(self, content: list[ToolCallContent]) -> None:
        """Replace what the call shows while it runs (a sub-agent's progress)."""
        self._shown = list(content)
        await self._progress(list(self._shown))

    @property
    def shown(self) -> list[ToolCallContent]:
        return list(self._shown)

    async def update(self, update: SessionUpdate) -> None:
        """Send a session update of the tool's own (a plan)."""
        await self._bridge.update(update)

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        """Tell the user something live (a retry of a model call)."""
        await self._bridge.notice(severity, title, description)

    async def ask(self, question: Question) -> Answer:
        """Ask the user (see `ClientBridge.ask`); BridgeError if the client failed to answer."""
        return await self._bridge.ask(question)

    async def choose(self, content: list[ToolCallContent], choices: list[Choice]) -> str:
        """Ask the user to pick one of `choices` about this call (a permission request showing `content`); the id
        picked. TurnCancelled on a cancel, NoOneToAsk when no one can answer, BridgeError if the client failed."""
        return await self._choose(content, choices)

    @property
    def switch_mode(self) -> SwitchMode | None:
        """Change the session's mode (telling the client), where this call's session may (not a sub-agent's)."""
        return self._switch_mode


def _swapped(path: Path) -> ToolError:
    return ToolError(f"{path} changed since it was checked (it now leads elsewhere); nothing was done.")


async def _shown_nowhere(content: ToolCallContent) -> None:
    return None


def _image(path: Path, real: Path | None) -> tuple[str, bytes] | None:
    with nofollow.open_file(real) if real is not None else path.open("rb") as handle:
        mime = image_mime(handle.read(SNIFF))
        if mime is None:
            return None
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{path} is an image of {size / 1_000_000:.1f} MB, more than the {MAX_IMAGE_BYTES // 1_000_000} MB "
                "a model is sent; make a smaller copy (for example with ImageMagick: "
                '`convert in.png -resize 50% "$TMPDIR/small.png"`, the sandbox\'s own temp folder) and read that.'
            )
        handle.seek(0)
        return mime, handle.read(MAX_IMAGE_BYTES + 1)


def _sniff(path: Path, real: Path | None) -> tuple[int, bytes]:
    """The file's size and its first bytes (one more than sniffed tells whether it goes on)."""
    with nofollow.open_file(real) if real is not None else path.open("rb") as handle:
        return os.fstat(handle.fileno()).st_size, handle.read(SNIFF_BYTES + 1)
