// Key pinning (python/tests/test_identity.py: the same names).
package weida

import kotlinx.coroutines.async
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import weida.uniffi.Identity
import weida.uniffi.Peer
import weida.uniffi.Trust
import weida.uniffi.WeidaException
import weida.uniffi.addressPath
import weida.uniffi.addressPin
import weida.uniffi.addressWithPath
import weida.uniffi.addressWithPin
import weida.uniffi.addressWithoutPath

class IdentityTest {
    @Test
    fun a_pinned_address_connects_and_each_side_sees_the_others_key() = test {
        runtime().use { server ->
            runtime().use { client ->
                val listener = server.bind("weida://127.0.0.1:0")
                val puller = listener.puller("/a")
                assertTrue(puller.address().startsWith("weida://${server.fingerprint()}@"), puller.address())
                val pusher = client.pusher()
                pusher.connect(puller.address())
                pusher.send("hi".toByteArray())
                assertEquals(Peer.Key(client.fingerprint()), puller.recv().peer)
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @Test
    fun a_wrong_pin_is_untrusted_and_names_what_answered() = test {
        runtime().use { server ->
            val listener = server.bind("weida://127.0.0.1:0")
            val puller = listener.puller("/a")
            val other = Identity.ephemeral().fingerprint()
            val wrong = addressWithPin(puller.address(), other)
            val e = raised<WeidaException.Untrusted> { runtime().pusher().connect(wrong) }
            assertEquals(server.fingerprint(), e.fields["fingerprint"])
            assertEquals(other, e.fields["expected"])
            server.shutdown()
        }
    }

    @Test
    fun an_address_without_a_pin_is_untrusted_by_default_and_pinned_trust_accepts_it() = test {
        runtime().use { server ->
            val listener = server.bind("weida://127.0.0.1:0")
            listener.puller("/a")
            val bare = "weida://127.0.0.1:${listener.address().substringAfterLast(':')}/a"
            val e = raised<WeidaException.Untrusted> { runtime().pusher().connect(bare) }
            assertNull(e.fields["expected"])
            assertTrue(server.fingerprint() in e.description)
            runtime(trust = Trust.pinned(listOf(server.fingerprint()))).use { it.pusher().connect(bare) }
            runtime(trust = Trust.unverified()).use { it.pusher().connect(bare) }
            server.shutdown()
        }
    }

    @Test
    fun require_client_admits_a_pinned_client_and_refuses_others() = test {
        val server = runtime()
        val good = runtime()
        val stranger = runtime()
        val anonymous = runtime(options = mapOf("presentIdentity" to false))
        val listener = server.bind("weida://127.0.0.1:0", Trust.pinned(listOf(good.fingerprint())))
        val replier = listener.replier("/a")
        val req = good.requester()
        req.connect(replier.address())
        val serving = async {
            val ex = replier.accept()
            // The replier sees whom it admitted before it answers.
            assertEquals(Peer.Key(good.fingerprint()), ex.peer())
            ex.reply(ex.takeBody())
        }
        assertEquals("ok", String(req.request("ok".toByteArray())))
        serving.await()
        for (refused in listOf(stranger, anonymous)) {
            try {
                val r = refused.requester()
                r.connect(replier.address())
                r.request("x".toByteArray())
                throw AssertionError("a client the listener does not trust was served")
            } catch (e: WeidaException) {
                assertTrue(e is WeidaException.ConnectionLost || e is WeidaException.Untrusted, e.toString())
            }
        }
        for (rt in listOf(server, good, stranger, anonymous)) rt.shutdown()
    }

    @Test
    fun an_anonymous_client_has_no_peer_identity() = test {
        runtime().use { server ->
            runtime(options = mapOf("presentIdentity" to false)).use { client ->
                val puller = server.bind("weida://127.0.0.1:0").puller("/a")
                val pusher = client.pusher()
                pusher.connect(puller.address())
                pusher.send("x".toByteArray())
                assertNull(puller.recv().peer)
                client.shutdown()
                server.shutdown()
            }
        }
    }

    @Test
    fun in_process_peers_have_no_identity() = withPair("inproc") { p ->
        val puller = p.listener.puller("/a")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        pusher.send("x".toByteArray())
        assertNull(puller.recv().peer)
    }

    @Test
    fun a_unix_peer_presents_the_principal_the_kernel_proved() = withPair("unix") { p ->
        val puller = p.listener.puller("/a")
        val pusher = p.client.pusher()
        pusher.connect(puller.address())
        pusher.send("x".toByteArray())
        val peer = puller.recv().peer as Peer.Local
        assertEquals(ProcessHandle.current().pid().toInt(), peer.pid)
    }

    @Test
    fun malformed_pem_and_fingerprints_are_refused() = test {
        raised<WeidaException.InvalidConfig> { Identity.fromPem("not pem", "not pem") }
        raised<WeidaException.InvalidAddress> { Trust.pinned(listOf("sha256:nothex")) }
        raised<WeidaException.InvalidConfig> { Trust.anchorsPem("nothing") }
    }

    @Test
    fun an_identity_is_made_again_from_the_pem_files_it_saves() = test {
        val dir = java.nio.file.Files.createTempDirectory("weida-kt-pem")
        try {
            val first = Identity.ephemeral()
            first.save(dir.toString())
            val cert = dir.resolve("cert.pem").toFile().readText()
            val again = Identity.fromPem(cert, dir.resolve("key.pem").toFile().readText())
            assertEquals(first.fingerprint(), again.fingerprint())
            // A certificate is an anchor, as PEM or as DER.
            Trust.anchorsPem(cert).close()
            val der = java.util.Base64.getMimeDecoder().decode(
                cert.substringAfter("-----BEGIN CERTIFICATE-----").substringBefore("-----END CERTIFICATE-----"),
            )
            Trust.anchors(listOf(der)).close()
            Trust.address().withAnchorDer(der).close()
        } finally {
            dir.toFile().deleteRecursively()
        }
    }

    @Test
    fun trust_and_addresses_are_built_from_their_parts() = test {
        runtime().use { server ->
            val listener = server.bind(bindAddress("quic"))
            val address = listener.address()
            assertEquals(server.fingerprint(), addressPin(address))
            assertNull(addressPath(address))
            val withPath = addressWithPath(address, "/jobs")
            assertEquals("/jobs", addressPath(withPath))
            assertEquals(address, addressWithoutPath(withPath))
            val fp = Identity.ephemeral().fingerprint()
            assertEquals(listOf(fp), Trust.address().withPin(fp).pins())
            raised<WeidaException.InvalidAddress> { Trust.address().withPin("sha256:nothex") }
            server.shutdown()
            listener.close()
        }
    }
}
