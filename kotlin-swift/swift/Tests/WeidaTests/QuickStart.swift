// kotlin-swift/README.md's Swift quick start, as it stands there (QuickStartTests checks they are the same).

import Foundation
import Weida

func quickStart() async throws {
    let server = try runtime()
    let client = try runtime()
    defer { client.shutdown(); server.shutdown() }
    let listener = try await server.bind("weida://127.0.0.1:0")
    let puller = try listener.puller("/jobs")
    let pusher = try client.pusher()
    try await pusher.connect(puller.address())      // the address pins the server's key
    try await pusher.send(Data("hello".utf8))
    for try await m in puller.messages() {
        print(String(decoding: m.body, as: UTF8.self))
        break
    }
}
