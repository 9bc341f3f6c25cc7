// @ts-check
// What keeps the process alive (lib/index.ts, "Lifetime"): only a pending call. A child Node
// process that closes everything it opened must exit on its own within the test's timeout.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { TIMEOUT } from './helpers.mjs'

/**
 * Runs a fixture to its exit; resolves with its exit code and output.
 * @param {string} name
 */
function run(name) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(`fixtures/${name}`, import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, out })))
}

test('the_process_exits_when_everything_is_closed', { timeout: TIMEOUT }, async () => {
  const { code, signal, out } = /** @type {any} */ (await run('close-everything.mjs'))
  assert.equal(signal, null)
  assert.equal(code, 0, out)
  assert.match(out, /^closed ERR_WEIDA_/m)
})

test('a_bound_listener_with_nothing_pending_does_not_keep_the_process_alive', { timeout: TIMEOUT }, async () => {
  const { code, out } = /** @type {any} */ (await run('bound-only.mjs'))
  assert.equal(code, 0, out)
  assert.match(out, /^bound weida:\/\/sha256:/m)
})
