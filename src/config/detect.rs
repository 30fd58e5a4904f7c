//! The project's test command, found from its build files for `git bmad init`.
//!
//! `tests_pass` is how git-bmad believes "the tests pass" without taking an agent's word, so
//! a new setup should know the command from the start. Detection only reads files at the
//! top of the project; the first match in the order below wins, and what was found is
//! written beside the command so a wrong guess is easy to see and fix.

use std::path::Path;

/// A test command and the file that gave it away.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DetectedTests {
    /// The command, for `sh -c` in the worktree.
    pub command: String,
    /// What was found, for the config comment (`Cargo.toml`).
    pub found: String,
}

/// The test command of the project at `root`, if its build files name one.
pub fn detect_test_command(root: &Path) -> Option<DetectedTests> {
    let has = |name: &str| root.join(name).is_file();
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_default();
    let found = |command: &str, found: &str| {
        Some(DetectedTests {
            command: command.to_owned(),
            found: found.to_owned(),
        })
    };
    if has("Cargo.toml") {
        return found("cargo test", "Cargo.toml");
    }
    if has("package.json") && npm_test_script(&read("package.json")) {
        let by_lockfile = [
            ("bun.lock", "bun run test"),
            ("bun.lockb", "bun run test"),
            ("pnpm-lock.yaml", "pnpm test"),
            ("yarn.lock", "yarn test"),
        ];
        for (lockfile, command) in by_lockfile {
            if has(lockfile) {
                return found(
                    command,
                    &format!("package.json with a test script and {lockfile}"),
                );
            }
        }
        return found("npm test", "package.json with a test script");
    }
    if has("go.mod") {
        return found("go test ./...", "go.mod");
    }
    if has("mix.exs") {
        return found("mix test", "mix.exs");
    }
    let python = [
        "pyproject.toml",
        "pytest.ini",
        "setup.py",
        "setup.cfg",
        "tox.ini",
    ];
    if let Some(file) = python.iter().find(|f| has(f)) {
        let runner = if has("uv.lock") {
            "uv run pytest"
        } else if has("poetry.lock") {
            "poetry run pytest"
        } else {
            "python -m pytest"
        };
        return found(runner, file);
    }
    if has("gradlew") {
        return found("./gradlew test", "gradlew");
    }
    if has("build.gradle") || has("build.gradle.kts") {
        return found("gradle test", "build.gradle");
    }
    if has("pom.xml") {
        let maven = if has("mvnw") {
            "./mvnw test"
        } else {
            "mvn test"
        };
        return found(maven, "pom.xml");
    }
    if let Some(file) = dotnet_project(root) {
        return found("dotnet test", &file);
    }
    for makefile in ["GNUmakefile", "makefile", "Makefile"] {
        if has(makefile) && make_has_test_target(&read(makefile)) {
            return found("make test", &format!("{makefile} with a test target"));
        }
    }
    None
}

/// Whether package.json has a `test` script other than the one `npm init` writes, which
/// only fails.
fn npm_test_script(package_json: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(package_json) else {
        return false;
    };
    value["scripts"]["test"]
        .as_str()
        .is_some_and(|script| !script.contains("no test specified"))
}

/// A `.sln`, `.csproj`, `.fsproj` or `.vbproj` at the top of the project.
fn dotnet_project(root: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            [".sln", ".csproj", ".fsproj", ".vbproj"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    names.sort();
    names.into_iter().next()
}

/// A line `test:` (or `test: deps`) starting a rule.
fn make_has_test_target(makefile: &str) -> bool {
    makefile.lines().any(|line| {
        line.strip_prefix("test")
            .and_then(|rest| rest.trim_start().strip_prefix(':'))
            .is_some_and(|rest| !rest.starts_with('='))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(files: &[(&str, &str)]) -> Option<(String, String)> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        detect_test_command(dir.path()).map(|d| (d.command, d.found))
    }

    fn command(files: &[(&str, &str)]) -> Option<String> {
        detect(files).map(|(command, _)| command)
    }

    #[test]
    fn each_ecosystem_by_its_files() {
        let script = r#"{"scripts": {"test": "vitest run"}}"#;
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("Cargo.toml", "[package]")], "cargo test"),
            (&[("package.json", script)], "npm test"),
            (
                &[("package.json", script), ("package-lock.json", "{}")],
                "npm test",
            ),
            (
                &[("package.json", script), ("pnpm-lock.yaml", "")],
                "pnpm test",
            ),
            (&[("package.json", script), ("yarn.lock", "")], "yarn test"),
            (
                &[("package.json", script), ("bun.lock", "")],
                "bun run test",
            ),
            (&[("go.mod", "module x")], "go test ./..."),
            (&[("mix.exs", "")], "mix test"),
            (&[("pyproject.toml", "")], "python -m pytest"),
            (&[("pyproject.toml", ""), ("uv.lock", "")], "uv run pytest"),
            (
                &[("setup.py", ""), ("poetry.lock", "")],
                "poetry run pytest",
            ),
            (&[("gradlew", ""), ("build.gradle", "")], "./gradlew test"),
            (&[("build.gradle.kts", "")], "gradle test"),
            (&[("pom.xml", "")], "mvn test"),
            (&[("pom.xml", ""), ("mvnw", "")], "./mvnw test"),
            (&[("App.csproj", "")], "dotnet test"),
            (
                &[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./x\n")],
                "make test",
            ),
        ];
        for (files, expected) in cases {
            assert_eq!(command(files).as_deref(), Some(*expected), "{files:?}");
        }
    }

    #[test]
    fn nothing_found_is_none_and_what_was_found_is_said() {
        assert_eq!(command(&[]), None);
        assert_eq!(command(&[("README.md", "# x")]), None);
        let npm_default = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
        assert_eq!(command(&[("package.json", npm_default)]), None);
        assert_eq!(command(&[("package.json", "{not json")]), None);
        assert_eq!(command(&[("Makefile", "TEST := 1\ntest = 2\n")]), None);
        assert_eq!(
            detect(&[
                ("package.json", r#"{"scripts":{"test":"jest"}}"#),
                ("yarn.lock", "")
            ]),
            Some((
                "yarn test".to_owned(),
                "package.json with a test script and yarn.lock".to_owned()
            ))
        );
    }
}
