"""Raw streams: a peer opens one-way streams and exchanges; an acceptor takes both kinds.

Run: python examples/raw_streams.py
"""

from __future__ import annotations

import asyncio

import weida


async def main() -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind("weida+inproc://raw-example")
        acceptor = listener.acceptor("/raw")

        peer = client.peer()
        await peer.connect(acceptor.address)
        feed = await peer.open({"kind": "feed"})
        async with feed:
            for frame in range(3):
                await feed.write(bytes([frame]) * 4)
        question, answer = await peer.exchange()
        async with question:
            await question.write(b"how many frames?")

        for _ in range(2):
            incoming = await acceptor.accept()
            if isinstance(incoming, weida.IncomingTransfer):
                chunks = [chunk async for chunk in incoming]
                print("stream", incoming.meta.get("kind"), b"".join(chunks).hex())
            else:
                print("exchange", await incoming.take_body())
                await incoming.reply(b"three")
        print("answer", (await answer.body()).body)


if __name__ == "__main__":
    asyncio.run(main())
