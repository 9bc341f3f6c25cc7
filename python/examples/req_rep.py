"""Req/Rep: a replier answers, a requester tells a lost reply (Indeterminate) from a failure.

Run: python examples/req_rep.py
"""

from __future__ import annotations

import asyncio

import weida


async def serve(replier: weida.Replier) -> None:
    async for exchange in replier:
        body = await exchange.take_body()
        if body == b"forbidden":
            await exchange.reject("not allowed")
        else:
            await exchange.reply(body.upper(), {"served-by": "example"})


async def main() -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind("weida://127.0.0.1:0")
        replier = listener.replier("/upper")
        task = asyncio.ensure_future(serve(replier))

        requester = client.requester()
        await requester.connect(replier.address)
        print(await requester.request(b"hello"))
        reply = await requester.request_with(b"with metadata", {"trace": "42"})
        print(reply.body, reply.meta.metadata)
        for body in (b"forbidden", b"again"):
            try:
                print(await requester.request(body))
            except weida.Indeterminate as e:
                print("sent whole, reply lost; do not blindly retry:", e.loss_cause)
            except weida.WeidaError as e:
                print("failed:", e.code, e)
        task.cancel()


if __name__ == "__main__":
    asyncio.run(main())
