"""weida's Python binding, worker of the benchmark suite: Push/Pull and Req/Rep over QUIC
(weida://127.0.0.1), AF_UNIX and in process, both ends in this process and one asyncio loop,
a server runtime and a client runtime as two peers have (the shape of python/bench/bench.py).

Variant "single" (the default) awaits every send and receive; "batch" (Push/Pull only) sends
with send_many and receives with recv_many, 256 a call, which pays the binding's cross-thread
wakeup once per batch instead of once per message.

Pub/Sub: a Publisher on the server runtime, `width` Subscribers on the client runtime, each
subscribed to everything ("bench.#") and receiving with recv_many (256 a call). `publish`
never waits, so the publisher publishes flat out, as the other systems' rows do, and yields
to the loop every 32 messages so the subscribers run; a subscriber that falls behind loses
copies, and the rate counts the copies received.

Two processes (--role bind / dial, common.py): the bind side has the puller, the replier or
the publisher, on a server runtime; the dial side the pusher, the requester or one subscriber,
on a client runtime. The receiver's window opens after its first message.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

import common
import weida

BATCH = 256


def bind_address(transport: str) -> str:
    if transport == "quic":
        return "weida://127.0.0.1:0"
    if transport == "unix":
        return f"weida+unix://{common.tmp_path('w.sock')}"
    return f"weida+inproc://suite-{os.getpid()}"


def bounded(a: argparse.Namespace, job: Any) -> dict[str, Any]:
    """Runs `job` under the stall limit (the run-until-terminated side under its lifetime)."""
    limit = common.lifetime(a) if a.role != "both" else a.warmup + 4 * a.secs + 10
    return asyncio.run(asyncio.wait_for(job, limit))


def push_pull(a: argparse.Namespace) -> dict[str, Any]:
    if a.role == "bind":
        return bounded(a, pull_alone(a))
    if a.role == "dial":
        return bounded(a, push_alone(a))
    return asyncio.run(asyncio.wait_for(push_pull_async(a), a.warmup + 4 * a.secs + 10))


async def pull_alone(a: argparse.Namespace) -> dict[str, Any]:
    """The receiving process: binds, announces, counts from its first message."""
    async with weida.Runtime() as server:
        listener = await server.bind(bind_address(a.transport))
        puller = listener.puller("/p")
        common.announce(puller.address)
        batch = a.variant == "batch"
        meter: common.Meter | None = None
        while True:
            if batch:
                ms = await puller.recv_many(BATCH)
                for m in ms:
                    common.check(len(m.body), a.size)
                k = len(ms)
            else:
                common.check(len((await puller.recv()).body), a.size)
                k = 1
            if meter is None:
                meter = common.Meter(a.warmup, a.secs, a.size)
            elif meter.tick(k):
                return meter.result(a.size)


async def push_alone(a: argparse.Namespace) -> dict[str, Any]:
    """The sending process: sends until terminated."""
    async with weida.Runtime() as client:
        pusher = client.pusher()
        await pusher.connect(a.address)
        data = common.body(a.size)
        bodies = [data] * BATCH
        while True:
            if a.variant == "batch":
                await pusher.send_many(bodies)
            else:
                await pusher.send(data)


async def push_pull_async(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(a.transport))
        puller = listener.puller("/p")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        data = common.body(a.size)
        batch = a.variant == "batch"
        bodies = [data] * BATCH

        async def sender() -> None:
            while True:
                if batch:
                    await pusher.send_many(bodies)
                else:
                    await pusher.send(data)

        task = asyncio.ensure_future(sender())
        meter = common.Meter(a.warmup, a.secs, a.size)
        try:
            while True:
                if batch:
                    ms = await puller.recv_many(BATCH)
                    for m in ms:
                        common.check(len(m.body), a.size)
                    done = meter.tick(len(ms))
                else:
                    common.check(len((await puller.recv()).body), a.size)
                    done = meter.tick()
                if done:
                    return meter.result(a.size)
        finally:
            task.cancel()


def req_rep(a: argparse.Namespace) -> dict[str, Any]:
    if a.role == "bind":
        return bounded(a, reply_alone(a))
    if a.role == "dial":
        return bounded(a, request_alone(a))
    return asyncio.run(asyncio.wait_for(req_rep_async(a), a.warmup + 4 * a.secs + 10))


async def req_rep_async(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(a.transport))
        replier = listener.replier("/r")

        async def serve() -> None:
            async for ex in replier:
                await ex.reply(await ex.take_body())

        task = asyncio.ensure_future(serve())
        req = client.requester()
        await req.connect(replier.address)
        data = common.body(a.size)
        rec = common.Recorder(a.warmup, a.secs)
        try:
            while True:
                began = time.perf_counter()
                common.check(len(await req.request(data)), a.size)
                if rec.record(began):
                    return rec.result()
        finally:
            task.cancel()


async def reply_alone(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as server:
        listener = await server.bind(bind_address(a.transport))
        replier = listener.replier("/r")
        common.announce(replier.address)
        async for ex in replier:
            await ex.reply(await ex.take_body())
    raise RuntimeError("the replier ended")


async def request_alone(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as client:
        req = client.requester()
        await req.connect(a.address)
        data = common.body(a.size)
        rec = common.Recorder(a.warmup, a.secs)
        while True:
            began = time.perf_counter()
            common.check(len(await req.request(data)), a.size)
            if rec.record(began):
                return rec.result()


async def publish_alone(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as server:
        listener = await server.bind(bind_address(a.transport))
        publisher = listener.publisher("/feed")
        common.announce(publisher.address)
        data = common.body(a.size)
        n = 0
        while True:
            publisher.publish("bench.tick", data)
            n += 1
            if n % 32 == 0:
                await asyncio.sleep(0)


async def subscribe_alone(a: argparse.Namespace) -> dict[str, Any]:
    """One subscriber process: joins, READY, waits for the go, then counts its copies."""
    async with weida.Runtime() as client:
        s = client.subscriber()
        await s.connect(a.address)
        await s.subscribe("bench.#")
        await s.recv_many(BATCH)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, common.gate)
        meter = common.Meter(a.warmup, a.secs, a.size)
        while True:
            ms = await s.recv_many(BATCH)
            for m in ms:
                common.check(len(m.body), a.size)
            if meter.tick(len(ms)):
                return meter.result(a.size, copies=True)


def pub_sub(a: argparse.Namespace) -> dict[str, Any]:
    if a.role == "bind":
        return bounded(a, publish_alone(a))
    if a.role == "dial":
        return bounded(a, subscribe_alone(a))
    return asyncio.run(asyncio.wait_for(pub_sub_async(a), a.warmup + 4 * a.secs + 10))


async def pub_sub_async(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(a.transport))
        publisher = listener.publisher("/feed")
        subs = []
        for _ in range(a.width):
            s = client.subscriber()
            await s.connect(publisher.address)
            await s.subscribe("bench.#")  # installed at the publisher when it returns
            subs.append(s)
        data = common.body(a.size)
        meter = common.Meter(a.warmup, a.secs, a.size)
        done = asyncio.get_running_loop().create_future()

        async def receive(s: weida.Subscriber) -> None:
            while not done.done():
                ms = await s.recv_many(BATCH)
                for m in ms:
                    common.check(len(m.body), a.size)
                if meter.tick(len(ms)) and not done.done():
                    done.set_result(None)

        async def publish() -> None:
            n = 0
            while True:
                publisher.publish("bench.tick", data)
                n += 1
                if n % 32 == 0:
                    await asyncio.sleep(0)

        tasks = [asyncio.ensure_future(receive(s)) for s in subs]
        tasks.append(asyncio.ensure_future(publish()))
        try:
            await asyncio.wait([done, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for t in tasks:
                if t.done() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            return meter.result(a.size, copies=True)
        finally:
            for t in tasks:
                t.cancel()


CASES = {"push_pull": push_pull, "req_rep": req_rep, "pub_sub": pub_sub}

if __name__ == "__main__":
    args = common.parse("weida-py", ("quic", "unix", "inproc"), ("single", "batch"))
    sys.exit(common.run(args, {"push_pull": push_pull} if args.variant == "batch" else CASES))
