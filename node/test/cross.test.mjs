// @ts-check
// Across processes: two Node processes over QUIC with key pinning, and a Node peer talking to
// the Rust peer (core/examples/peer.rs) over QUIC and AF_UNIX. Both peers serve /echo and /jobs,
// print `READY <address>`, and exit when their stdin closes.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { Identity, Trust, Untrusted, withPath, withPin, withoutPath } from 'weida'
import { metaGet, payload, rejection, runtime, TIMEOUT } from './helpers.mjs'

const repo = fileURLToPath(new URL('../..', import.meta.url))

/**
 * A peer process; `line(re)` resolves with the next stdout line matching `re`.
 * @param {import('node:test').TestContext} ctx
 * @param {string} command
 * @param {string[]} args
 */
function peerProcess(ctx, command, args) {
  const child = spawn(command, args, { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  /** @type {string[]} */
  const lines = []
  /** @type {Array<() => void>} */
  let wake = []
  createInterface({ input: child.stdout }).on('line', (l) => {
    lines.push(l)
    for (const w of wake.splice(0)) w()
  })
  let seen = 0
  ctx.after(() => {
    child.stdin.end()
  })
  return {
    /** @param {RegExp} re */
    async line(re) {
      for (;;) {
        while (seen < lines.length) {
          const m = re.exec(lines[seen++])
          if (m) return m
        }
        if (child.exitCode !== null) throw new Error(`the peer exited (${child.exitCode}) before printing ${re}`)
        await new Promise((r) => {
          wake.push(() => r(undefined))
          child.once('exit', () => r(undefined))
        })
      }
    },
    /** Closes the peer's stdin; resolves with its exit code. */
    stop() {
      child.stdin.end()
      return exited
    },
  }
}

/**
 * Echo with metadata, and jobs the peer prints, against a peer at `address`.
 * @param {import('node:test').TestContext} ctx
 * @param {ReturnType<typeof peerProcess>} peer
 * @param {string} address
 */
async function exercise(ctx, peer, address) {
  const rt = runtime(ctx)
  const req = rt.requester()
  await req.connect(withPath(address, '/echo'))
  const m = await req.requestWith(payload(200_000), { k: 'v', bin: Buffer.from([0, 255]) })
  assert.ok(m.body.equals(payload(200_000)))
  assert.equal(metaGet(m.meta, 'k')?.toString(), 'v')
  assert.deepEqual(metaGet(m.meta, 'bin'), Buffer.from([0, 255]))
  const pusher = rt.pusher()
  await pusher.connect(withPath(address, '/jobs'))
  await pusher.send('hello')
  assert.deepEqual([...(await peer.line(/^JOB (\d+) ([0-9a-f]*)$/)).slice(1)], ['5', '68656c6c6f'])
  const big = await pusher.open()
  await big.write(payload(3 << 20))
  await (await big.finish()).delivered()
  assert.deepEqual([...(await peer.line(/^JOB (\d+) ([0-9a-f]*)$/)).slice(1)], [
    String(3 << 20),
    payload(16).toString('hex'),
  ])
}

test('two_node_processes_over_quic_with_key_pinning', { timeout: TIMEOUT }, async (ctx) => {
  const dir = mkdtempSync(join(tmpdir(), 'weida-node-peer-'))
  ctx.after(() => rmSync(dir, { recursive: true, force: true }))
  const keys = join(dir, 'id')
  const peer = peerProcess(ctx, process.execPath, [
    fileURLToPath(new URL('fixtures/serve.mjs', import.meta.url)),
    'weida://127.0.0.1:0',
    '--identity',
    keys,
  ])
  const address = (await peer.line(/^READY (\S+)$/))[1]
  // The key is known out of band (its saved identity) and is what the address pins.
  const fp = Identity.load(keys).fingerprint
  assert.ok(address.startsWith(`weida://${fp}@`), address)
  await exercise(ctx, peer, address)
  // Another key at that address is refused, naming the key that answered...
  const wrong = Identity.ephemeral().fingerprint
  const e = await rejection(runtime(ctx).requester().connect(withPath(withPin(address, wrong), '/echo')))
  assert.ok(e instanceof Untrusted, String(e))
  assert.equal(e.fingerprint, fp)
  assert.equal(e.expected, wrong)
  // ... and an address without a pin connects when the key is pinned in the trust.
  const bare = withPath(withoutPath(address).replace(/sha256:[0-9a-f]+@/, ''), '/echo')
  const pinned = runtime(ctx, { trust: Trust.pinned([fp]) }).requester()
  await pinned.connect(bare)
  assert.equal((await pinned.request('pinned')).toString(), 'pinned')
  assert.equal(await peer.stop(), 0)
})

for (const transport of ['quic', 'unix']) {
  test(`a_node_peer_talks_to_a_rust_peer_over_${transport}`, { timeout: 10 * TIMEOUT }, async (ctx) => {
    const bindTo =
      transport === 'quic' ? 'weida://127.0.0.1:0' : `weida+unix://${join(tmpdir(), `weida-rust-peer-${process.pid}.sock`)}`
    // Builds the example if needed (the README's test command builds it first, so this is quick).
    const peer = peerProcess(ctx, 'cargo', ['run', '-q', '-p', 'weida', '--example', 'peer', '--', bindTo])
    const address = (await peer.line(/^READY (\S+)$/))[1]
    await exercise(ctx, peer, address)
    assert.equal(await peer.stop(), 0)
  })
}
