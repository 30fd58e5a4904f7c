//! What belongs to the judge and what counts as tests: pure rules over paths and the
//! test command, for [`super::judge`].

use std::sync::LazyLock;

use regex::Regex;

/// CI configuration: files and folders whose change would change how the project is
/// checked.
const CI_CONFIG: &[&str] = &[
    ".github/workflows/",
    ".gitlab-ci.yml",
    ".circleci/",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".buildkite/",
    ".travis.yml",
    "bitbucket-pipelines.yml",
    ".woodpecker.yml",
    ".woodpecker/",
    ".drone.yml",
];

/// The file a command word runs by itself, when the command names none (`make` runs the
/// Makefile).
const IMPLIED: &[(&str, &[&str])] = &[
    ("make", &["Makefile", "makefile", "GNUmakefile"]),
    ("just", &["justfile", "Justfile", ".justfile"]),
    ("tox", &["tox.ini"]),
    ("nox", &["noxfile.py"]),
];

/// Whether `path` is one of the judge's files: git-bmad's configuration (`.bmad/`, but not
/// the journals it renders into `.bmad/sessions/`), what agent CLIs read their grants from,
/// CI configuration, test infrastructure, or a file the test command runs (`named`).
pub fn is_judges(path: &str, named: &[String]) -> bool {
    (path.starts_with(".bmad/") && !path.starts_with(".bmad/sessions/"))
        || crate::runner::is_agent_settings(path)
        || is_test_infrastructure(path)
        || CI_CONFIG.iter().any(|ci| {
            if ci.ends_with('/') {
                path.starts_with(ci)
            } else {
                path == *ci
            }
        })
        || named.iter().any(|n| n == path)
}

/// Test infrastructure, by file name wherever it lies: what decides how tests run and what
/// they report without being a test itself. Python's (`conftest.py`, a test package's
/// `__init__.py`, `pytest.ini`, `tox.ini`, `setup.cfg`, `noxfile.py`), the JavaScript
/// runners' configurations (jest, vitest, mocha, karma, ava), rspec's and phpunit's, cargo's
/// (`.cargo/config.toml`, a `build.rs`), make's includes (`*.mk`). A story that changes one
/// waits for a human, as one that changes the test script does.
pub fn is_test_infrastructure(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_tests = is_test_file(path);
    const NAMED: &[&str] = &[
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "noxfile.py",
        ".mocharc",
        ".rspec",
        "phpunit.xml",
        "phpunit.xml.dist",
        "build.rs",
        "spec_helper.rb",
        "rails_helper.rb",
    ];
    const CONFIG_STEMS: &[&str] = &[
        "jest.config.",
        "vitest.config.",
        "vitest.workspace.",
        ".mocharc.",
        "karma.conf.",
        "ava.config.",
    ];
    NAMED.contains(&name)
        || CONFIG_STEMS.iter().any(|stem| name.starts_with(stem))
        || (in_tests && name == "__init__.py")
        || name.ends_with(".mk")
        || path == ".cargo/config.toml"
        || path == ".cargo/config"
        || path.ends_with("/.cargo/config.toml")
}

/// Manifests whose test sections alone are the judge's (the rest is the project's: its
/// dependencies, its version), and those sections: `pyproject.toml`'s `[tool.*]` tables
/// (pytest's, coverage's, tox's), `package.json`'s scripts (`npm test` runs
/// `scripts.test` as the branch holds it) and the runners' keys.
pub fn test_sections(path: &str, text: &str) -> Option<Option<String>> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let picked = match name {
        "pyproject.toml" => match text.parse::<toml::Table>() {
            Ok(table) => table.get("tool").map(|t| format!("{t:?}")),
            Err(_) => Some(format!("unreadable: {text}")),
        },
        "package.json" => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(json) => {
                let keys = ["scripts", "jest", "mocha", "ava", "c8", "nyc"];
                let picked: Vec<String> = keys
                    .iter()
                    .map(|k| format!("{k}={}", json.get(k).cloned().unwrap_or_default()))
                    .collect();
                Some(picked.join("\n"))
            }
            Err(_) => Some(format!("unreadable: {text}")),
        },
        _ => return None,
    };
    Some(picked)
}

/// The files `command` runs, as the base holds them (`read` gives a file's text there): the
/// words that name a file (`./test.sh`, `scripts/ci.sh`, `-c pytest.ini`), what a word
/// implies (`make`), and, two levels deep, the files those name in turn (a script that
/// sources `scripts/helpers.sh`). Test files found that way are not the judge's: they are
/// held to their count instead, and a story may change them.
pub fn named_files(command: &str, read: impl Fn(&str) -> Option<String>) -> Vec<String> {
    const DEPTH: usize = 2;
    const MOST: usize = 64;
    let mut named: Vec<String> = Vec::new();
    let mut texts = vec![(command.to_owned(), 0)];
    while let Some((text, depth)) = texts.pop() {
        for candidate in files_named_in(&text) {
            if named.len() >= MOST || named.contains(&candidate) {
                continue;
            }
            if depth > 0 && is_test_file(&candidate) {
                continue;
            }
            let Some(content) = read(&candidate) else {
                continue;
            };
            if depth < DEPTH {
                texts.push((content, depth + 1));
            }
            named.push(candidate);
        }
    }
    named
}

