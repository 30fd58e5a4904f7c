//! What a project tier means for automation, and how a user overrides it: batch sizes,
//! party mode below a confidence, a party review before the final approval.
//!
//! Overrides come in five forms, parsed from what a user says or passes: an explicit tier
//! ("use tier 3"), a profile ("profile: cautious"), specific settings ("batch_size: 2"),
//! natural-language hints ("I want minimal interruptions") and inline modifiers
//! ("[thorough]"). The tier is taken from the highest-priority source that names one —
//! explicit tier > profile > specific settings > natural language — and lower ones that
//! disagree are listed as overruled, never silently dropped. A specific setting changes
//! that setting only. Inline modifiers apply to the one operation whose message carries
//! them; everything else persists for the session, which is why [`resolve`] folds the
//! session's whole override history rather than the latest message.
//!
//! Final approval, stall detection and the push policy are not settings: any attempt to
//! turn them off is refused with `safety_override_blocked`, whatever the source.

use serde::Serialize;

/// Tier-derived behaviour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// 0–4.
    pub tier: u8,
    /// Continue menus taken before a checkpoint; `None` continues all (tiers 0–1).
    pub batch_size: Option<u32>,
    /// Party mode starts when confidence falls below this.
    pub party_mode_below: Option<u32>,
    /// A party-mode review before the final approval.
    pub pre_final_review: bool,
}

impl Settings {
    /// The defaults of a tier (clamped to 0–4).
    pub fn for_tier(tier: u8) -> Settings {
        let tier = tier.min(4);
        Settings {
            tier,
            batch_size: match tier {
                0 | 1 => None,
                2 => Some(5),
                3 => Some(3),
                _ => Some(1),
            },
            party_mode_below: (tier >= 2).then_some(60),
            pre_final_review: tier >= 3,
        }
    }
}

/// Where an override came from, highest priority first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// "use tier 3", `--tier 3`.
    ExplicitTier,
    /// "profile: cautious".
    Profile,
    /// "batch_size: 2".
    SpecificSetting,
    /// "minimal interruptions", "more oversight".
    NaturalLanguage,
    /// "[thorough]" in one message: that operation only.
    InlineModifier,
}

/// One override found in a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Override {
    /// Its form.
    pub source: Source,
    /// What it changes.
    pub change: Change,
    /// The words it came from.
    pub text: String,
}

/// What an override changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Change {
    /// Set the tier.
    Tier(u8),
    /// Move the tier by this much (natural language, inline modifiers).
    Shift(i8),
    /// Set one setting.
    BatchSize(Option<u32>),
    /// Set the party-mode threshold.
    PartyModeBelow(Option<u32>),
    /// Set the pre-final review.
    PreFinalReview(bool),
}

/// An override that would switch off a safety behaviour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{error}: {behaviour} cannot be bypassed ({text:?}); {explanation}")]
pub struct Blocked {
    /// Always `safety_override_blocked`.
    pub error: &'static str,
    /// `final approval`, `stall detection` or `the push policy`.
    pub behaviour: &'static str,
    /// The words that asked for it.
    pub text: String,
    /// Why not.
    pub explanation: &'static str,
}

/// Profiles and the tier each stands for.
pub const PROFILES: &[(&str, u8)] = &[
    ("aggressive", 1),
    ("fast", 1),
    ("balanced", 2),
    ("cautious", 4),
    ("thorough", 4),
];

/// Hints that shift the tier, lowercase.
const HINTS: &[(&str, i8)] = &[
    ("minimal interruptions", -1),
    ("fewer interruptions", -1),
    ("fewer checkpoints", -1),
    ("less oversight", -1),
    ("more automation", -1),
    ("move fast", -1),
    ("more oversight", 1),
    ("more checkpoints", 1),
    ("be careful", 1),
    ("more careful", 1),
    ("check everything", 1),
];

/// Inline modifiers, for one operation.
const MODIFIERS: &[(&str, i8)] = &[
    ("[thorough]", 1),
    ("[careful]", 1),
    ("[quick]", -1),
    ("[fast]", -1),
];

