//! How many tests a run passed, read from what its runner printed: the summary lines of
//! cargo, pytest, unittest, go (`-v`), jest, vitest, mocha, node's test runner and TAP,
//! rspec, phpunit, maven and dotnet. Only passed tests count: a skipped, pending, expected
//! failure or TODO test is no evidence, whatever its runner folds it into (unittest's `OK
//! (skipped=2)`, rspec's examples, maven's tests run, TAP's `ok … # SKIP`). A run whose
//! output holds none of them has no count, and the evidence says so.

use std::sync::LazyLock;

use regex::Regex;

/// One runner's summary: a pattern and how its matches add up.
struct Summary {
    runner: &'static str,
    pattern: &'static str,
    fold: Fold,
}

/// In every pattern, group 1 is the number the runner reports; a group named `minus`, when
/// it matched, holds the numbers of tests folded into it that did not pass (skipped,
/// pending, expected failures), which are taken off; a match whose group `skip` matched is
/// no passed test.
enum Fold {
    /// Every match is one test binary or package: add them.
    Sum,
    /// The last match is the run's total.
    Last,
    /// Each match is one passed test.
    Count,
}

/// Most specific first: the first runner whose summary appears decides.
const SUMMARIES: &[Summary] = &[
    Summary {
        runner: "cargo",
        pattern: r"(?m)^test result: \w+\. (\d+) passed;",
        fold: Fold::Sum,
    },
    Summary {
        runner: "jest",
        pattern: r"(?m)^Tests:\s+(?:.*?, )?(\d+) passed(?:, .*)?, \d+ total",
        fold: Fold::Last,
    },
    Summary {
        runner: "vitest",
        pattern: r"(?m)^\s*Tests\s+(?:\d+ failed \| )?(\d+) passed",
        fold: Fold::Last,
    },
    Summary {
        runner: "pytest",
        pattern: r"(?m)^=* ?(?:\d+ failed, )?(\d+) passed\b.* in [\d.]+s",
        fold: Fold::Last,
    },
    Summary {
        runner: "mocha",
        pattern: r"(?m)^\s*(\d+) passing \(",
        fold: Fold::Last,
    },
    Summary {
        runner: "node --test",
        pattern: r"(?m)^(?:# |ℹ )pass (\d+)$",
        fold: Fold::Last,
    },
    Summary {
        runner: "rspec",
        pattern: r"(?m)^(\d+) examples?, 0 failures(?:, (?P<minus>\d+) pending)?",
        fold: Fold::Last,
    },
    Summary {
        runner: "phpunit",
        pattern: r"(?m)^OK \((\d+) tests?,",
        fold: Fold::Last,
    },
    Summary {
        runner: "phpunit",
        pattern: r"(?m)^OK, but [^\n]*\nTests: (\d+), Assertions: \d+(?P<minus>(?:, (?:Skipped|Incomplete|Risky): \d+)*)\.",
        fold: Fold::Last,
    },
    Summary {
        runner: "dotnet",
        pattern: r"Passed!\s+- Failed:\s+0, Passed:\s+(\d+),",
        fold: Fold::Sum,
    },
    Summary {
        runner: "maven",
        pattern: r"(?m)^\[INFO\] Tests run: (\d+), Failures: 0, Errors: 0, Skipped: (?P<minus>\d+)$",
        fold: Fold::Last,
    },
    Summary {
        runner: "unittest",
        pattern: r"(?m)^Ran (\d+) tests? in [\d.]+s\s*\n\s*\nOK\b(?: \((?P<minus>[^)\n]*)\))?",
        fold: Fold::Last,
    },
    Summary {
        runner: "go test -v",
        pattern: r"(?m)^\s*--- PASS: ",
        fold: Fold::Count,
    },
    Summary {
        runner: "TAP",
        pattern: r"(?m)^ok \d+\b[^\n#]*(?P<skip>#\s*(?i:skip|todo))?",
        fold: Fold::Count,
    },
];

static COMPILED: LazyLock<Vec<(&'static Summary, Regex)>> = LazyLock::new(|| {
    SUMMARIES
        .iter()
        .filter_map(|s| Regex::new(s.pattern).ok().map(|re| (s, re)))
        .collect()
});

/// Tests passed, as a runner reported them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Passed {
    /// How many.
    pub count: u64,
    /// Whose summary said so.
    pub runner: &'static str,
}

/// The tests `output` reports passed, or `None` when it holds no summary this reads.
pub fn passed(output: &str) -> Option<Passed> {
    for (summary, re) in COMPILED.iter() {
        let mut matches = re.captures_iter(output).peekable();
        if matches.peek().is_none() {
            continue;
        }
        let number = |c: &regex::Captures<'_>| {
            let reported = c
                .get(1)
                .and_then(|m| m.as_str().parse::<u64>().ok())
                .unwrap_or(0);
            reported.saturating_sub(c.name("minus").map_or(0, |m| numbers(m.as_str())))
        };
        let count = match summary.fold {
            Fold::Sum => matches.map(|c| number(&c)).sum(),
            Fold::Last => matches.last().map(|c| number(&c)).unwrap_or(0),
            Fold::Count => matches.filter(|c| c.name("skip").is_none()).count() as u64,
        };
        return Some(Passed {
            count,
            runner: summary.runner,
        });
    }
    None
}

