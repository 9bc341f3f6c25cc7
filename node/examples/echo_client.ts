import { Indeterminate, Runtime } from 'weida'

const rt = new Runtime()
const req = rt.requester()
await req.connect(process.argv[2])                         // only the key the address pins may answer
try {
  console.log((await req.request('hello')).toString())
} catch (e) {
  if (e instanceof Indeterminate) console.log('no reply: do not blindly retry')   // sent whole, reply lost
  else throw e
}
await rt.close()
