"""The runner's self-test: the runner must not pass an agent that ignores a step.

    python3 -m unittest discover -s conformance/runner -p 'test_*.py' -v

Three kinds of broken agents are run through the real runner and must fail:
  - testdata/lying_agent.py lazy: acknowledges every op with an empty result;
  - testdata/lying_agent.py plausible: acknowledges every op with a well-formed, made-up result;
  - testdata/skipping_proxy.py: the real Rust agent, with one kind of op (each op the scenarios
    use, in turn) acknowledged by the proxy and never carried out.
The rest checks the runner's own rules: the schema refuses malformed scenarios, unavailable agents
and cross-language in-process cells are skipped with a reason, a known failure that passes fails
the run, and the body pattern is the one the Rust agent makes.

The tests that run the Rust agent need it built (cargo build --release -p weida-conformance-agent);
they fail, not skip, without it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import runner  # noqa: E402
from agents import AgentSpec, expand_env  # noqa: E402
from scenarios import (  # noqa: E402
    body_summary, derive_address, expect_errors, load_all, match, semantic_errors,
)
from schema_check import Validator  # noqa: E402

CONFORMANCE = os.path.dirname(HERE)
ROOT = os.path.dirname(CONFORMANCE)
SCHEMA = os.path.join(CONFORMANCE, "schema", "scenario.schema.json")
SCENARIOS = os.path.join(CONFORMANCE, "scenarios")
TESTDATA = os.path.join(HERE, "testdata")
RUST_AGENT = expand_env("${CARGO_TARGET_DIR:-target}/release/weida-conformance-agent")
if not os.path.isabs(RUST_AGENT):
    RUST_AGENT = os.path.join(ROOT, RUST_AGENT)


@contextlib.contextmanager
def runner_args(agents: list[dict], known: list[dict] | None = None):
    """The runner's arguments for a registry of `agents`, in a temporary folder, and its report's path."""
    with tempfile.TemporaryDirectory() as d:
        reg = os.path.join(d, "agents.json")
        with open(reg, "w") as f:
            json.dump({"agents": agents}, f)
        kf = os.path.join(d, "known.json")
        with open(kf, "w") as f:
            json.dump({"known_failures": known or []}, f)
        report = os.path.join(d, "report.json")
        yield ["--registry", reg, "--known-failures", kf, "--report", report,
               "--junit", os.path.join(d, "report.xml"), "--logs", os.path.join(d, "logs"), "--quiet"], report


def read_report(report: str) -> dict:
    if not os.path.exists(report):
        return {}
    with open(report) as f:
        return json.load(f)


def run(agents: list[dict], *args: str, known: list[dict] | None = None) -> tuple[int, dict, str]:
    """Runs the runner on a registry of `agents`; (exit status, JSON report, printed output)."""
    with runner_args(agents, known) as (common, report):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = runner.main([*common, *args])
        return status, read_report(report), out.getvalue()


def run_process(agents: list[dict], *args: str) -> tuple[int, dict, str]:
    """`run` in a runner process of its own, for runs made from several threads at once."""
    with runner_args(agents) as (common, report):
        p = subprocess.run([sys.executable, os.path.join(HERE, "runner.py"), *common, *args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p.returncode, read_report(report), p.stdout


def lying(mode: str, name: str = "liar") -> dict:
    return {"name": name, "command": [sys.executable, os.path.join(TESTDATA, "lying_agent.py"), mode],
            "required": True}


def rust_agent() -> dict:
    return {"name": "rust", "command": [RUST_AGENT], "required": True}


def skipping(ops: str) -> dict:
    return {"name": "skipper", "command": [sys.executable, os.path.join(TESTDATA, "skipping_proxy.py"), RUST_AGENT],
            "env": {"SKIP_OPS": ops}, "required": True}


def statuses(report: dict) -> set[str]:
    return {c["status"] for c in report["cells"]}


class BrokenAgentsFail(unittest.TestCase):
    def test_an_agent_that_acknowledges_every_op_and_does_nothing_fails_every_cell(self):
        # The cells wait out their step timeouts, not a CPU: six at once.
        status, report, out = run([lying("lazy")], "--step-timeout", "1", "--jobs", "6")
        self.assertEqual(status, 1, out)
        self.assertGreater(len(report["cells"]), 26)
        self.assertEqual(statuses(report), {"fail"}, out)

    def test_an_agent_that_makes_up_plausible_results_fails_every_cell(self):
        status, report, out = run([lying("plausible")], "--step-timeout", "0.5", "--transport", "unix",
                                  "--jobs", "6")
        self.assertEqual(status, 1, out)
        self.assertEqual(statuses(report), {"fail"}, out)
        passed = [c["scenario"] for c in report["cells"] if c["status"] == "pass"]
        self.assertEqual(passed, [])

    def test_an_agent_that_dies_fails_its_cell_at_once(self):
        status, report, out = run([lying("crash")], "--scenario", "reqrep_echo", "--transport", "unix")
        self.assertEqual(status, 1, out)
        self.assertEqual(statuses(report), {"fail"})
        self.assertIn("exited (status 3)", report["cells"][0]["reason"])
        self.assertLess(report["cells"][0]["seconds"], 5)  # not a step timeout

    def test_the_rust_agent_ignoring_any_one_op_is_caught(self):
        self.assertTrue(os.path.exists(RUST_AGENT), f"build the Rust agent first: {RUST_AGENT}")
        scenarios = load_all(SCENARIOS, SCHEMA)
        ops = sorted({s["op"] for sc in scenarios for s in sc.all_steps if "op" in s})
        self.assertGreater(len(ops), 15)

        def caught(op: str) -> str | None:
            # A runner process per op, so that ops run at once: most of a caught op's time is a
            # step timeout, and `run` redirects this process's output, which threads would share.
            # No more at once than cores, so that load does not pass for an op's timeout.
            for sc in (sc for sc in scenarios if any(s.get("op") == op for s in sc.all_steps)):
                transport = "quic" if "quic" in sc.transports else sc.transports[0]
                status, report, out = run_process([skipping(op)], "--scenario", sc.name, "--transport",
                                                  transport, "--step-timeout", "2")
                self.assertIn("cells", report, out)  # the runner itself ran to its report
                if status == 1 and "fail" in statuses(report):
                    return sc.name
            return None

        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            uncaught = [op for op, by in zip(ops, pool.map(caught, ops)) if by is None]
        self.assertEqual(uncaught, [], "ops an agent can ignore and still pass every scenario using them")

    def test_the_real_agent_passes_what_the_skipping_proxy_fails(self):
        # The control: the proxy with nothing to skip is the Rust agent, and passes.
        status, report, out = run([skipping("")], "--scenario", "cancel_push", "--transport", "quic")
        self.assertEqual((status, statuses(report)), (0, {"pass"}), out)
        status, report, out = run([skipping("cancel")], "--scenario", "cancel_push", "--transport", "quic",
                                  "--step-timeout", "2")
        self.assertEqual((status, statuses(report)), (1, {"fail"}), out)
        self.assertIn("receive_failed", report["cells"][0]["reason"])


class RunnerRules(unittest.TestCase):
    def test_an_unavailable_agent_is_skipped_with_its_reason(self):
        missing = {"name": "later", "command": ["python3", "nowhere/agent.py"], "requires": ["nowhere/agent.py"],
                   "note": "not built yet"}
        status, report, out = run([lying("lazy"), missing], "--scenario", "not_connected", "--step-timeout", "1")
        skipped = [c for c in report["cells"] if "later" in c["agents"]]
        self.assertTrue(skipped)
        for c in skipped:
            self.assertEqual(c["status"], "skip")
            self.assertIn("later agent not available: nowhere/agent.py does not exist (not built yet)", c["reason"])

    def test_a_required_agent_that_is_missing_stops_the_run(self):
        missing = {"name": "rust", "command": ["target/none/agent"], "required": True}
        status, _, out = run([missing])
        self.assertEqual(status, 2)
        self.assertIn("required agent is missing", out)

    def test_cross_language_inproc_cells_are_skipped_and_same_language_ones_run(self):
        scenarios = [s for s in load_all(SCENARIOS, SCHEMA) if s.name == "reqrep_echo"]
        specs = [AgentSpec("a", "A", ["x"], [], False, ""), AgentSpec("b", "B", ["y"], [], False, "")]
        cells = runner.plan(scenarios, specs, {}, [])
        inproc = {c.combo: c for c in cells if c.transport == "inproc"}
        self.assertEqual(set(inproc), {"a>a", "a>b", "b>a", "b>b"})
        self.assertEqual(inproc["a>a"].status, "")
        self.assertEqual(inproc["a>b"].status, "skip")
        self.assertIn("cannot cross processes", inproc["a>b"].reason)
        self.assertEqual(len([c for c in cells if c.transport == "quic" and not c.status]), 4)

    def test_a_known_failure_that_passes_fails_the_run(self):
        self.assertTrue(os.path.exists(RUST_AGENT), f"build the Rust agent first: {RUST_AGENT}")
        known = [{"scenario": "not_connected", "agents": "*", "transport": "*", "reason": "pretend"}]
        status, report, out = run([rust_agent()], "--scenario", "not_connected", known=known)
        self.assertEqual(status, 1, out)
        self.assertEqual(statuses(report), {"xpass"})
        self.assertIn("remove it from known_failures.json", out)

    def test_a_known_failure_that_fails_is_reported_with_its_reason_and_does_not_fail_the_run(self):
        known = [{"scenario": "*", "agents": "*", "transport": "*", "reason": "the liar never works"}]
        status, report, out = run([lying("lazy")], "--scenario", "not_connected", known=known)
        self.assertEqual(status, 0, out)
        self.assertEqual(statuses(report), {"xfail"})
        self.assertIn("the liar never works", out)

    def test_unsupported_is_a_skip_only_for_what_the_registry_lists_with_its_reason(self):
        # Unlisted, an AGENT_UNSUPPORTED answer fails the cell: an agent cannot skip its way
        # through the matrix.
        status, report, out = run([lying("unsupported")], "--scenario", "not_connected")
        self.assertEqual((status, statuses(report)), (1, {"fail"}), out)
        self.assertIn("does not list as unsupported", report["cells"][0]["reason"])
        # Listed, the cell is skipped with the registry's reason, which the summary repeats.
        agent = dict(lying("unsupported"), unsupported={"runtime": "the binding exports no Runtime"})
        status, report, out = run([agent], "--scenario", "not_connected")
        self.assertEqual((status, statuses(report)), (0, {"skip"}), out)
        self.assertEqual(report["cells"][0]["reason"],
                         "liar does not support runtime: the binding exports no Runtime")
        self.assertIn("the binding exports no Runtime", out)
        # Listed for another op, it is still a failure.
        agent = dict(lying("unsupported"), unsupported={"open": "no streams"})
        status, report, out = run([agent], "--scenario", "not_connected")
        self.assertEqual((status, statuses(report)), (1, {"fail"}), out)

    def test_pairs_with_limits_an_agents_cells_to_its_partners_and_their_transports(self):
        scenarios = [s for s in load_all(SCENARIOS, SCHEMA) if s.name in ("reqrep_echo", "not_connected")]
        specs = [AgentSpec("a", "A", ["x"], [], False, ""), AgentSpec("b", "B", ["y"], [], False, ""),
                 AgentSpec("k", "K", ["z"], [], False, "",
                           pairs_with={"a": "*", "b": ["unix"], "k": ["inproc", "none"]})]
        cells = runner.plan(scenarios, specs, {}, [])

        def combos(scenario, transport):
            return {c.combo for c in cells if c.scenario.name == scenario and c.transport == transport}
        self.assertEqual(combos("reqrep_echo", "quic"), {"a>a", "a>b", "b>a", "b>b", "a>k", "k>a"})
        self.assertEqual(combos("reqrep_echo", "unix"),
                         {"a>a", "a>b", "b>a", "b>b", "a>k", "k>a", "b>k", "k>b"})
        self.assertEqual(combos("reqrep_echo", "inproc") - {"a>b", "b>a", "a>k", "k>a"}, {"a>a", "b>b", "k>k"})
        self.assertEqual(combos("not_connected", "none"), {"a", "b", "k"})

    def test_the_registry_pairs_kotlin_with_rust_everywhere_and_python_on_quic(self):
        specs = runner.load_registry(os.path.join(CONFORMANCE, "agents.json"))
        scenarios = [s for s in load_all(SCENARIOS, SCHEMA) if s.name == "reqrep_echo"]
        cells = runner.plan(scenarios, specs, {}, [])

        def combos(transport):
            return {c.combo for c in cells if c.transport == transport and not c.status}
        for transport in ("quic", "unix"):
            self.assertTrue({"rust>kotlin", "kotlin>rust"} <= combos(transport), transport)
            self.assertFalse({"node>kotlin", "kotlin>node", "kotlin>kotlin"} & combos(transport), transport)
            self.assertIn("node>python", combos(transport))  # the three-language matrix stays whole
        self.assertTrue({"python>kotlin", "kotlin>python"} <= combos("quic"))
        self.assertFalse({"python>kotlin", "kotlin>python"} & combos("unix"))
        self.assertIn("kotlin>kotlin", combos("inproc"))

    def test_the_registry_pairs_swift_with_rust_everywhere_and_node_and_kotlin_on_quic(self):
        specs = runner.load_registry(os.path.join(CONFORMANCE, "agents.json"))
        scenarios = [s for s in load_all(SCENARIOS, SCHEMA) if s.name == "reqrep_echo"]
        cells = runner.plan(scenarios, specs, {}, [])

        def combos(transport):
            return {c.combo for c in cells if c.transport == transport and not c.status}
        for transport in ("quic", "unix"):
            self.assertTrue({"rust>swift", "swift>rust"} <= combos(transport), transport)
            self.assertFalse({"python>swift", "swift>python", "swift>swift"} & combos(transport), transport)
        self.assertTrue({"node>swift", "swift>node", "kotlin>swift", "swift>kotlin"} <= combos("quic"))
        self.assertFalse({"node>swift", "swift>node", "kotlin>swift", "swift>kotlin"} & combos("unix"))
        self.assertIn("swift>swift", combos("inproc"))

    def test_cells_run_at_once_report_what_one_at_a_time_does_in_the_plans_order(self):
        self.assertTrue(os.path.exists(RUST_AGENT), f"build the Rust agent first: {RUST_AGENT}")
        # reqrep_echo runs on every transport (an in-process name and a socket path per cell, a
        # QUIC port); restart_and_redial restarts a role at a port kept for it.
        args = ["--scenario", "reqrep_echo", "--scenario", "restart_and_redial"]
        one_status, one, _ = run([rust_agent()], *args, "--jobs", "1")
        many_status, many, out = run([rust_agent()], *args, "--jobs", "3")
        self.assertEqual((one_status, many_status), (0, 0), out)
        ids = [(c["scenario"], c["agents"], c["transport"]) for c in one["cells"]]
        self.assertEqual(ids, [(c["scenario"], c["agents"], c["transport"]) for c in many["cells"]])
        self.assertEqual(statuses(many), {"pass"})
        self.assertGreater(len(ids), 3)

    def test_the_junit_report_has_a_case_per_cell(self):
        with tempfile.TemporaryDirectory() as d:
            xml = os.path.join(d, "r.xml")
            reg = os.path.join(d, "agents.json")
            with open(reg, "w") as f:
                json.dump({"agents": [lying("lazy")]}, f)
            with contextlib.redirect_stdout(io.StringIO()):
                runner.main(["--registry", reg, "--report", "", "--junit", xml, "--quiet", "--logs",
                             os.path.join(d, "logs"), "--scenario", "not_connected", "--step-timeout", "1"])
            import xml.etree.ElementTree as ET
            cases = ET.parse(xml).getroot().findall("./testsuite/testcase")
            self.assertEqual(len(cases), 1)
            self.assertIsNotNone(cases[0].find("failure"))


class Blocks(unittest.TestCase):
    """A block runs its steps in turn on each pass, and a failure names the pass and the step."""

    def run_block(self, expected_body: str) -> tuple[int, dict, str]:
        with open(os.path.join(SCENARIOS, "reqrep_echo.json")) as f:
            sc = json.load(f)
        sc["name"] = "block_echo"
        sc["steps"][6:] = [
            {"repeat": 3, "steps": [
                {"role": "client", "op": "request", "args": {"endpoint": "req", "body": {"text": "p${i}"}},
                 "expect": {"result": {"body": {"text": expected_body}}}},
                {"role": "server", "wait": {"event": "request", "handle": "echo", "match": {"body": {"text": "p${i}"}}}},
            ]},
            {"role": "server", "count": {"event": "request", "handle": "echo"}, "equals": 3},
        ]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "block_echo.json"), "w") as f:
                json.dump(sc, f)
            return run([rust_agent()], "--scenarios", d, "--transport", "quic", "--step-timeout", "5")

    def test_a_block_runs_its_steps_on_every_pass(self):
        status, report, out = self.run_block("p${i}")
        self.assertEqual(status, 0, out)
        self.assertEqual(statuses(report), {"pass"}, out)

    def test_a_failure_in_a_block_names_its_pass_and_step(self):
        status, report, out = self.run_block("p0")
        self.assertEqual(status, 1, out)
        self.assertIn("step 7.1 (client request, run 2 of 3)", report["cells"][0]["reason"])


class Scenarios(unittest.TestCase):
    def setUp(self):
        with open(SCHEMA) as f:
            self.v = Validator(json.load(f))
        with open(os.path.join(SCENARIOS, "reqrep_echo.json")) as f:
            self.good = json.load(f)

    def test_every_checked_in_scenario_is_valid(self):
        names = [s.name for s in load_all(SCENARIOS, SCHEMA)]
        self.assertEqual(len(names), len([f for f in os.listdir(SCENARIOS) if f.endswith(".json")]))

    def mutated(self, f) -> list[str]:
        s = json.loads(json.dumps(self.good))
        f(s)
        return self.v.errors(s) + semantic_errors(s, "reqrep_echo.json")

    def test_the_schema_refuses_malformed_scenarios(self):
        self.assertEqual(self.mutated(lambda s: None), [])
        self.assertTrue(self.mutated(lambda s: s["steps"][0].update(op="runtme")))  # unknown op
        self.assertTrue(self.mutated(lambda s: s["steps"][1]["args"].pop("address")))  # missing argument
        self.assertTrue(self.mutated(lambda s: s["steps"][1]["args"].update(adress="x")))  # unknown argument
        self.assertTrue(self.mutated(lambda s: s["steps"][0].update(expect={"error": "NOT_A_CODE"})))
        self.assertTrue(self.mutated(lambda s: s["steps"][0].update(role="nobody")))
        self.assertTrue(self.mutated(lambda s: s.update(transports=["carrier-pigeon"])))
        self.assertTrue(self.mutated(lambda s: s["steps"].append({"role": "server", "kill": True})))  # on inproc
        self.assertTrue(self.mutated(lambda s: s.update(steps=[st for st in s["steps"]
                                                               if "expect" not in st and "wait" not in st
                                                               and "count" not in st])))  # checks nothing

    def test_the_schema_refuses_malformed_blocks(self):
        def block(*inner, repeat=2):
            return lambda s: s["steps"].insert(6, {"repeat": repeat, "steps": list(inner)})
        ping = {"role": "client", "op": "request", "args": {"endpoint": "req", "body": {"text": "p${i}"}}}
        self.assertEqual(self.mutated(block(ping)), [])
        self.assertTrue(self.mutated(block()))  # empty
        self.assertTrue(self.mutated(block(ping, repeat=0)))
        self.assertTrue(self.mutated(block({"role": "server", "kill": True})))
        self.assertTrue(self.mutated(block({"repeat": 2, "steps": [ping]})))  # nested
        self.assertTrue(self.mutated(block(dict(ping, repeat=3))))  # its steps do not repeat alone
        self.assertTrue(self.mutated(block(dict(ping, **{"async": "x"}))))  # never awaited in it
        self.assertIn("step 7.1: role 'nobody' is not one of ['server', 'client']",
                      self.mutated(block(dict(ping, role="nobody"))))

    def test_addresses_are_derived_per_transport(self):
        pin = "sha256:" + "ab" * 32
        self.assertEqual(derive_address({"$address": "weida+unix:///tmp/x.sock", "path": "/jobs"}),
                         "weida+unix:///tmp/x.sock//jobs")
        self.assertEqual(derive_address({"$address": "weida+unix:///tmp/x.sock//jobs", "path": "/nowhere"}),
                         "weida+unix:///tmp/x.sock//nowhere")
        self.assertEqual(derive_address({"$address": "weida+inproc://bus/jobs", "path": "/x"}), "weida+inproc://bus/x")
        self.assertEqual(derive_address({"$address": f"weida://{pin}@127.0.0.1:5/echo", "pin": None}),
                         "weida://127.0.0.1:5/echo")
        self.assertEqual(derive_address({"$address": "weida://127.0.0.1:5/echo", "pin": pin, "path": None}),
                         f"weida://{pin}@127.0.0.1:5")

    def test_the_seq_pattern_is_the_one_the_rust_agent_makes(self):
        # The Rust agent's summary of {"size": 3000000, "pattern": "seq"}.
        self.assertEqual(body_summary({"size": 3000000, "pattern": "seq"})["sha256"],
                         "4d3870d4655ed773027a713ea136507d22e076248e0e9cc920a996039653b76f")
        self.assertEqual(body_summary({"size": 3, "offset": 250})["size"], 3)

    def test_matching_rules(self):
        self.assertEqual(match({"a": 1}, {"a": 1, "b": 2}), [])
        self.assertTrue(match({"a": True}, {"a": 1}))
        self.assertEqual(match({"a": None}, {}), [])
        self.assertTrue(match({"a": None}, {"a": 0}))
        self.assertEqual(match({"m": {"$contains": "week"}}, {"m": "not on a weekend"}), [])
        self.assertEqual(match({"c": {"$one_of": ["X", "Y"]}}, {"c": "Y"}), [])
        self.assertEqual(match({"n": {"$at_least": 2}}, {"n": 3}), [])
        self.assertTrue(match({"n": {"$at_least": 2}}, {"n": 1}))
        self.assertTrue(match({"n": {"$at_least": 0}}, {"n": True}))
        self.assertTrue(match({"body": {"text": "a"}}, {"body": body_summary({"text": "b"})}))
        self.assertEqual(match({"body": {"$one_of": [{"text": "a"}, {"text": "b"}]}},
                               {"body": body_summary({"text": "b"})}), [])
        self.assertTrue(expect_errors(None, {"ok": False, "error": {"code": "IO"}}))
        self.assertTrue(expect_errors({"error": "IO"}, {"ok": True, "result": {}}))
        self.assertEqual(expect_errors({"any_of": [{"result": {}}, {"error": "IO"}]},
                                       {"ok": False, "error": {"code": "IO"}}), [])


if __name__ == "__main__":
    unittest.main()