/// Safety behaviours: the words naming each, and the words that would switch it off.
const SAFETY: &[(&str, &[&str])] = &[
    ("final approval", &["final approval", "final_approval"]),
    ("stall detection", &["stall detection", "stall_detection"]),
    (
        "the push policy",
        &[
            "push policy",
            "push_policy",
            "force push",
            "force-push",
            "push to main",
            "no-verify",
        ],
    ),
];
const SWITCH_OFF: &[&str] = &[
    "skip", "disable", "turn off", "bypass", "without", "no ", "ignore", "allow", "remove", "drop",
];
const EXPLANATION: &str = "final approval, stall detection and the push policy stay on at every tier, whatever the override";

/// The overrides in one message, or `Blocked` if it asks to switch off a safety behaviour.
pub fn parse(message: &str) -> Result<Vec<Override>, Blocked> {
    let lower = message.to_lowercase();
    for (behaviour, names) in SAFETY {
        for name in names.iter() {
            // "--no-verify" is itself a bypass; the rest need a verb ("allow force push").
            let bypass = lower
                .match_indices(name)
                .any(|(at, n)| *name == "no-verify" || switched_off(&lower, at, at + n.len()));
            if bypass {
                return Err(Blocked {
                    error: "safety_override_blocked",
                    behaviour,
                    text: message.trim().to_owned(),
                    explanation: EXPLANATION,
                });
            }
        }
    }
    let mut found = Vec::new();
    let mut push = |source, change, text: &str| {
        found.push(Override {
            source,
            change,
            text: text.to_owned(),
        })
    };
    if let Some(tier) = explicit_tier(&lower) {
        push(
            Source::ExplicitTier,
            Change::Tier(tier),
            &format!("tier {tier}"),
        );
    }
    if let Some((name, tier)) = setting_value(&lower, "profile")
        .and_then(|p| PROFILES.iter().find(|(n, _)| *n == p).copied())
    {
        push(
            Source::Profile,
            Change::Tier(tier),
            &format!("profile: {name}"),
        );
    }
    if let Some(v) = setting_value(&lower, "batch_size") {
        let change = match v.as_str() {
            "all" | "none" | "auto" => Some(Change::BatchSize(None)),
            n => n
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(|n| Change::BatchSize(Some(n))),
        };
        if let Some(c) = change {
            push(Source::SpecificSetting, c, &format!("batch_size: {v}"));
        }
    }
    if let Some(v) = setting_value(&lower, "party_mode_below") {
        let change = match v.as_str() {
            "none" | "off" => Some(Change::PartyModeBelow(None)),
            n => n
                .parse()
                .ok()
                .filter(|n| *n <= 100)
                .map(|n| Change::PartyModeBelow(Some(n))),
        };
        if let Some(c) = change {
            push(
                Source::SpecificSetting,
                c,
                &format!("party_mode_below: {v}"),
            );
        }
    }
    if let Some(v) = setting_value(&lower, "pre_final_review") {
        if let Ok(b) = v.parse() {
            push(
                Source::SpecificSetting,
                Change::PreFinalReview(b),
                &format!("pre_final_review: {v}"),
            );
        }
    }
    if let Some(v) = setting_value(&lower, "tier").filter(|_| explicit_tier(&lower).is_none()) {
        if let Some(t) = v.parse().ok().filter(|t| *t <= 4) {
            push(
                Source::SpecificSetting,
                Change::Tier(t),
                &format!("tier: {v}"),
            );
        }
    }
    for (hint, shift) in HINTS {
        if lower.contains(hint) {
            push(Source::NaturalLanguage, Change::Shift(*shift), hint);
        }
    }
    for (modifier, shift) in MODIFIERS {
        if lower.contains(modifier) {
            push(Source::InlineModifier, Change::Shift(*shift), modifier);
        }
    }
    Ok(found)
}

/// "tier 3", "use tier 3", "level 3", "--tier 3" (but not "tier: 3", a specific setting).
fn explicit_tier(lower: &str) -> Option<u8> {
    ["tier ", "level "].iter().find_map(|key| {
        lower.match_indices(key).find_map(|(at, _)| {
            let before_ok = lower[..at]
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let digits: String = lower[at + key.len()..]
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok().filter(|t: &u8| before_ok && *t <= 4)
        })
    })
}

