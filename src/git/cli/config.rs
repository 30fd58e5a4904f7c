//! git's config through the `git` binary: reads in git's own precedence (every scope, `-c`
//! and `GIT_CONFIG_*` included) and writes to one file.

use super::{check, output, GitCli};
use crate::git::error::{Error, Result};

impl GitCli {
    /// `git config <args>`'s output, `None` when the key is not set (git's exit 1).
    fn config_read(&self, args: &[&str]) -> Result<Option<String>> {
        let mut cmd = self.command();
        cmd.arg("config").args(args);
        let out = output(cmd)?;
        if out.status.code() == Some(1) {
            return Ok(None);
        }
        let mut all = vec!["config"];
        all.extend(args);
        check(&all, &out)?;
        Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// `git config --type=bool --get <key>` from every scope git reads, settings given on the
    /// command line (`-c`, `GIT_CONFIG_*`) included.
    pub(in crate::git) fn config_get_bool(&self, key: &str) -> Result<Option<bool>> {
        Ok(self
            .config_read(&["--type=bool", "--get", key])?
            .map(|v| v.trim() == "true"))
    }

    /// `git config --show-scope --get <key>`: the scope that sets it, and its value.
    pub(in crate::git) fn config_get_with_scope(
        &self,
        key: &str,
    ) -> Result<Option<(String, String)>> {
        Ok(self
            .config_read(&["--show-scope", "--get", key])?
            .and_then(|text| {
                text.trim_end_matches('\n')
                    .split_once('\t')
                    .map(|(scope, value)| (scope.to_owned(), value.to_owned()))
            }))
    }

    /// All values of a key in the repository's own config file.
    pub(in crate::git) fn config_get_all(&self, key: &str) -> Result<Vec<String>> {
        Ok(self
            .config_read(&["--local", "--get-all", key])?
            .map(|v| v.lines().map(str::to_owned).collect())
            .unwrap_or_default())
    }

    /// Every setting whose key matches `pattern`, from every config file, as (scope, key,
    /// value); keys come back lowercased, as git prints them.
    pub(in crate::git) fn config_get_regexp_with_scope(
        &self,
        pattern: &str,
    ) -> Result<Vec<(String, String, String)>> {
        let text = self
            .config_read(&["--show-scope", "--get-regexp", pattern])?
            .unwrap_or_default();
        Ok(text
            .lines()
            .filter_map(|line| {
                let (scope, rest) = line.split_once('\t')?;
                let (key, value) = rest.split_once(' ').unwrap_or((rest, ""));
                Some((scope.to_owned(), key.to_owned(), value.to_owned()))
            })
            .collect())
    }

    /// Set (`Some`) or remove (`None`) a key in one config file.
    pub(in crate::git) fn config_put_in(
        &self,
        scope: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<()> {
        match value {
            Some(value) => self.run(["config", scope, key, value]).map(drop),
            // Exit 5: the key was not there, which is what was asked for.
            None => match self.config_read(&[scope, "--unset-all", key]) {
                Err(Error::Command { code: Some(5), .. }) => Ok(()),
                other => other.map(drop),
            },
        }
    }

    /// Add a value to a local multi-valued config key.
    pub(in crate::git) fn config_add(&self, key: &str, value: &str) -> Result<()> {
        self.run(["config", "--local", "--add", key, value])
            .map(drop)
    }
}
