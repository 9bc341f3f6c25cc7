"""The demo's price service, in Python: a replier at /prices that says what a coin costs.

Started by demo/run.py (``./dev demo``). It binds loopback with an ephemeral key, prints
``READY <address>`` (the address pins that key), answers until its stdin closes, then prints
``RESULT <json>``: every request it answered, and the key of whoever asked.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import weida

PRICES = {"btc": 64210, "eth": 3120, "sol": 142}


def say(line: str) -> None:
    print(line, flush=True)


def key_of(peer: weida.PeerKey | weida.PeerLocal | None) -> str:
    return peer.fingerprint if isinstance(peer, weida.PeerKey) else repr(peer)


async def serve(prices: weida.Replier, answered: list[dict[str, Any]]) -> None:
    async for exchange in prices:
        coin = (await exchange.take_body()).decode()
        asker = key_of(exchange.meta.peer)
        if coin in PRICES:
            answer = f"{PRICES[coin]} EUR"
            # Recorded before the reply leaves: the requester may see it, and the demo end,
            # before this task runs again.
            answered.append({"coin": coin, "outcome": "price", "text": answer, "peer": asker})
            say(f"{coin} costs {answer}: replied to {asker}")
            await exchange.reply(answer.encode())
        else:
            reason = f"no price for {coin}"
            answered.append({"coin": coin, "outcome": "rejected", "text": reason, "peer": asker})
            say(f"{coin}: rejected ({reason}) to {asker}")
            await exchange.reject(reason)


async def main() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        prices = listener.replier("/prices")
        say(f"READY {prices.address}")
        say(f"serving /prices as {rt.fingerprint}")
        answered: list[dict[str, Any]] = []
        task = asyncio.ensure_future(serve(prices, answered))
        # Serve until the demo closes our stdin: every reply has reached its requester by then.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        task.cancel()
        say(f"RESULT {json.dumps({'fingerprint': rt.fingerprint, 'answered': answered})}")


if __name__ == "__main__":
    asyncio.run(main())