/// Whether a safety behaviour's name at `at..end` is asked to be switched off: a verb just
/// before it ("skip final approval") or a false value just after ("final_approval: false").
fn switched_off(lower: &str, at: usize, end: usize) -> bool {
    let mut from = at.saturating_sub(24);
    while !lower.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (end + 8).min(lower.len());
    while !lower.is_char_boundary(to) {
        to += 1;
    }
    let before = &lower[from..at];
    let after = &lower[end..to];
    SWITCH_OFF.iter().any(|w| before.contains(w))
        || [": false", ": off", "=false", "=off", ": none", ": no"]
            .iter()
            .any(|w| after.starts_with(w))
}

/// The value after `key:` or `key=`, one word, lowercase.
fn setting_value(lower: &str, key: &str) -> Option<String> {
    let mut rest = lower;
    while let Some(at) = rest.find(key) {
        let before_ok = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after = rest[at + key.len()..].trim_start();
        if before_ok {
            if let Some(v) = after.strip_prefix(':').or_else(|| after.strip_prefix('=')) {
                let v: String = v
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                if !v.is_empty() {
                    return Some(v);
                }
            }
        }
        rest = &rest[at + key.len()..];
    }
    None
}

/// One override's fate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The override.
    #[serde(flatten)]
    pub by: Override,
    /// Whether it took effect.
    pub applied: bool,
    /// Why not, when it did not.
    pub overruled_by: Option<Source>,
}

/// The settings in force.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// For the session.
    pub settings: Settings,
    /// For this operation (the session's, with its inline modifiers).
    pub operation: Settings,
    /// Every override considered, in the order given.
    pub overrides: Vec<Applied>,
}

/// Fold a session's overrides (oldest first) over the base tier; `current` are the
/// overrides of this operation's message, whose inline modifiers apply to it alone.
pub fn resolve(base_tier: u8, session: &[Override], current: &[Override]) -> Resolution {
    let all: Vec<&Override> = session.iter().chain(current).collect();
    // The tier: the highest-priority source that sets one, its latest word.
    let mut tier_from: Option<(Source, u8)> = None;
    for o in &all {
        if let Change::Tier(t) = o.change {
            if tier_from.is_none_or(|(s, _)| o.source <= s) {
                tier_from = Some((o.source, t));
            }
        }
    }
    let mut tier = tier_from.map_or(base_tier.min(4), |(_, t)| t);
    // Hints move the tier only when nothing above them set it.
    let mut shifted = false;
    if tier_from.is_none() {
        for o in all.iter().filter(|o| o.source == Source::NaturalLanguage) {
            if let Change::Shift(d) = o.change {
                tier = shift(tier, d);
                shifted = true;
            }
        }
    }
    let mut settings = Settings::for_tier(tier);
    for o in &all {
        match o.change {
            Change::BatchSize(b) => settings.batch_size = b,
            Change::PartyModeBelow(p) => settings.party_mode_below = p,
            Change::PreFinalReview(r) => settings.pre_final_review = r,
            _ => {}
        }
    }
    let mut operation = settings.clone();
    for o in current
        .iter()
        .filter(|o| o.source == Source::InlineModifier)
    {
        if let Change::Shift(d) = o.change {
            let t = shift(operation.tier, d);
            operation = Settings {
                tier: t,
                ..Settings::for_tier(t)
            };
        }
    }
    let overrides = all
        .iter()
        .map(|o| {
            let overruled_by = match o.change {
                Change::Tier(t) => tier_from
                    .filter(|(s, w)| *s < o.source || (*s == o.source && *w != t))
                    .map(|(s, _)| s),
                Change::Shift(_) if o.source == Source::NaturalLanguage && !shifted => {
                    tier_from.map(|(s, _)| s)
                }
                _ => None,
            };
            Applied {
                by: (*o).clone(),
                applied: overruled_by.is_none(),
                overruled_by,
            }
        })
        .collect();
    Resolution {
        settings,
        operation,
        overrides,
    }
}