/// The relative paths a command or script's words could name, with what a word implies.
fn files_named_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words = text
        .split(|c: char| c.is_whitespace() || ";&|()<>=`".contains(c))
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .filter(|w| !w.is_empty());
    for word in words {
        let path = word.trim_start_matches("./");
        let mut candidates: Vec<&str> = vec![path];
        if let Some((_, files)) = IMPLIED.iter().find(|(program, _)| *program == path) {
            candidates.extend(files.iter());
        }
        for candidate in candidates {
            let plain = !candidate.is_empty()
                && !candidate.starts_with('/')
                && !candidate.starts_with('-')
                && !candidate.contains(['$', '*', '?'])
                && !candidate.split('/').any(|part| part == "..");
            if plain {
                out.push(candidate.to_owned());
            }
        }
    }
    out
}

/// The scope a story declared, and the scopes the epic's other stories declare.
pub struct Scope<'a> {
    /// Its own `touches` (none declared: no bound of its own).
    pub own: &'a [String],
    /// Every other story's key and `touches`.
    pub others: &'a [(String, Vec<String>)],
}

/// The changed `paths` outside a story's scope, each named with the other story that
/// declares it, if one does: a path its own `touches` do not name (when it declares any), or
/// one another story's do. Tests and BMAD's bookkeeping (`bookkeeping`) are not scope.
pub fn out_of_scope(
    paths: &[&str],
    scope: &Scope<'_>,
    bookkeeping: impl Fn(&str) -> bool,
) -> Vec<String> {
    let names = |touches: &[String], p: &str| touches.iter().any(|t| crate::paths::names(t, p));
    paths
        .iter()
        .copied()
        .filter(|p| !is_test_file(p) && !bookkeeping(p))
        .filter(|p| !names(scope.own, p))
        .filter_map(
            |p| match scope.others.iter().find(|(_, touches)| names(touches, p)) {
                Some((key, _)) => Some(format!("{p} ({key}'s)")),
                None => (!scope.own.is_empty()).then(|| p.to_owned()),
            },
        )
        .collect()
}

static TEST_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(^|/)(tests?|__tests__|spec)/",
        r"|(^|/)test_[^/]*\.py$|_test\.(py|go)$",
        r"|\.(test|spec)\.[cm]?[jt]sx?$",
        r"|(Test|Tests)\.(java|kt|cs|php)$|_spec\.rb$|\.bats$",
    ))
    .expect("the test file pattern")
});

