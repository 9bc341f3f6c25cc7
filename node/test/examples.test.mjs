// @ts-check
// Every example runs (compiled from examples/*.ts by `npm run build`), says what it should,
// and exits on its own.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { TIMEOUT } from './helpers.mjs'

/** @type {Record<string, RegExp[]>} */
const expected = {
  pushpull: [/^job resize \(priority=low\)$/m, /^job upload-part-2 \(priority=high\)$/m, /^drained: 2 delivered, 0 outstanding$/m],
  reqrep: [/^reply: HELLO$/m, /^reply: WITH METADATA from local peer$/m, /^ERR_WEIDA_REJECTED: .*empty request$/m, /^aborted: AbortError$/m],
  raw: [/^stream feed: 1048576 bytes$/m, /^exchange: how many bytes\?$/m, /^answer: 1048576$/m],
  pubsub: [
    /^prices\.btc\.eur: 2 copies$/m,
    /^prices\.btc\.usd: 1 copies$/m,
    /^eur prices\.btc\.eur = 42000 \(#1, gap 0\)$/m,
    /^eur prices\.eth\.eur = 2100 \(#2, gap 0\)$/m,
    /^audit: prices\.btc\.eur, prices\.btc\.usd, prices\.eth\.eur$/m,
    /^report: sent to 1 subscriber\(s\)$/m,
    /^audit got: closing report$/m,
    /^dropped: 0 \(queue full 0, byte budget 0\)$/m,
  ],
}

for (const [name, lines] of Object.entries(expected)) {
  test(`example_${name}_runs`, { timeout: TIMEOUT }, async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(`../dist/examples/${name}.js`, import.meta.url))], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    assert.equal(code, 0, out)
    for (const re of lines) assert.match(out, re)
  })
}
