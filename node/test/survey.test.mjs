// @ts-check
// SURVEY (core/tests/survey.rs, docs/PATTERNS.md §6): one question to every connected
// respondent, their answers until a deadline, over every transport.

import assert from 'node:assert/strict'
import { InvalidConfig, Message, WeidaError } from 'weida'
import { onEveryTransport, pair, rejection } from './helpers.mjs'

/**
 * Binds respondents at `/r0`.. answering `path:question`; returns their addresses.
 * @param {import('weida').Listener} listener @param {number} n
 */
function answering(listener, n) {
  const out = []
  for (let i = 0; i < n; i++) {
    const path = `/r${i}`
    const r = listener.respondent(path)
    ;(async () => {
      for await (const ex of r) {
        const q = await ex.takeBody()
        await ex.reply(Buffer.concat([Buffer.from(`${path}:`), q]))
      }
    })().catch(() => {})
    out.push(r.address)
  }
  return out
}

onEveryTransport('every_respondent_answers_within_the_deadline', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const surveyor = client.surveyor()
  for (const a of answering(listener, 3)) await surveyor.connect(a)
  const run = await surveyor.survey('who?', 20_000)
  assert.equal(run.respondents, 3)
  const got = []
  for await (const a of run) {
    assert.ok(a instanceof Message)
    got.push(a.body.toString())
  }
  assert.deepEqual(got.sort(), ['/r0:who?', '/r1:who?', '/r2:who?'])
  assert.equal(run.late, 0)
  assert.equal(run.expired, false)
})

onEveryTransport('a_respondent_that_refuses_is_one_error_among_replies', async (t, ctx) => {
  const { listener, client } = await pair(t, ctx)
  const no = listener.respondent('/no')
  ;(async () => {
    for await (const ex of no) await ex.reject('not me')
  })().catch(() => {})
  const surveyor = client.surveyor()
  for (const a of [no.address, ...answering(listener, 2)]) await surveyor.connect(a)
  const run = await surveyor.survey('q', 20_000)
  const answers = []
  for await (const a of run) answers.push(a)
  assert.equal(answers.length, 3)
  const errors = answers.filter((a) => a instanceof WeidaError)
  assert.equal(errors.length, 1)
  assert.match(String(errors[0]), /not me/)
})

onEveryTransport('a_survey_with_no_respondents_is_empty_not_an_error', async (t, ctx) => {
  const { client } = await pair(t, ctx)
  const run = await client.surveyor().survey('anyone?', 20_000)
  assert.equal(run.respondents, 0)
  assert.equal(await run.answer(), null)
  assert.ok((await rejection(client.surveyor().survey('q', -1))) instanceof InvalidConfig)
})