/// Whether `path` holds tests, by the conventions of the common runners.
pub fn is_test_file(path: &str) -> bool {
    TEST_FILE.is_match(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_infrastructure_is_the_judges_and_tests_are_not() {
        for path in [
            "conftest.py",
            "tests/conftest.py",
            "tests/__init__.py",
            "pkg/tests/unit/__init__.py",
            "pytest.ini",
            "setup.cfg",
            "jest.config.ts",
            "web/vitest.config.mts",
            ".mocharc.yml",
            ".cargo/config.toml",
            "crates/x/build.rs",
            "make/rules.mk",
            "spec/spec_helper.rb",
            "phpunit.xml.dist",
        ] {
            assert!(is_judges(path, &[]), "{path}");
        }
        for path in [
            "tests/test_api.py",
            "src/__init__.py",
            "src/api.test.ts",
            "README.md",
            "pyproject.toml",
        ] {
            assert!(!is_judges(path, &[]), "{path}");
        }
    }

    #[test]
    fn a_manifests_test_sections_alone_are_the_judges() {
        let before = "[project]\nname = \"x\"\ndependencies = []\n[tool.pytest.ini_options]\naddopts = \"-q\"\n";
        let deps = before.replace("dependencies = []", "dependencies = [\"httpx\"]");
        let opts = before.replace("-q", "-q -k nothing");
        let section = |text: &str| test_sections("pyproject.toml", text);
        assert_eq!(section(before), section(&deps));
        assert_ne!(section(before), section(&opts));
        let pkg = r#"{"name":"x","dependencies":{},"scripts":{"test":"jest"}}"#;
        let dep = pkg.replace(r#""dependencies":{}"#, r#""dependencies":{"a":"1"}"#);
        let script = pkg.replace("jest", "echo ok 1");
        let json = |text: &str| test_sections("web/package.json", text);
        assert_eq!(json(pkg), json(&dep));
        assert_ne!(json(pkg), json(&script));
        assert_eq!(test_sections("Cargo.toml", ""), None);
    }

    #[test]
    fn the_judges_files_are_config_ci_and_what_the_command_runs() {
        let base = [
            (
                "test.sh",
                ". scripts/helpers.sh\nsh tests/api.sh\nrun_all\n",
            ),
            ("scripts/helpers.sh", "run_all() { sh scripts/deep.sh; }\n"),
            ("scripts/deep.sh", "sh scripts/deeper.sh\n"),
            ("scripts/deeper.sh", "true\n"),
            ("tests/api.sh", "true\n"),
            ("scripts/ci.sh", "true\n"),
            ("Makefile", "test:\n\t./scripts/ci.sh\n"),
            ("pytest.ini", "[pytest]\n"),
        ];
        let read = |p: &str| {
            base.iter()
                .find(|(path, _)| *path == p)
                .map(|(_, text)| text.to_string())
        };
        let mut named = named_files("./test.sh", read);
        named.sort();
        // Two levels below the command, and no test file found on the way.
        assert_eq!(
            named,
            vec!["scripts/deep.sh", "scripts/helpers.sh", "test.sh"]
        );
        let mut named = named_files("bash scripts/ci.sh && make test", read);
        named.sort();
        assert_eq!(named, vec!["Makefile", "scripts/ci.sh"]);
        assert_eq!(
            named_files("pytest -c pytest.ini -q", read),
            vec!["pytest.ini"]
        );
        assert_eq!(
            named_files("sh tests/api.sh", read),
            vec!["tests/api.sh"],
            "a test the command names itself is the judge's"
        );
        assert_eq!(named_files("cargo test", read), Vec::<String>::new());
        assert_eq!(
            named_files("/bin/sh ../outside.sh", |_| Some(String::new())),
            Vec::<String>::new(),
            "no path outside the repository"
        );

        let named = vec!["test.sh".to_owned()];
        for judges in [
            ".bmad/config.yaml",
            ".bmad/playbooks/x.yaml",
            ".github/workflows/ci.yml",
            ".gitlab-ci.yml",
            "test.sh",
            ".claude/settings.json",
            "opencode.json",
        ] {
            assert!(is_judges(judges, &named), "{judges}");
        }
        for work in [
            ".bmad/sessions/abc/journal.md",
            "src/test.sh.rs",
            "docs/.github/workflows.md",
            "tests/test_a.py",
        ] {
            assert!(!is_judges(work, &named), "{work}");
        }
    }

    #[test]
    fn work_outside_the_declared_touches_or_inside_another_storys_is_named() {
        let own = vec!["src/api".to_owned(), "docs/*.md".to_owned()];
        let others = vec![
            ("3-2-storage".to_owned(), vec!["src/storage".to_owned()]),
            (
                "3-4-retries".to_owned(),
                vec!["src/api/retry.rs".to_owned()],
            ),
        ];
        let paths = [
            "src/api/client.rs",
            "src/api/retry.rs",
            "docs/api.md",
            "src/sync/engine.rs",
            "src/storage/db.rs",
            "tests/api_test.py",
            "_bmad-output/sprint-status.yaml",
        ];
        let bookkeeping = |p: &str| p.ends_with("sprint-status.yaml");
        let scope = Scope {
            own: &own,
            others: &others,
        };
        assert_eq!(
            out_of_scope(&paths, &scope, bookkeeping),
            vec!["src/sync/engine.rs", "src/storage/db.rs (3-2-storage's)"],
            "a path its own touches name is its own, though another story names it too"
        );
        let undeclared = Scope {
            own: &[],
            others: &others,
        };
        assert_eq!(
            out_of_scope(&paths, &undeclared, bookkeeping),
            vec![
                "src/api/retry.rs (3-4-retries's)",
                "src/storage/db.rs (3-2-storage's)"
            ],
            "with no touches of its own, only what other stories declare is outside"
        );
        let alone = Scope {
            own: &[],
            others: &[],
        };
        assert!(out_of_scope(&paths, &alone, bookkeeping).is_empty());
    }

    #[test]
    fn test_files_by_convention() {
        for test in [
            "tests/api.rs",
            "test/a.js",
            "pkg/__tests__/x.ts",
            "spec/model_spec.rb",
            "test_api.py",
            "app/api_test.py",
            "sync/engine_test.go",
            "src/a.test.tsx",
            "src/a.spec.mjs",
            "src/main/java/ApiTest.java",
            "t/basic.bats",
        ] {
            assert!(is_test_file(test), "{test}");
        }
        for not in [
            "src/api.rs",
            "specs/001-x/spec.md",
            "src/contest.py",
            "latest/a.js",
        ] {
            assert!(!is_test_file(not), "{not}");
        }
    }
}
