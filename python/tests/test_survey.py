"""SURVEY (PATTERNS §6; core/tests/survey.rs: the same names): one question to every connected
respondent, their answers until a deadline, over every transport."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Pair

import weida


def answering(listener: weida.Listener, n: int) -> tuple[list[str], list[asyncio.Task[None]]]:
    """Binds respondents at ``/r0``.. answering ``path:question``."""
    addresses, tasks = [], []
    for i in range(n):
        path = f"/r{i}"
        r = listener.respondent(path)

        async def serve(r: weida.Replier = r, path: str = path) -> None:
            async for ex in r:
                q = await ex.take_body()
                await ex.reply(path.encode() + b":" + q)

        addresses.append(r.address)
        tasks.append(asyncio.create_task(serve()))
    return addresses, tasks


async def test_every_respondent_answers_within_the_deadline(pair: Pair) -> None:
    addresses, tasks = answering(pair.listener, 3)
    surveyor = pair.client.surveyor()
    for a in addresses:
        await surveyor.connect(a)
    run = await surveyor.survey(b"who?", 20)
    assert run.respondents == 3
    got = []
    async for answer in run:
        assert isinstance(answer, weida.Message)
        got.append(answer.body)
    assert sorted(got) == [b"/r0:who?", b"/r1:who?", b"/r2:who?"]
    assert (run.late, run.expired) == (0, False)
    for t in tasks:
        t.cancel()


async def test_a_late_reply_is_counted_and_not_delivered(pair: Pair) -> None:
    slow = pair.listener.respondent("/slow")
    go = asyncio.Event()

    async def serve() -> None:
        ex = await slow.accept()
        await ex.take_body()
        await go.wait()
        await ex.reply(b"too late")

    task = asyncio.create_task(serve())
    surveyor = pair.client.surveyor()
    await surveyor.connect(slow.address)
    run = await surveyor.survey(b"q", 0.3)
    assert run.respondents == 1
    assert await run.answer() is None
    assert run.expired
    go.set()
    await task
    # Counted where it arrives, once the exchange ends.
    await run.settled()
    assert run.late == 1
    assert await run.answer() is None


async def test_a_respondent_that_refuses_is_one_error_among_replies(pair: Pair) -> None:
    no = pair.listener.respondent("/no")

    async def refuse() -> None:
        async for ex in no:
            await ex.reject("not me")

    refusing = asyncio.create_task(refuse())
    addresses, tasks = answering(pair.listener, 2)
    surveyor = pair.client.surveyor()
    for a in [no.address, *addresses]:
        await surveyor.connect(a)
    run = await surveyor.survey(b"q", 20)
    answers = [a async for a in run]
    assert len(answers) == 3
    errors = [a for a in answers if isinstance(a, weida.WeidaError)]
    assert len(errors) == 1 and "not me" in str(errors[0])
    for t in [refusing, *tasks]:
        t.cancel()


async def test_a_survey_with_no_respondents_is_empty_not_an_error(pair: Pair) -> None:
    run = await pair.client.surveyor().survey(b"anyone?", 20)
    assert run.respondents == 0
    assert await run.answer() is None
    assert [a async for a in run] == []


async def test_a_survey_deadline_must_be_a_duration(pair: Pair) -> None:
    with pytest.raises(weida.InvalidConfig):
        await pair.client.surveyor().survey(b"q", -1)
