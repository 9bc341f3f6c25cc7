// Raw streams: a Peer opens one-way transfers and exchanges; an Acceptor takes both kinds.
// Bodies stream as Web Streams; `await using` closes the runtimes at the end of the scope.
//
//   npm run build && node dist/examples/raw.js

import { Runtime } from 'weida'

{
  await using server = new Runtime()
  await using client = new Runtime()
  const listener = await server.bind('weida+inproc://raw-example')
  const acceptor = listener.acceptor('/raw')
  const peer = client.peer()
  await peer.connect(acceptor.address)

  // A one-way stream fed from a ReadableStream of 1 MiB in 64 KiB parts.
  const feed = await peer.open({ name: 'feed' })
  const parts = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < 16; i++) c.enqueue(new Uint8Array(64 * 1024).fill(i))
      c.close()
    },
  })
  const sending = parts.pipeTo(feed.writable)

  // An exchange: a request stream and its reply.
  const [question, reply] = await peer.exchange({ name: 'question' })
  await question.write('how many bytes?')
  await question.finish()

  let received = 0
  for (let i = 0; i < 2; i++) {
    const incoming = await acceptor.accept()
    if (incoming.kind === 'stream') {
      for await (const chunk of incoming.readable) received += chunk.length
      console.log(`stream ${incoming.meta.metadata[0]?.[1]}: ${received} bytes`)
    } else {
      console.log(`exchange: ${(await incoming.takeBody()).toString()}`)
      await sending
      await incoming.reply(String(received))
    }
  }
  console.log(`answer: ${(await reply.body()).body.toString()}`)
}
