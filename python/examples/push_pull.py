"""Push/Pull: a pusher spreads jobs over pullers, one stream per message.

Run: python examples/push_pull.py
"""

from __future__ import annotations

import asyncio

import weida


async def main() -> None:
    async with weida.Runtime() as workers, weida.Runtime() as producer:
        listener = await workers.bind("weida://127.0.0.1:0")
        jobs = listener.puller("/jobs")  # its address pins the workers' key

        pusher = producer.pusher()
        await pusher.connect(jobs.address)
        # Small messages in one crossing; each is still its own stream.
        await pusher.send_many(f"job {i}".encode() for i in range(5))
        # A large body streamed in parts, with its transport receipt.
        upload = await pusher.open({"name": "report.csv"})
        async with upload:
            for row in range(3):
                await upload.write(f"row {row}\n".encode())

        received = 0
        async for msg in jobs:
            name = msg.meta.get("name")
            print("got", name.decode() if name else msg.body.decode())
            received += 1
            if received == 6:
                break
        # Let finished transfers reach the peer before closing (a drain, not a cut).
        drained = await producer.drain(5)
        print("drained, outstanding:", drained.outstanding)


if __name__ == "__main__":
    asyncio.run(main())
