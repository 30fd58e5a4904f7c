//! The `epic:` section of `.bmad/config.yaml`: how `git bmad epic run` judges its stories.
//!
//! ```yaml
//! epic:
//!   acceptance_tests: on   # or off
//! ```

use serde::{Deserialize, Deserializer};

/// The section.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct EpicConfig {
    /// Before a story's dev begins, an agent of its own writes failing acceptance tests from
    /// the story's acceptance criteria; they are kept out of every step's reach and the
    /// story is done only when they pass on the commit pushed. On unless set `off`.
    pub acceptance_tests: Switch,
}

impl Default for EpicConfig {
    fn default() -> Self {
        EpicConfig {
            acceptance_tests: Switch::On,
        }
    }
}

/// `on` or `off` (`true` and `false` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

impl Switch {
    /// Whether it is on.
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

impl<'de> Deserialize<'de> for Switch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Said {
            Bool(bool),
            Word(String),
        }
        match Said::deserialize(deserializer)? {
            Said::Bool(true) => Ok(Switch::On),
            Said::Bool(false) => Ok(Switch::Off),
            Said::Word(w) => match w.trim() {
                "on" | "true" | "yes" => Ok(Switch::On),
                "off" | "false" | "no" => Ok(Switch::Off),
                other => Err(serde::de::Error::custom(format!(
                    "{other:?} is neither on nor off"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn acceptance_tests_are_on_unless_set_off() {
        let parse = |text: &str| Config::parse(text, Path::new("c.yaml"));
        assert!(parse("version: 1\n").unwrap().epic.acceptance_tests.is_on());
        for off in ["off", "false", "no"] {
            let config = parse(&format!("epic:\n  acceptance_tests: {off}\n")).unwrap();
            assert!(!config.epic.acceptance_tests.is_on(), "{off}");
        }
        assert!(parse("epic:\n  acceptance_tests: on\n")
            .unwrap()
            .epic
            .acceptance_tests
            .is_on());
        let err = parse("epic:\n  acceptance_tests: maybe\n").unwrap_err();
        assert!(err.to_string().contains("neither on nor off"), "{err}");
    }
}
