"""Pub/Sub: a publisher fans messages out by topic; each subscriber gets what its filters select.

Filters are segments separated by ``.``: ``*`` matches one whole segment, a trailing ``#`` any
number. ``publish`` never waits for a subscriber: one that cannot keep up loses copies, which
the publisher counts by cause, and (with ``ordering="detect"``) sees as gaps.

Run: python examples/pubsub.py
"""

from __future__ import annotations

import asyncio

import weida


async def main() -> None:
    async with (
        weida.Runtime() as server,
        weida.Runtime(ordering="detect") as client,  # number each copy, report gaps
    ):
        listener = await server.bind("weida://127.0.0.1:0")
        prices = listener.publisher("/prices")  # its address pins the server's key

        eur = client.subscriber()
        await eur.connect(prices.address)
        await eur.subscribe("prices.*.eur")  # installed at the publisher when it returns
        alerts = client.subscriber()
        await alerts.subscribe("alerts.#")  # filters may come before connect
        await alerts.connect(prices.address)

        for topic, body in [
            ("prices.btc.eur", b"42000"),
            ("prices.btc.usd", b"45000"),  # nobody selects it
            ("prices.eth.eur", b"2300"),
            ("alerts.exchange.down", b"kraken"),
        ]:
            copies = prices.publish(topic, body)
            print(f"published {topic}: {copies} copies")

        for _ in range(2):
            m = await eur.recv()
            meta = m.meta
            print(f"eur got {meta.topic} {m.body.decode()} seq={meta.sequence} gap={meta.gap}")
        async for m in alerts:
            print(f"alert {m.meta.topic} {m.body.decode()}")
            break

        # A payload larger than a subscriber's byte budget is streamed in chunks.
        async with prices.open("alerts.report") as report:
            for part in range(3):
                await report.write(f"part {part};".encode())
        print("alert", (await alerts.recv()).body.decode())
        print("dropped:", prices.dropped().total)


if __name__ == "__main__":
    asyncio.run(main())
