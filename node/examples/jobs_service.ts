import { Runtime, Service, retryAfter } from 'weida'

// A job queue served by a handler: a back-off for what can wait, a dead letter at the limit.
// Prints `READY <address>` (push jobs there), serves until SIGINT or SIGTERM, then lets the
// handlers in flight finish and prints the stop report.
const rt = new Runtime()
const listener = await rt.bind('weida://127.0.0.1:0')
const dead = listener.puller('/dead')                      // where a job goes after its fifth attempt
const jobs = await new Service(rt).queue(listener, '/jobs', { concurrency: 4, maxAttempts: 5, deadLetter: dead.address })
const served = jobs.serve(async (job) => {
  const body = job.message.body.toString()
  if (body === 'poison') throw new Error('cannot parse it')  // a failure: logged, then a retry
  if (body === 'flaky' && job.attempt < 3) throw retryAfter(0.05 * job.attempt)  // a copy, one attempt on
  console.log(`done ${body} attempt ${job.attempt}`)
}, { onWarning: (w) => console.error(w) })
void (async () => {
  for await (const m of dead) console.log(`dead ${m.body.toString()} after ${m.meta.metadata.find(([k]) => k === 'weida-attempt')?.[1]}`)
})()
console.log(`READY ${jobs.address}`)
await new Promise((resolve) => {
  process.once('SIGINT', resolve)
  process.once('SIGTERM', resolve)
})
const stopped = await jobs.stop(10)
await served
console.log(`stopped unfinished=${stopped.unfinished} copiesDropped=${stopped.copiesDropped}`)
await rt.close()
