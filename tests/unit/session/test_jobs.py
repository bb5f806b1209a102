"""A session's job table on real local jobs: how many may run, what a closing table refuses, how a job's state
reads, and a job whose handle fails or hangs."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from coder_agent.errors import CallFailed
from coder_agent.session import jobs as jobs_module
from coder_agent.session.background import JobExit, OutputBuffer
from coder_agent.session.jobs import Job, JobTable
from coder_agent.session.local_job import start_local_job

pytestmark = pytest.mark.anyio


async def test_the_table_refuses_a_job_past_its_limit_and_once_it_is_closing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_module, "MAX_RUNNING", 1)
    told: list[Job] = []

    async def on_end(job: Job) -> None:
        told.append(job)
        raise RuntimeError("telling failed")  # logged: the table goes on

    async with anyio.create_task_group() as tasks:
        table = JobTable(tasks, on_end)
        quick = table.add(await start_local_job("echo hi", cwd=tmp_path), "echo hi")
        await quick.ended.wait()
        assert told == [quick] and quick.state().startswith("exited with code 0 after")
        table.add(await start_local_job("exec sleep 60", cwd=tmp_path), "exec sleep 60")
        with pytest.raises(CallFailed, match=r"1 jobs are running already .*job_kill"):
            table.check_room()
        await table.aclose()
        with pytest.raises(CallFailed, match="closing"):
            table.check_room()
    assert all(not job.running for job in table.all())
    assert len(told) == 1, "nothing is told once the session is closing"


class Stuck:
    """A handle that never ends when asked to, and one whose run fails: the table must not wait on either forever."""

    terminal_id = None
    input = None

    def __init__(self, fail: bool = False) -> None:
        self.output = OutputBuffer()
        self.fail = fail
        self.released = False

    async def run(self) -> JobExit:
        if self.fail:
            raise OSError("the pipe broke")
        await anyio.sleep_forever()
        raise AssertionError

    async def refresh(self) -> None:
        return None

    def kill(self) -> None:
        return None

    async def release(self) -> None:
        self.released = True


async def test_a_handle_that_fails_or_ignores_a_kill_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "END_WAIT", 0.05)
    async with anyio.create_task_group() as tasks:
        table = JobTable(tasks)
        broken, stuck = Stuck(fail=True), Stuck()
        failed = table.add(broken, "broken")
        hanging = table.add(stuck, "hanging")
        await failed.ended.wait()
        assert failed.state().startswith("lost: the agent could not follow it (the pipe broke)")
        await table.kill(hanging)
        assert hanging.state().startswith("lost: the session closed while it ran")
    assert broken.released and stuck.released


def test_durations_read_as_people_say_them() -> None:
    assert jobs_module._duration(42) == "42 s"
    assert jobs_module._duration(125) == "2 min 5 s"
    assert jobs_module._duration(7_500) == "2 h 5 min"
