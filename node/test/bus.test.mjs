// @ts-check
// BUS (core/tests/bus.rs, docs/PATTERNS.md §6.3): every member's message reaches every other
// member, never itself, over every transport.

import assert from 'node:assert/strict'
import { LimitExceeded } from 'weida'
import { bindAddress, onEveryTransport, payload, rejection, runtime } from './helpers.mjs'

/**
 * `n` members, each in a runtime of its own, connected to each other.
 * @param {import('./helpers.mjs').Transport} t @param {any} ctx @param {number} n @param {object} [limits]
 */
async function members(t, ctx, n, limits) {
  const out = []
  for (let i = 0; i < n; i++) {
    const rt = runtime(ctx, limits === undefined ? {} : { limits })
    out.push(rt.bus(await rt.bind(bindAddress(t)), '/bus'))
  }
  for (const a of out) for (const b of out) if (a !== b) await a.connect(b.address)
  return out
}

onEveryTransport('every_member_sees_every_other_members_message', async (t, ctx) => {
  const ms = await members(t, ctx, 3)
  const names = ['a', 'b', 'c']
  for (let i = 0; i < 3; i++) assert.equal(await ms[i].send(names[i]), 2)
  for (let i = 0; i < 3; i++) {
    const got = [(await ms[i].recv()).body.toString(), (await ms[i].recv()).body.toString()].sort()
    assert.deepEqual(got, names.filter((n) => n !== names[i]))
  }
})

onEveryTransport('a_sender_never_receives_its_own_message', async (t, ctx) => {
  const [a, b] = await members(t, ctx, 2)
  for (let i = 0; i < 10; i++) await a.send(`a${i}`)
  await b.send('from b')
  assert.equal((await a.recv()).body.toString(), 'from b')
  assert.equal(a.tryRecv(), null)
  for (let i = 0; i < 10; i++) assert.equal((await b.recv()).body.toString(), `a${i}`)
})

onEveryTransport('a_body_above_the_fan_out_budget_is_refused_rather_than_dropped_for_everyone', async (t, ctx) => {
  const [a, b] = await members(t, ctx, 2, { subscriberBufferBytes: 1000 })
  const e = await rejection(a.send(payload(2000)))
  assert.ok(e instanceof LimitExceeded)
  assert.equal(e.limit, 'byte_budget')
  assert.equal(a.dropped().total, 0n)
  assert.equal(await a.send(payload(500)), 1)
  assert.equal((await b.recv()).body.length, 500)
})
