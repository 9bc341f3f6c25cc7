"""A service in its own process, with a persistent key: clients pin it.

Run: python examples/service.py [IDENTITY_DIR] — prints ``READY <address>`` (the address pins
the key in IDENTITY_DIR, created on first use) and serves /echo until its stdin closes. A
client in another process dials that address; nothing else can answer it.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

import weida


async def main(identity_dir: str) -> None:
    identity = weida.Identity.load_or_create(identity_dir)
    async with weida.Runtime(identity=identity) as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        echo = listener.replier("/echo")

        async def serve() -> None:
            async for exchange in echo:
                await exchange.reply(await exchange.take_body(), exchange.meta.metadata)

        task = asyncio.ensure_future(serve())
        print("READY", echo.address, flush=True)
        # Run until the parent closes our stdin.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        task.cancel()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/id"))
