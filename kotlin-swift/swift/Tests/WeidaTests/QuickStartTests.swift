// The README's quick start runs (python/tests/test_readme.py's and the Kotlin QuickStartTest's
// counterpart): QuickStart.swift is kotlin-swift/README.md's Swift block as it stands, checked
// here, and its quickStart() prints what was sent.
import Foundation
import XCTest

/// What `run` prints on standard output, read from the file descriptor; what it throws is thrown
/// once standard output is back.
private func printed(_ run: () async throws -> Void) async throws -> String {
    let pipe = Pipe()
    fflush(stdout)
    let saved = dup(STDOUT_FILENO)
    dup2(pipe.fileHandleForWriting.fileDescriptor, STDOUT_FILENO)
    var failure: Error?
    do {
        try await run()
    } catch {
        failure = error
    }
    fflush(stdout)
    dup2(saved, STDOUT_FILENO)
    close(saved)
    try pipe.fileHandleForWriting.close()
    let out = pipe.fileHandleForReading.readDataToEndOfFile()
    if let failure { throw failure }
    return String(decoding: out, as: UTF8.self)
}

final class QuickStartTests: XCTestCase {
    func test_the_readme_quick_start_runs() async throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let package = here.deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: package.appendingPathComponent("../README.md"), encoding: .utf8)
        let block = try XCTUnwrap(readme.components(separatedBy: "```swift\n").dropFirst().first?
            .components(separatedBy: "```").first)
        let file = try String(contentsOf: here.appendingPathComponent("QuickStart.swift"), encoding: .utf8)
        let body = try XCTUnwrap(file.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n") as String?)
        XCTAssertEqual(body, block, "QuickStart.swift is the README's block")

        let out = try await printed { try await within { try await quickStart() } }
        XCTAssertEqual(out, "hello\n")
    }

    func test_the_readme_job_service_runs() async throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let package = here.deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: package.appendingPathComponent("../README.md"), encoding: .utf8)
        let block = try XCTUnwrap(readme.components(separatedBy: "<!-- JobsService.swift -->\n```swift\n")
            .dropFirst().first?.components(separatedBy: "```").first)
        let file = try String(contentsOf: here.appendingPathComponent("JobsService.swift"), encoding: .utf8)
        let body = file.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n")
        XCTAssertEqual(body, block, "JobsService.swift is the README's block")

        let out = try await printed { try await within { try await jobsService() } }
        let lines = out.split(separator: "\n").map(String.init)
        XCTAssertEqual(
            Set(lines.prefix(3)), ["done ok attempt 1", "done flaky attempt 3", "dead poison after 5"])
        // A dictionary's order is not fixed: the stop's two counts, whichever comes first.
        XCTAssertEqual(lines.count, 4, "\(lines)")
        XCTAssertTrue(lines[3].hasPrefix("stopped ["), lines[3])
        XCTAssertTrue(lines[3].contains("\"unfinished\": 0") && lines[3].contains("\"copiesDropped\": 0"), lines[3])
    }
}
