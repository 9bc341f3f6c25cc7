// Push/Pull: a pusher spreads jobs over pullers, one stream per message; a finished message
// arrives with no local handle, and drain() waits until the peer's transport has them.
//
//   npm run build && node dist/examples/pushpull.js

import { Runtime } from 'weida'

const worker = new Runtime() // an ephemeral key; the address pins it
const listener = await worker.bind('weida://127.0.0.1:0')
const jobs = listener.puller('/jobs')

const done = (async () => {
  let n = 0
  for await (const job of jobs) {
    console.log(`job ${job.body.toString()} (${job.meta.metadata.map(([k, v]) => `${k}=${v}`).join(', ')})`)
    if (++n === 3) jobs.close() // ends the loop once the queue is taken
  }
})()

const boss = new Runtime()
const pusher = boss.pusher()
await pusher.connect(jobs.address) // weida://sha256:…@127.0.0.1:port/jobs
for (const name of ['resize', 'encode']) await pusher.send(name, { priority: 'low' })

// A large body streams: write parts, then finish for the transport receipt.
const upload = await pusher.open({ priority: 'high' })
await upload.write('upload-')
await upload.write(Buffer.from('part-2'))
await (await upload.finish()).delivered()

await done
const { delivered, outstanding } = await boss.drain(5_000)
console.log(`drained: ${delivered} delivered, ${outstanding} outstanding`)
worker.close()