/// The sum of the numbers in `text` (`skipped=2, expected failures=1`: 3).
fn numbers(text: &str) -> u64 {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(output: &str) -> Option<(u64, &'static str)> {
        passed(output).map(|p| (p.count, p.runner))
    }

    #[test]
    fn every_runners_summary_is_read() {
        let cases: &[(&str, u64, &str)] = &[
            (
                "running 3 tests\ntest result: ok. 3 passed; 0 failed; 0 ignored\n\nrunning 2 tests\ntest result: ok. 2 passed; 0 failed;\n",
                5,
                "cargo",
            ),
            (
                "Test Suites: 2 passed, 2 total\nTests:       1 skipped, 7 passed, 8 total\n",
                7,
                "jest",
            ),
            (
                " ✓ src/a.test.ts (4)\n Test Files  1 passed (1)\n      Tests  4 passed (4)\n",
                4,
                "vitest",
            ),
            (
                "tests/test_a.py ....\n============ 4 passed, 1 skipped in 0.12s ============\n",
                4,
                "pytest",
            ),
            ("..\n2 passed in 0.01s\n", 2, "pytest"),
            ("  api\n    ✔ retries\n\n  6 passing (12ms)\n", 6, "mocha"),
            ("TAP version 13\n# tests 3\n# pass 3\n# fail 0\n", 3, "node --test"),
            ("Finished in 0.1 seconds\n9 examples, 0 failures\n", 9, "rspec"),
            ("OK (12 tests, 30 assertions)\n", 12, "phpunit"),
            (
                "Passed!  - Failed:     0, Passed:    10, Skipped:     0, Total:    10\n",
                10,
                "dotnet",
            ),
            (
                "[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s\n[INFO] Results:\n[INFO] Tests run: 5, Failures: 0, Errors: 0, Skipped: 0\n",
                5,
                "maven",
            ),
            ("...\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nOK\n", 3, "unittest"),
            (
                "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- PASS: TestB (0.00s)\nok  \tex\t0.1s\n",
                2,
                "go test -v",
            ),
            ("1..2\nok 1 - first\nok 2 - second\n", 2, "TAP"),
        ];
        for (output, n, runner) in cases {
            assert_eq!(count(output), Some((*n, *runner)), "{output}");
        }
    }

    #[test]
    fn a_failing_run_counts_only_what_passed_and_no_summary_is_no_count() {
        assert_eq!(
            count("test result: FAILED. 4 passed; 1 failed; 0 ignored"),
            Some((4, "cargo"))
        );
        assert_eq!(
            count("===== 1 failed, 3 passed in 0.20s ====="),
            Some((3, "pytest"))
        );
        assert_eq!(
            count("Ran 3 tests in 0.001s\n\nFAILED (failures=1)\n"),
            None
        );
        assert_eq!(count("all good\nOK\n"), None);
    }

    #[test]
    fn skipped_pending_and_expected_failures_are_not_passed() {
        let cases: &[(&str, u64, &str)] = &[
            (
                "...\nRan 3 tests in 0.001s\n\nOK (skipped=2)\n",
                1,
                "unittest",
            ),
            (
                "Ran 4 tests in 0.001s\n\nOK (skipped=1, expected failures=2)\n",
                1,
                "unittest",
            ),
            ("9 examples, 0 failures, 4 pending\n", 5, "rspec"),
            (
                "[INFO] Tests run: 5, Failures: 0, Errors: 0, Skipped: 3\n",
                2,
                "maven",
            ),
            (
                "1..3\nok 1 - real\nok 2 - later # SKIP not ready\nok 3 # todo write it\n",
                1,
                "TAP",
            ),
            (
                "OK, but incomplete, skipped, or risky tests!\nTests: 12, Assertions: 30, Skipped: 2, Incomplete: 1.\n",
                9,
                "phpunit",
            ),
            (
                "TAP version 13\n# tests 4\n# pass 1\n# skipped 3\n# fail 0\n",
                1,
                "node --test",
            ),
        ];
        for (output, n, runner) in cases {
            assert_eq!(count(output), Some((*n, *runner)), "{output}");
        }
        // Every test skipped: nothing passed, however the runner ends.
        assert_eq!(count("3 skipped in 0.01s\n"), None);
        assert_eq!(
            count("Ran 2 tests in 0.001s\n\nOK (skipped=2)\n"),
            Some((0, "unittest"))
        );
        assert_eq!(count(""), None);
    }
}
