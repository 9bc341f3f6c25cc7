import asyncio
import sys

import weida


async def main(bind: str) -> None:
    # The service's key, kept in a directory: made on its first run, loaded on every later one.
    identity = weida.Identity.load_or_create("echo-identity")
    async with weida.Runtime(identity=identity) as rt:
        listener = await rt.bind(bind)
        echo = listener.replier("/echo")
        print(echo.address, flush=True)  # weida://sha256:…@127.0.0.1:4433/echo: hand it to clients
        async for exchange in echo:
            try:
                await exchange.reply(await exchange.take_body())
            except weida.WeidaError as e:  # that request failed (cancelled, connection lost)
                print("request failed:", e.code, flush=True)


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "weida://127.0.0.1:4433"))
