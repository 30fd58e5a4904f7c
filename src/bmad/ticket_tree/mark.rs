//! A ticket's status written as `tickets.py mark` writes it: into its plan, never its leaf
//! file, one frontmatter line changed; a ticket with no plan gets a plan holding only
//! frontmatter (`title`, `ticket`, `status`), named after its leaf file.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::{frontmatter, Ticket, TicketTree, STATUSES};
use crate::bmad::status::{legal_transition, Status};
use crate::bmad::write::write_unless_changed;
use crate::bmad::{Error, Result};

/// The v7 word for a status given as any era's word: `review` is `in-review`, `backlog`
/// `draft`; `built` and `dropped` are v7's own. A word v7 does not know is refused.
pub fn v7_word(to: &Status) -> std::result::Result<&str, String> {
    let word = to.as_spec_word();
    if STATUSES.contains(&word) {
        Ok(word)
    } else {
        Err(format!(
            "`{word}` is no v7 ticket status ({}); tickets.py would read the ticket as blocked",
            STATUSES.join(", ")
        ))
    }
}

/// `title` as a file-name slug, as `tickets.py` names a pulled leaf: accents dropped (NFKD),
/// ASCII letters and digits, dashes between, at most 60 characters.
fn title_slug(title: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut slug = String::new();
    let ascii = title.nfkd().filter(char::is_ascii);
    for c in ascii.map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(60).collect();
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() {
        "untitled".to_owned()
    } else {
        slug
    }
}

/// What [`TicketTree::mark`] wrote.
#[derive(Clone, Debug)]
pub struct Marked {
    /// The ticket's reference (`1.2`), whatever key named it.
    pub reference: String,
    /// The plan file.
    pub plan: PathBuf,
    /// Whether it was created.
    pub created: bool,
    /// The status before (`planned` for a ticket with no file).
    pub from: String,
    /// The word written.
    pub to: String,
}

impl TicketTree {
    /// Where `t`'s plan is or goes: the joined plan, else `<leaf stem>-plan.md` (a pulled
    /// leaf's stem, else `<type>-<slug of the title>`, with `-<id>` when that name is taken).
    fn plan_path(&self, t: &Ticket) -> PathBuf {
        let folder = self.folder_path(&t.folder);
        if let Some(plan) = &t.plan {
            return folder.join(plan);
        }
        let stem = match &t.leaf {
            Some(leaf) => leaf.trim_end_matches(".md").to_owned(),
            None => {
                let stem = format!("{}-{}", t.kind, title_slug(&t.title));
                let mates = self.tickets.iter().filter(|o| o.folder == t.folder);
                let mut taken = mates.clone().filter_map(|o| {
                    o.leaf
                        .as_deref()
                        .map(|l| l.trim_end_matches(".md").to_owned())
                });
                let earlier = mates
                    .take_while(|o| !std::ptr::eq(*o, t))
                    .filter(|o| o.leaf.is_none())
                    .any(|o| format!("{}-{}", o.kind, title_slug(&o.title)) == stem);
                if earlier || taken.any(|l| l == stem) {
                    format!(
                        "{stem}-{}",
                        t.id.as_ref().map(|i| i.to_string()).unwrap_or_default()
                    )
                } else {
                    stem
                }
            }
        };
        folder.join(format!("{stem}-plan.md"))
    }

    /// Set the ticket `reference` names to `to` in its plan; returns the plan's path. A move
    /// backwards or past a step is refused without `force`, as for every era.
    pub fn mark(&self, reference: &str, to: &Status, force: bool) -> Result<Marked> {
        let t = self.ticket(reference).ok_or_else(|| Error::UnknownKey {
            key: reference.to_owned(),
            path: self.folder.clone(),
        })?;
        let illegal = |why: String| Error::IllegalTransition {
            key: reference.to_owned(),
            why,
        };
        if !t.extra_plans.is_empty() {
            return Err(illegal(format!(
                "it has more than one plan ({}, {}); remove the extra ones first, git-bmad never guesses which to change",
                t.plan.as_deref().unwrap_or_default(),
                t.extra_plans.join(", ")
            )));
        }
        let word = v7_word(to).map_err(illegal)?;
        if !force {
            legal_transition(&super::status_of(&t.status), to).map_err(illegal)?;
        }
        let path = self.plan_path(t);
        if t.plan.is_some() {
            let old = std::fs::read_to_string(&path)
                .map_err(|e| Error::io("could not read", &path, e))?;
            let text =
                frontmatter::with_value(&old, "status", word).ok_or_else(|| Error::Parse {
                    path: path.clone(),
                    line: 1,
                    message: "the plan has no frontmatter to hold its status".into(),
                })?;
            // Whoever wrote the plan since it was read keeps their change; a link is refused.
            let read: [u8; 32] = Sha256::digest(old.as_bytes()).into();
            write_unless_changed(&path, &read, &text)?;
        } else {
            // `symlink_metadata`: a dangling link is there too.
            if std::fs::symlink_metadata(&path).is_ok() {
                return Err(illegal(format!(
                    "{} exists already and is not its plan; rename it first",
                    path.display()
                )));
            }
            let ticket = match (&t.id, &t.leaf) {
                (Some(id), _) => id.to_string(),
                (None, Some(leaf)) => frontmatter::quoted(leaf.trim_end_matches(".md")),
                (None, None) => String::new(),
            };
            let text = format!(
                "---\ntitle: {}\nticket: {ticket}\nstatus: {word}\n---\n",
                frontmatter::quoted(&t.title)
            );
            crate::fs::write_atomically(&path, text.as_bytes(), None)
                .map_err(|e| Error::io("could not write", &path, e))?;
        }
        Ok(Marked {
            reference: self.reference(t),
            plan: path,
            created: t.plan.is_none(),
            from: if t.status.is_empty() {
                t.state().to_owned()
            } else {
                t.status.clone()
            },
            to: word.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_title() {
        assert_eq!(
            title_slug("Apply & refuse discount codes!"),
            "apply-refuse-discount-codes"
        );
        assert_eq!(title_slug("Café au lait"), "cafe-au-lait");
        assert_eq!(title_slug("***"), "untitled");
        assert_eq!(title_slug(&"a".repeat(80)).len(), 60);
    }

    #[test]
    fn words_of_every_era_become_v7_words() {
        assert_eq!(v7_word(&Status::parse("review")), Ok("in-review"));
        assert_eq!(v7_word(&Status::parse("backlog")), Ok("draft"));
        assert_eq!(v7_word(&Status::parse("built")), Ok("built"));
        assert_eq!(v7_word(&Status::parse("dropped")), Ok("dropped"));
        assert!(v7_word(&Status::parse("awaiting-operator")).is_err());
        assert!(v7_word(&Status::Optional).is_err());
    }
}
