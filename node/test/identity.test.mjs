// @ts-check
// Identity and trust (core/tests/identity.rs, PATTERNS §1.9): who is on the other side comes
// from the transport; fingerprints are `sha256:<hex>` strings.

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConnectionLost, Identity, Trust, Untrusted, withPath, withPin, withoutPath } from 'weida'
import { bindAddress, keep, rejection, runtime, TIMEOUT } from './helpers.mjs'

/** @param {import('weida').Acceptor} acceptor */
async function peerOfNext(acceptor) {
  return (await acceptor.accept()).meta.peer
}

test('a_pinned_address_connects_and_each_side_sees_the_others_key', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  const acceptor = listener.acceptor('/a')
  assert.match(acceptor.address, new RegExp(`^weida://${server.fingerprint}@`))
  assert.match(server.fingerprint, /^sha256:[0-9a-f]{64}$/)
  const client = runtime(ctx)
  const peer = client.peer()
  await peer.connect(acceptor.address)
  await (await peer.open()).finish()
  assert.deepEqual(await peerOfNext(acceptor), { kind: 'key', fingerprint: client.fingerprint })
})

test('a_wrong_pin_is_untrusted_and_names_what_answered', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  listener.acceptor('/a')
  const other = Identity.ephemeral().fingerprint
  const address = withPath(withPin(listener.address, other), '/a')
  const client = runtime(ctx)
  const e = await rejection(client.peer().connect(address))
  assert.ok(e instanceof Untrusted, String(e))
  assert.equal(e.code, 'ERR_WEIDA_UNTRUSTED')
  assert.equal(e.fingerprint, server.fingerprint)
  assert.equal(e.expected, other)
})

test('an_address_without_a_pin_is_untrusted_by_default_and_pinned_trust_accepts_it', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  keep(ctx, listener.acceptor('/a')) // a collected endpoint unbinds, and connect checks the path
  const port = /:(\d+)$/.exec(withoutPath(listener.address))?.[1]
  const bare = `weida://127.0.0.1:${port}/a`
  const client = runtime(ctx)
  const e = await rejection(client.peer().connect(bare))
  assert.ok(e instanceof Untrusted, String(e))
  assert.equal(e.expected, null)
  assert.ok(e.message.includes(server.fingerprint), e.message)

  const pinned = runtime(ctx, { trust: Trust.pinned([server.fingerprint]) })
  await pinned.peer().connect(bare)
  const unverified = runtime(ctx, { trust: Trust.unverified() })
  await unverified.peer().connect(bare)
})

test('require_client_admits_a_pinned_client_and_refuses_others', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const good = runtime(ctx)
  const stranger = runtime(ctx)
  const anonymous = runtime(ctx, { presentIdentity: false })
  const listener = await server.bind('weida://127.0.0.1:0', { requireClient: Trust.pinned([good.fingerprint]) })
  const acceptor = listener.acceptor('/a')
  const p = good.peer()
  await p.connect(acceptor.address)
  await (await p.open()).finish()
  assert.deepEqual(await peerOfNext(acceptor), { kind: 'key', fingerprint: good.fingerprint })
  for (const refused of [stranger, anonymous]) {
    const rp = refused.peer()
    const e = await rejection(
      (async () => {
        await rp.connect(acceptor.address)
        // The server may refuse after the client's side of the handshake completed: the
        // first exchange then fails instead.
        const [t, reply] = await rp.exchange()
        await t.finish()
        await reply.body()
      })(),
    )
    assert.ok(e instanceof ConnectionLost || e instanceof Untrusted, String(e))
  }
})

test('an_anonymous_client_has_no_peer_identity', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind('weida://127.0.0.1:0')
  const acceptor = listener.acceptor('/a')
  const client = runtime(ctx, { presentIdentity: false })
  const p = client.peer()
  await p.connect(acceptor.address)
  await (await p.open()).finish()
  assert.equal(await peerOfNext(acceptor), null)
})

test('a_unix_peer_presents_the_principal_the_kernel_proved', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind(bindAddress('unix'))
  const acceptor = listener.acceptor('/a')
  const client = runtime(ctx)
  const p = client.peer()
  await p.connect(acceptor.address)
  await (await p.open()).finish()
  assert.deepEqual(await peerOfNext(acceptor), {
    kind: 'local',
    uid: process.getuid?.(),
    gid: process.getgid?.(),
    pid: process.pid,
  })
})

test('in_process_peers_have_no_identity', { timeout: TIMEOUT }, async (ctx) => {
  const server = runtime(ctx)
  const listener = await server.bind(bindAddress('inproc'))
  const acceptor = listener.acceptor('/a')
  const client = runtime(ctx)
  const p = client.peer()
  await p.connect(acceptor.address)
  await (await p.open()).finish()
  assert.equal(await peerOfNext(acceptor), null)
})

test('a_saved_identity_keeps_its_fingerprint_so_a_pin_survives_a_restart', { timeout: TIMEOUT }, async (ctx) => {
  const dir = mkdtempSync(join(tmpdir(), 'weida-node-id-'))
  ctx.after(() => rmSync(dir, { recursive: true, force: true }))
  const keys = join(dir, 'id')
  const first = Identity.loadOrCreate(keys)
  const fp = first.fingerprint
  {
    const server = runtime(ctx, { identity: first })
    const listener = await server.bind('weida://127.0.0.1:0')
    assert.ok(listener.address.startsWith(`weida://${fp}@`))
    server.shutdown()
  }
  const again = Identity.loadOrCreate(keys)
  assert.equal(again.fingerprint, fp)
  const server = runtime(ctx, { identity: again })
  const listener = await server.bind('weida://127.0.0.1:0')
  const acceptor = listener.acceptor('/a') // kept: a collected endpoint unbinds its path
  assert.ok(listener.address.startsWith(`weida://${fp}@`))
  const client = runtime(ctx)
  await client.peer().connect(withPath(listener.address, '/a'))
  acceptor.close()
})
