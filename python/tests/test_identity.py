"""Identity and trust (PATTERNS §1.9; core/tests/identity.rs): who is on the other side comes
from the transport."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import bind_address

import weida


async def first_peer(acceptor: weida.Acceptor) -> weida.PeerKey | weida.PeerLocal | None:
    return (await acceptor.accept()).meta.peer


async def open_and_finish(peer: weida.Peer) -> None:
    t = await peer.open()
    await t.finish()


async def test_a_pinned_address_connects_and_each_side_sees_the_others_key() -> None:
    server = weida.Runtime()
    listener = await server.bind("weida://127.0.0.1:0")
    acceptor = listener.acceptor("/a")
    assert weida.Address(acceptor.address).pin == server.fingerprint
    client = weida.Runtime()
    peer = client.peer()
    await peer.connect(acceptor.address)
    await open_and_finish(peer)
    assert await first_peer(acceptor) == weida.PeerKey(client.fingerprint)


async def test_a_wrong_pin_is_untrusted_and_names_what_answered() -> None:
    server = weida.Runtime()
    listener = await server.bind("weida://127.0.0.1:0")
    _acceptor = listener.acceptor("/a")
    other = weida.Identity.ephemeral().fingerprint
    addr = weida.Address(listener.address).with_pin(other).with_path("/a")
    with pytest.raises(weida.Untrusted) as e:
        await weida.Runtime().peer().connect(str(addr))
    assert e.value.fingerprint == server.fingerprint
    assert e.value.expected == other


async def test_an_address_without_a_pin_is_untrusted_by_default_and_pinned_trust_accepts_it() -> (
    None
):
    server = weida.Runtime()
    listener = await server.bind("weida://127.0.0.1:0")
    _acceptor = listener.acceptor("/a")
    port = listener.address.rsplit(":", 1)[1]
    bare = f"weida://127.0.0.1:{port}/a"
    with pytest.raises(weida.Untrusted) as e:
        await weida.Runtime().peer().connect(bare)
    assert e.value.expected is None
    assert server.fingerprint in str(e.value)
    await weida.Runtime(trust=weida.Trust.pinned([server.fingerprint])).peer().connect(bare)
    await weida.Runtime(trust=weida.Trust.unverified()).peer().connect(bare)


async def test_require_client_admits_a_pinned_client_and_refuses_others() -> None:
    server = weida.Runtime()
    good = weida.Runtime()
    stranger = weida.Runtime()
    anonymous = weida.Runtime(present_identity=False)
    listener = await server.bind(
        "weida://127.0.0.1:0", require_client=weida.Trust.pinned([good.fingerprint])
    )
    acceptor = listener.acceptor("/a")
    p = good.peer()
    await p.connect(acceptor.address)
    await open_and_finish(p)
    assert await first_peer(acceptor) == weida.PeerKey(good.fingerprint)
    for refused in (stranger, anonymous):
        rp = refused.peer()
        with pytest.raises((weida.ConnectionLost, weida.Untrusted)):
            await rp.connect(acceptor.address)
            t, reply = await rp.exchange()
            await t.finish()
            await reply.body()


async def test_an_anonymous_client_has_no_peer_identity() -> None:
    server = weida.Runtime()
    listener = await server.bind("weida://127.0.0.1:0")
    acceptor = listener.acceptor("/a")
    p = weida.Runtime(present_identity=False).peer()
    await p.connect(acceptor.address)
    await open_and_finish(p)
    assert await first_peer(acceptor) is None


async def test_a_unix_peer_presents_the_principal_the_kernel_proved() -> None:
    server = weida.Runtime()
    listener = await server.bind(bind_address("unix"))
    acceptor = listener.acceptor("/a")
    p = weida.Runtime().peer()
    await p.connect(acceptor.address)
    await open_and_finish(p)
    assert await first_peer(acceptor) == weida.PeerLocal(os.getuid(), os.getgid(), os.getpid())


async def test_in_process_peers_have_no_identity() -> None:
    server = weida.Runtime()
    listener = await server.bind(bind_address("inproc"))
    acceptor = listener.acceptor("/a")
    p = weida.Runtime().peer()
    await p.connect(acceptor.address)
    await open_and_finish(p)
    assert await first_peer(acceptor) is None


async def test_a_saved_identity_keeps_its_fingerprint_so_a_pin_survives_a_restart(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "id"
    first = weida.Identity.load_or_create(keys)
    server = weida.Runtime(identity=first)
    pinned = weida.Address((await server.bind("weida://127.0.0.1:0")).address).pin
    server.shutdown()
    again = weida.Identity.load_or_create(str(keys))
    assert again.fingerprint == first.fingerprint == pinned
    server = weida.Runtime(identity=again)
    listener = await server.bind("weida://127.0.0.1:0")
    _a = listener.acceptor("/a")
    await weida.Runtime().peer().connect(str(weida.Address(listener.address).with_path("/a")))


def test_a_missing_identity_directory_is_an_io_error_with_its_os_cause(tmp_path: Path) -> None:
    with pytest.raises(weida.IoError) as e:
        weida.Identity.load(tmp_path / "nowhere")
    assert isinstance(e.value.__cause__, FileNotFoundError)
    assert e.value.errno is not None


def test_malformed_pem_and_fingerprints_are_refused() -> None:
    with pytest.raises(weida.InvalidConfig):
        weida.Identity.from_pem("not pem", "not pem")
    with pytest.raises(weida.InvalidAddress) as e:
        weida.Trust.pinned(["sha256:nothex"])
    assert e.value.part == "pin"
    with pytest.raises(weida.InvalidConfig):
        weida.Trust.anchors_pem("nothing")
