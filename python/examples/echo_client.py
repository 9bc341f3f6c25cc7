import asyncio
import sys

import weida


async def main(address: str) -> None:
    async with weida.Runtime() as rt:
        req = rt.requester()
        await req.connect(address)  # only the key the address pins may answer
        try:
            print(await req.request(b"hello"))
        except weida.Indeterminate:  # sent whole, reply lost: the service may have acted on it
            print("no reply: do not blindly retry")


asyncio.run(main(sys.argv[1]))