fn shift(tier: u8, by: i8) -> u8 {
    (tier as i8 + by).clamp(0, 4) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::testing::random_strings;

    fn say(message: &str) -> Vec<Override> {
        parse(message).unwrap()
    }

    #[test]
    fn batch_sizes_by_tier() {
        // Tiers 0–1 continue all, 2 up to 5, 3 up to 3, 4 exactly 1.
        let sizes: Vec<Option<u32>> = (0..=4).map(|t| Settings::for_tier(t).batch_size).collect();
        assert_eq!(sizes, [None, None, Some(5), Some(3), Some(1)]);
        // Party mode below 60 from tier 2; a party review before approval at tiers 3–4.
        assert_eq!(Settings::for_tier(1).party_mode_below, None);
        assert_eq!(Settings::for_tier(2).party_mode_below, Some(60));
        assert!(!Settings::for_tier(2).pre_final_review);
        assert!(Settings::for_tier(3).pre_final_review);
    }

    #[test]
    fn each_override_method() {
        // 7.1: natural language shifts toward more automation.
        let r = resolve(3, &say("I want minimal interruptions"), &[]);
        assert_eq!(r.settings.tier, 2);
        // Explicit tier, immediately.
        assert_eq!(
            resolve(1, &say("use tier 3"), &[]).settings,
            Settings::for_tier(3)
        );
        // Profile.
        assert_eq!(resolve(2, &say("profile: cautious"), &[]).settings.tier, 4);
        // Inline modifier: this operation only.
        let r = resolve(2, &[], &say("write the tests [thorough]"));
        assert_eq!((r.settings.tier, r.operation.tier), (2, 3));
        assert_eq!(r.operation.batch_size, Some(3));
        // A specific setting changes that setting alone.
        let r = resolve(3, &say("batch_size: 2"), &[]);
        assert_eq!(
            r.settings,
            Settings {
                batch_size: Some(2),
                ..Settings::for_tier(3)
            }
        );
    }

    #[test]
    fn priority_explicit_profile_settings_language() {
        // 7.2: explicit tier 2, then profile aggressive: tier 2.
        let mut session = say("use tier 2");
        session.extend(say("profile: aggressive"));
        let r = resolve(4, &session, &[]);
        assert_eq!(r.settings.tier, 2);
        let profile = r
            .overrides
            .iter()
            .find(|a| a.by.source == Source::Profile)
            .unwrap();
        assert_eq!(
            (profile.applied, profile.overruled_by),
            (false, Some(Source::ExplicitTier))
        );
        // Profile over a specific tier setting over a hint.
        let r = resolve(2, &say("tier: 1, more oversight, profile: cautious"), &[]);
        assert_eq!(r.settings.tier, 4);
        let r = resolve(2, &say("tier: 1 and more oversight"), &[]);
        assert_eq!(r.settings.tier, 1);
        let hint = r
            .overrides
            .iter()
            .find(|a| a.by.source == Source::NaturalLanguage)
            .unwrap();
        assert_eq!(hint.overruled_by, Some(Source::SpecificSetting));
        // All four: explicit wins.
        let r = resolve(
            0,
            &say("use tier 3. profile: aggressive. batch_size: 2. minimal interruptions"),
            &[],
        );
        assert_eq!((r.settings.tier, r.settings.batch_size), (3, Some(2)));
        // The same source later: the later word.
        let mut session = say("use tier 1");
        session.extend(say("use tier 4"));
        assert_eq!(resolve(2, &session, &[]).settings.tier, 4);
    }

    #[test]
    fn overrides_persist_for_the_session() {
        let session = say("profile: cautious");
        // A later operation without overrides still runs cautious.
        let r = resolve(1, &session, &say("carry on with the next story"));
        assert_eq!((r.settings.tier, r.operation.tier), (4, 4));
    }

    #[test]
    fn safety_is_not_a_setting() {
        for message in [
            "skip final approval",
            "please disable stall detection",
            "final_approval: false",
            "turn off stall detection for this run",
            "allow force push",
            "allow push to main",
            "profile: aggressive and skip final approval",
            "git push --no-verify",
        ] {
            let e = parse(message).unwrap_err();
            assert_eq!(e.error, "safety_override_blocked", "{message}");
        }
        assert_eq!(
            parse("skip final approval").unwrap_err().behaviour,
            "final approval"
        );
        // Mentioning them is fine.
        assert!(parse("show me the final approval summary").is_ok());
        assert!(parse("never force push; keep stall detection on").is_ok());
    }

    #[test]
    fn no_panic_on_arbitrary_text() {
        let texts = random_strings(
            "tier 0123456789:=[]profile batch_size thorough é ",
            7,
            2000,
            40,
        );
        for (i, s) in texts.iter().enumerate() {
            if let Ok(o) = parse(s) {
                let r = resolve((i % 9) as u8, &o, &o);
                assert!(r.settings.tier <= 4 && r.operation.tier <= 4);
            }
        }
    }
}
