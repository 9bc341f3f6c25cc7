"""docs/DEPLOYING.md: what a new key does to the clients of a service, and the ways through a
rotation it describes (two listeners side by side; a trust that holds both pins)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

import weida


@asynccontextmanager
async def echo_service(
    identity: weida.Identity, bind: str = "weida://127.0.0.1:0"
) -> AsyncIterator[str]:
    """A runtime presenting `identity` that answers /echo; yields the endpoint's address."""
    async with weida.Runtime(identity=identity) as rt:
        echo = (await rt.bind(bind)).replier("/echo")

        async def serve() -> None:
            async for exchange in echo:
                await exchange.reply(await exchange.take_body())

        task = asyncio.ensure_future(serve())
        try:
            yield echo.address
        finally:
            task.cancel()


async def ask(address: str, trust: weida.Trust | None = None) -> bytes:
    """One request to `address` from a fresh runtime."""
    async with weida.Runtime(trust=trust) as rt:
        req = rt.requester()
        await req.connect(address)
        return await req.request(b"hello")


def unpinned(address: str) -> str:
    pin = weida.Address(address).pin
    return address.replace(f"{pin}@", "")


async def test_a_client_holding_the_old_pin_is_refused_after_a_rotation(tmp_path: Path) -> None:
    keys = tmp_path / "identity"
    old = weida.Identity.load_or_create(keys).fingerprint
    # The rotation: a new key in the same directory (what `weida id new --force` does).
    weida.Identity.ephemeral().save(keys)
    new = weida.Identity.load(keys)
    assert new.fingerprint != old
    async with echo_service(new) as address:
        stale = str(weida.Address(address).with_pin(old))
        with pytest.raises(weida.Untrusted) as e:
            await ask(stale)
        # Nothing was sent: a definite failure, naming the key that answered and the pin.
        assert (e.value.fingerprint, e.value.expected, e.value.definite) == (
            new.fingerprint,
            old,
            True,
        )
        assert await ask(address) == b"hello"


async def test_during_an_overlap_the_old_and_the_new_key_serve_side_by_side() -> None:
    old, new = weida.Identity.ephemeral(), weida.Identity.ephemeral()
    async with echo_service(old) as old_address, echo_service(new) as new_address:
        assert weida.Address(old_address).pin == old.fingerprint
        assert weida.Address(new_address).pin == new.fingerprint
        # Clients that have moved and clients that have not are both served.
        assert await ask(old_address) == b"hello"
        assert await ask(new_address) == b"hello"


async def test_a_trust_holding_both_pins_accepts_either_key_on_an_unpinned_address() -> None:
    old, new = weida.Identity.ephemeral(), weida.Identity.ephemeral()
    both = weida.Trust.pinned([old.fingerprint, new.fingerprint])
    async with echo_service(old) as before, echo_service(new) as after:
        assert await ask(unpinned(before), both) == b"hello"
        assert await ask(unpinned(after), both) == b"hello"
        # A trust without the new pin refuses the new key ...
        with pytest.raises(weida.Untrusted) as e:
            await ask(unpinned(after), weida.Trust.pinned([old.fingerprint]))
        assert (e.value.fingerprint, e.value.expected) == (new.fingerprint, None)
        # ... and a pin in the address decides alone, whatever the trust holds.
        stale = str(weida.Address(after).with_pin(old.fingerprint))
        with pytest.raises(weida.Untrusted):
            await ask(stale, both)


async def test_a_wildcard_bind_prints_the_wildcard_host_with_the_pin() -> None:
    identity = weida.Identity.ephemeral()
    async with echo_service(identity, "weida://0.0.0.0:0") as address:
        host_port = address.split("@", 1)[1].split("/", 1)[0]
        assert host_port.startswith("0.0.0.0:")
        assert weida.Address(address).pin == identity.fingerprint
        # What a client is given instead: a host it can reach, with the same pin and port.
        reachable = address.replace("@0.0.0.0:", "@127.0.0.1:")
        assert await ask(reachable) == b"hello"
