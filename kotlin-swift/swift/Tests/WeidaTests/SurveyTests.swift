// SURVEY (python/tests/test_survey.py, core/tests/survey.rs: the same names): one question to
// every connected respondent, their answers until a deadline, over every transport.
import Foundation
import XCTest

@testable import Weida

final class SurveyTests: XCTestCase {
    /// Binds respondents at `/r0`.. answering `path:question`; their addresses and servers.
    private func answering(_ p: Pair, _ n: Int) throws -> [(String, Task<Void, Error>)] {
        try (0..<n).map { i in
            let path = "/r\(i)"
            let r = try p.listener.respondent(path)
            let serving = Task {
                for try await ex in r.exchanges() {
                    let q = try await ex.takeBody()
                    try await ex.reply(bytes("\(path):") + q)
                }
            }
            return (r.address(), serving)
        }
    }

    func test_every_respondent_answers_within_the_deadline() async throws {
        try await onEveryTransport { _, p in
            let respondents = try self.answering(p, 3)
            let surveyor = try p.client.surveyor()
            for (a, _) in respondents { try await surveyor.connect(a) }
            let run = try await surveyor.survey(bytes("who?"), deadlineMs: 20_000)
            XCTAssertEqual(run.respondents(), 3)
            var got: [String] = []
            for await a in run.answers() { got.append(text(try a.get().body)) }
            XCTAssertEqual(got.sorted(), ["/r0:who?", "/r1:who?", "/r2:who?"])
            XCTAssertEqual(run.late(), 0)
            XCTAssertFalse(run.expired())
            respondents.forEach { $0.1.cancel() }
        }
    }

    func test_a_respondent_that_refuses_is_one_error_among_replies() async throws {
        try await onEveryTransport { _, p in
            let no = try p.listener.respondent("/no")
            let refusing = Task { for try await ex in no.exchanges() { try await ex.reject("not me") } }
            let respondents = try self.answering(p, 2)
            let surveyor = try p.client.surveyor()
            for a in [no.address()] + respondents.map({ $0.0 }) { try await surveyor.connect(a) }
            var answers: [Result<Message, WeidaError>] = []
            for await a in try await surveyor.survey(bytes("q"), deadlineMs: 20_000).answers() { answers.append(a) }
            XCTAssertEqual(answers.count, 3)
            let errors = answers.compactMap { if case .failure(let e) = $0 { return e } else { return nil } }
            XCTAssertEqual(errors.map(\.code), ["REJECTED"])
            // `first`, not `[0]`: an index out of range would crash the whole test binary.
            XCTAssertTrue(errors.first?.description.contains("not me") == true, "\(errors)")
            refusing.cancel()
            respondents.forEach { $0.1.cancel() }
        }
    }

    func test_a_survey_with_no_respondents_is_empty_not_an_error() async throws {
        try await onEveryTransport { _, p in
            let run = try await p.client.surveyor().survey(bytes("anyone?"), deadlineMs: 20_000)
            XCTAssertEqual(run.respondents(), 0)
            let first = try await run.answer()
            XCTAssertNil(first)
        }
    }
}
