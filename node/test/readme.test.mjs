// @ts-check
// The README's quick start runs as printed (issue 17). A block marked
// `<!-- example: node/examples/NAME.ts -->` is that file to the byte; the file's text, saved as
// an .mjs beside an installed weida (a node_modules/weida link to this package), runs as plain
// JavaScript: the service in one process, the client in another, in a fresh directory. (tsc
// compiles and checks the same files: dist/examples/.) python/tests/test_readme.py checks the
// other READMEs' blocks and runs the Python quick start.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { Identity } from 'weida'
import { TIMEOUT } from './helpers.mjs'

const PACKAGE = fileURLToPath(new URL('..', import.meta.url))
const REPO = join(PACKAGE, '..')
const MARKER = /^<!-- example: (\S+) -->\n```(\w+)\n([\s\S]*?)^```$/gm
const ADDRESS = /^weida:\/\/(sha256:[0-9a-f]{64})@127\.0\.0\.1:(\d+)\/echo$/

test('every_marked_block_is_its_example_file', () => {
  const files = []
  for (const doc of ['README.md', 'node/README.md']) {
    for (const [, file, , block] of readFileSync(join(REPO, doc), 'utf8').matchAll(MARKER)) {
      if (!file.startsWith('node/')) continue
      files.push(file)
      assert.equal(block, readFileSync(join(REPO, file), 'utf8'), `${doc}: the block marked ${file} is not that file`)
    }
  }
  // A file may be shown in both documents (the job service is): each block is checked, the set named.
  assert.deepEqual([...new Set(files)].sort(), ['node/examples/echo_client.ts', 'node/examples/echo_service.ts', 'node/examples/jobs_service.ts'])
})

/**
 * A fresh directory holding the examples as .mjs files, and weida "installed" beside them;
 * removed after the test.
 * @param {import('node:test').TestContext} ctx
 */
function installed(ctx) {
  const dir = mkdtempSync(join(tmpdir(), 'weida-readme-'))
  ctx.after(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(PACKAGE, join(dir, 'node_modules', 'weida'), 'dir')
  for (const name of ['echo_service', 'echo_client']) {
    writeFileSync(join(dir, `${name}.mjs`), readFileSync(join(PACKAGE, 'examples', `${name}.ts`)))
  }
  return dir
}

/**
 * echo_service.mjs started in `dir` with `bind`, once it printed its address.
 * @param {string} dir
 * @param {string} bind
 */
async function service(dir, bind) {
  const child = spawn(process.execPath, [join(dir, 'echo_service.mjs'), bind], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = once(child, 'exit')
  const [line] = await once(createInterface({ input: child.stdout }), 'line')
  const address = /** @type {string} */ (line)
  return {
    address,
    async stop() {
      child.kill()
      await exited
    },
  }
}

/**
 * echo_client.mjs's output; it must exit 0.
 * @param {string} dir
 * @param {string} address
 */
async function client(dir, address) {
  const child = spawn(process.execPath, [join(dir, 'echo_client.mjs'), address], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const [code] = await once(child, 'exit')
  assert.equal(code, 0, out)
  return out
}

test('the_quick_start_runs_as_printed', { timeout: TIMEOUT }, async (ctx) => {
  const dir = installed(ctx)
  const s = await service(dir, 'weida://127.0.0.1:0')
  try {
    const m = ADDRESS.exec(s.address)
    assert.ok(m, s.address)
    // The pin is the key the service keeps in ./echo-identity, owner-only.
    const keys = join(dir, 'echo-identity')
    assert.equal(m[1], Identity.load(keys).fingerprint)
    assert.equal(statSync(keys).mode & 0o777, 0o700)
    assert.equal(statSync(join(keys, 'key.pem')).mode & 0o777, 0o600)
    assert.equal(await client(dir, s.address), 'hello\n')
  } finally {
    await s.stop()
  }
})

test('the_service_keeps_its_address_across_a_restart', { timeout: TIMEOUT }, async (ctx) => {
  const dir = installed(ctx)
  const first = await service(dir, 'weida://127.0.0.1:0')
  await first.stop()
  const port = ADDRESS.exec(first.address)?.[2]
  assert.ok(port, first.address)
  const again = await service(dir, `weida://127.0.0.1:${port}`)
  try {
    assert.equal(again.address, first.address)
    assert.equal(await client(dir, first.address), 'hello\n')
  } finally {
    await again.stop()
  }
})
