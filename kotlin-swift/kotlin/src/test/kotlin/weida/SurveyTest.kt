// SURVEY (python/tests/test_survey.py, core/tests/survey.rs: the same names): one question to
// every connected respondent, their answers until a deadline, over every transport.
package weida

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.ValueSource
import weida.uniffi.WeidaException

class SurveyTest {
    /** Binds respondents at `/r0`.. answering `path:question`; their addresses and servers. */
    private fun CoroutineScope.answering(p: Pair, n: Int): List<kotlin.Pair<String, Job>> = (0 until n).map { i ->
        val path = "/r$i"
        val r = p.listener.respondent(path)
        r.address() to launch {
            r.exchanges().collect { ex -> ex.reply("$path:".toByteArray() + ex.takeBody(), null) }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun every_respondent_answers_within_the_deadline(transport: String) = withPair(transport) { p ->
        val respondents = answering(p, 3)
        val surveyor = p.client.surveyor()
        for ((a, _) in respondents) surveyor.connect(a)
        val run = surveyor.survey("who?".toByteArray(), 20_000.0)
        assertEquals(3u, run.respondents())
        val got = run.answers().toList().map { String(it.getOrThrow().body) }.sorted()
        assertEquals(listOf("/r0:who?", "/r1:who?", "/r2:who?"), got)
        assertEquals(0UL, run.late())
        assertFalse(run.expired())
        respondents.forEach { it.second.cancel() }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_respondent_that_refuses_is_one_error_among_replies(transport: String) = withPair(transport) { p ->
        val no = p.listener.respondent("/no")
        val refusing = launch { no.exchanges().collect { it.reject("not me", null) } }
        val respondents = answering(p, 2)
        val surveyor = p.client.surveyor()
        for (a in listOf(no.address()) + respondents.map { it.first }) surveyor.connect(a)
        val answers = surveyor.survey("q".toByteArray(), 20_000.0).answers().toList()
        assertEquals(3, answers.size)
        val errors = answers.mapNotNull { it.exceptionOrNull() }
        assertEquals(1, errors.size)
        assertTrue(errors[0] is WeidaException.Rejected, "$errors")
        assertTrue(errors[0].toString().contains("not me"), "${errors[0]}")
        refusing.cancel()
        respondents.forEach { it.second.cancel() }
    }

    @ParameterizedTest
    @ValueSource(strings = ["quic", "inproc", "unix"])
    fun a_survey_with_no_respondents_is_empty_not_an_error(transport: String) = withPair(transport) { p ->
        val run = p.client.surveyor().survey("anyone?".toByteArray(), 20_000.0)
        assertEquals(0u, run.respondents())
        assertNull(run.answer())
    }
}
