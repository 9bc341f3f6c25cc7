import { Identity, Runtime, WeidaError } from 'weida'

// The service's key, kept in a directory: made on its first run, loaded on every later one.
const identity = Identity.loadOrCreate('echo-identity')
const rt = new Runtime({ identity })
const listener = await rt.bind(process.argv[2] ?? 'weida://127.0.0.1:4433')
const echo = listener.replier('/echo')
console.log(echo.address)                                  // weida://sha256:…@127.0.0.1:4433/echo: hand it to clients
for await (const ex of echo) {
  try {
    await ex.reply(await ex.takeBody())
  } catch (e) {
    if (e instanceof WeidaError) console.log(`request failed: ${e.code}`)   // cancelled, connection lost
    else throw e
  }
}
