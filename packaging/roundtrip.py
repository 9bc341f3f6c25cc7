"""A Pub/Sub round trip over QUIC with the weida a user installed: packaging/check.sh runs it in
a clean venv outside the repository, after the wheel's install and after the sdist's.

Run: python roundtrip.py
"""

from __future__ import annotations

import asyncio

import weida


async def main() -> None:
    async with weida.Runtime() as exchange, weida.Runtime() as desk:
        listener = await exchange.bind("weida://127.0.0.1:0")
        prices = listener.publisher("/prices")
        eur = desk.subscriber()
        await eur.connect(prices.address)  # pins the exchange's key
        await eur.subscribe("prices.*.eur")  # installed at the publisher once it returns
        assert prices.publish("prices.btc.usd", b"45000") == 0, "no filter takes it"
        assert prices.publish("prices.btc.eur", b"42000") == 1, "one subscriber takes it"
        msg = await asyncio.wait_for(eur.recv(), 10)
        assert (msg.meta.topic, msg.body) == ("prices.btc.eur", b"42000"), msg
        topic, body = msg.meta.topic, msg.body.decode()
        print(f"pubsub round trip: {topic} = {body} (weida from {weida.__file__})")


asyncio.run(main())
