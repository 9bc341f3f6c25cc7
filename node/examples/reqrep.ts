// Req/Rep: one stream per exchange. A lost reply after the request was sent whole is
// Indeterminate (err.definite === false): the replier may have acted, so do not blindly retry.
//
//   npm run build && node dist/examples/reqrep.js

import { Canceled, Rejected, Runtime, WeidaError } from 'weida'

const service = new Runtime()
const listener = await service.bind('weida+unix:///tmp/weida-example-reqrep.sock')
const upper = listener.replier('/upper')

const serving = (async () => {
  for await (const ex of upper) {
    try {
      const body = await ex.takeBody()
      if (body.length === 0) await ex.reject('empty request')
      else await ex.reply(body.toString().toUpperCase(), { served_by: 'reqrep example' })
    } catch (e) {
      // A requester that gives up cancels its exchange; the replier goes on.
      if (!(e instanceof Canceled)) throw e
    }
  }
})()

const client = new Runtime()
const req = client.requester()
await req.connect(upper.address)
console.log(`reply: ${(await req.request('hello')).toString()}`)

const full = await req.requestWith('with metadata')
console.log(`reply: ${full.body.toString()} from ${full.meta.peer?.kind} peer`)

try {
  await req.request('')
} catch (e) {
  if (e instanceof Rejected) console.log(`${e.code}: ${e.message}`)
  else if (e instanceof WeidaError && !e.definite) console.log(`unknown outcome: ${e.message}`)
  else throw e
}

// A request abandoned by its AbortSignal is cancelled at the replier.
const slow = new AbortController()
const asking = req.request('never mind', undefined, { signal: slow.signal })
slow.abort()
await asking.catch((e: Error) => console.log(`aborted: ${e.name}`))

await client.close()
await service.close()
await serving
