// The README's quick start runs (python/tests/test_readme.py's counterpart): readme/QuickStart.kt
// is the README's Kotlin block as it stands, checked here, and its main() prints what was sent.
package weida

import java.io.ByteArrayOutputStream
import java.io.File
import java.io.PrintStream
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** What `run` prints on `System.out`. */
private fun printed(run: () -> Unit): String {
    val out = ByteArrayOutputStream()
    val before = System.out
    System.setOut(PrintStream(out, true))
    try {
        run()
    } finally {
        System.setOut(before)
    }
    return out.toString()
}

class QuickStartTest {
    @Test
    fun the_readme_quick_start_runs() {
        val readme = File("../README.md").readText()
        val block = Regex("```kotlin\n(.*?)```", RegexOption.DOT_MATCHES_ALL).find(readme)!!.groupValues[1]
        val file = File("src/test/kotlin/weida/readme/QuickStart.kt").readText()
        assertEquals(block, file.substringAfter("package weida.readme\n\n"), "readme/QuickStart.kt is the README's block")
        val out = printed { weida.readme.main() }
        assertEquals("hello\n", out)
    }

    @Test
    fun the_readme_job_service_runs() {
        val readme = File("../README.md").readText()
        val block = Regex("<!-- JobsService.kt -->\n```kotlin\n(.*?)```", RegexOption.DOT_MATCHES_ALL).find(readme)!!.groupValues[1]
        val file = File("src/test/kotlin/weida/readme/jobs/JobsService.kt").readText()
        assertEquals(block, file.substringAfter("package weida.readme.jobs\n\n"), "readme/jobs/JobsService.kt is the README's block")
        val out = printed { weida.readme.jobs.main() }
        val lines = out.lines()
        assertEquals(
            setOf("done ok attempt 1", "done flaky attempt 3", "dead poison after 5"),
            lines.take(3).toSet(),
        )
        // A map's order is not fixed: the stop's two counts, whichever comes first.
        assertTrue(lines[3].startsWith("stopped {"), lines[3])
        assertEquals(setOf("unfinished=0", "copiesDropped=0"), lines[3].removePrefix("stopped {").removeSuffix("}").split(", ").toSet())
    }
}
