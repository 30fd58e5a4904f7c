//! Trust across clones: which events from another clone's journal this clone takes as state.
//!
//! The journal's hash chain tells git-bmad's writes from others' but has no key: anyone who
//! can push to a shared remote can extend it. So a clone signs its chain whenever its journal
//! leaves (`push`): a `journal_signed` event carrying an SSH signature (git's own `gpg.format
//! ssh` mechanism, `ssh-keygen -Y sign`, namespace [`NAMESPACE`]) of the chain value, which
//! commits to every event before it, in order. Another clone copies those events as trusted
//! only when that signature verifies against the allowed signers: `.bmad/allowed_signers` as
//! committed on a protected branch (`main`, `master`, `policy.protected_branches`: a file in
//! git's `allowedSignersFile` format, changed only through review), the user's own `gpg.ssh.allowedSignersFile`, and this clone's own key.
//! Every other event from elsewhere is kept as information: shown, never replayed.
//!
//! The key: `user.signingKey` when `gpg.format` is `ssh`, else a key of this clone's own at
//! `<common git dir>/bmad/signing/id_ed25519`, made the first time one is needed.

use std::path::PathBuf;

use super::error::{Error, Result};
use super::event::Event;
use super::id::SessionId;
use super::journal::{self, Journal};
use super::schema::{Body, JournalSigned};
use crate::git::{Repo, SshSigner};

/// The namespace of journal signatures: a signature made for a commit or a file never
/// passes for one of these.
pub const NAMESPACE: &str = "git-bmad-journal";

/// The committed file of the keys this repository trusts, read from protected branches.
pub const ALLOWED_SIGNERS: &str = ".bmad/allowed_signers";

/// This clone's own key, under the common git dir.
const KEY_FILE: &str = "bmad/signing/id_ed25519";

/// The git config key naming this clone of the repository (local config: every clone has
/// its own).
const CLONE_ID_KEY: &str = "bmad.cloneId";

/// This clone's id, if it has one yet.
pub fn clone_id(repo: &Repo) -> Option<String> {
    repo.config_string(CLONE_ID_KEY)
}

/// This clone's id, made when it has none yet: the time and six random hex digits, in
/// the form of a session id.
pub fn ensure_clone_id(repo: &Repo) -> Result<String> {
    if let Some(id) = clone_id(repo) {
        return Ok(id);
    }
    // Written since this process read its config: git's word, not the cached one.
    if let Some((_, id)) = repo.config_scope(CLONE_ID_KEY)? {
        return Ok(id);
    }
    let id = SessionId::generate(crate::time::Timestamp::now()).to_string();
    repo.add_local_config(CLONE_ID_KEY, &id)?;
    Ok(id)
}

/// The key this clone signs with.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OwnKey {
    /// The private key file.
    pub path: PathBuf,
    /// Its public key, `<type> <base64>`.
    pub public: String,
    /// The name it goes by in an allowed-signers line.
    pub principal: String,
    /// Whether it is `user.signingKey` (else this clone's own).
    pub user_key: bool,
}

impl OwnKey {
    /// The line another clone's [`ALLOWED_SIGNERS`] needs to trust this one.
    pub fn allowed_signers_line(&self) -> String {
        format!("{} {}", self.principal, self.public)
    }
}

fn signer(repo: &Repo) -> Result<SshSigner> {
    Ok(SshSigner::find(
        repo.config_string("gpg.ssh.program").as_deref(),
    )?)
}

/// This clone's signing key; made (with its clone id) when `make` and there is none yet.
pub fn own_key(repo: &Repo, make: bool) -> Result<Option<OwnKey>> {
    let signer = signer(repo)?;
    // As git takes it: a private key file, or a public one whose private half is beside it
    // or held by ssh-agent.
    let user_key = repo
        .config_string("gpg.format")
        .filter(|f| f == "ssh")
        .and_then(|_| repo.config_string("user.signingKey"))
        .filter(|k| !k.starts_with("key::"))
        .map(|k| expand_home(&k))
        .filter(|p| p.is_file());
    let (path, is_user_key) = match user_key {
        Some(path) => (path, true),
        None => {
            let path = repo.common_dir().join(KEY_FILE);
            if !path.is_file() {
                if !make {
                    return Ok(None);
                }
                let clone = ensure_clone_id(repo)?;
                signer.generate(&path, &format!("git-bmad clone {clone}"))?;
            }
            (path, false)
        }
    };
    let public = signer.public_key(&path)?;
    // A private key with its `.pub` beside it signs without the agent.
    let path = match path.extension() {
        Some(ext) if ext == "pub" && path.with_extension("").is_file() => path.with_extension(""),
        _ => path,
    };
    let principal = match repo.config_string("user.email") {
        Some(email) if !email.trim().is_empty() && !email.contains(char::is_whitespace) => email,
        _ => format!("clone-{}@git-bmad", ensure_clone_id(repo)?),
    };
    Ok(Some(OwnKey {
        path,
        public,
        principal,
        user_key: is_user_key,
    }))
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The keys this clone trusts, as one allowed-signers text, and where each part came from.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AllowedSigners {
    /// The lines, in git's `allowedSignersFile` format.
    pub text: String,
    /// Where they came from (`main:.bmad/allowed_signers`, a file, `this clone`).
    pub sources: Vec<String>,
    /// How many keys in all.
    pub keys: usize,
    /// Whether this clone's own key is among them.
    pub own: bool,
}

/// The allowed signers: the committed file on `main`/`master`, the user's
/// `gpg.ssh.allowedSignersFile`, and this clone's own key.
pub fn allowed_signers(repo: &Repo) -> Result<AllowedSigners> {
    let mut allowed = AllowedSigners::default();
    let mut add = |text: &str, source: String| {
        let keys = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .count();
        if keys > 0 {
            allowed.text.push_str(text);
            if !text.ends_with('\n') {
                allowed.text.push('\n');
            }
            allowed.keys += keys;
            allowed.sources.push(source);
        }
    };
    for (source, bytes) in reviewed_files(repo, ALLOWED_SIGNERS)? {
        add(&String::from_utf8_lossy(&bytes), source);
    }
    if let Some(file) = repo.config_string("gpg.ssh.allowedSignersFile") {
        let path = expand_home(&file);
        if let Ok(text) = std::fs::read_to_string(&path) {
            add(&text, path.display().to_string());
        }
    }
    if let Some(key) = own_key(repo, false)? {
        add(&key.allowed_signers_line(), "this clone".into());
        allowed.own = true;
    }
    Ok(allowed)
}

/// The file at `path` as each branch that changes only through review commits it: the
/// protected branches (`main`, `master`, then `policy.protected_branches`), where it exists.
pub fn reviewed_files(repo: &Repo, path: &str) -> Result<Vec<(String, Vec<u8>)>> {
    // A config that does not load protects the built-in branches still.
    let branches = super::load_config(repo)
        .unwrap_or_default()
        .protected_refs();
    let mut found = Vec::new();
    for branch in branches {
        if let Some(bytes) = repo.file_at(&branch, path)? {
            let short = branch.strip_prefix("refs/heads/").unwrap_or(&branch);
            found.push((format!("{short}:{path}"), bytes));
        }
    }
    Ok(found)
}

/// A unified diff from text `from` to text `to`, its sides named by the labels (empty when
/// they are the same).
pub fn diff_texts(repo: &Repo, from: (&str, &str), to: (&str, &str)) -> Result<String> {
    let (from_id, to_id) = (
        repo.write_blob(from.0.as_bytes())?,
        repo.write_blob(to.0.as_bytes())?,
    );
    Ok(repo.diff_blobs((from_id, from.1), (to_id, to.1))?)
}

/// The one step that makes another machine's pushed journals count here.
pub fn how_to_trust() -> String {
    format!(
        "to trust another machine: run `git bmad trust show` there, add the line it prints to \
         {ALLOWED_SIGNERS} on main through review, pull main here, then git bmad sync"
    )
}

/// `doctor`'s word on a journal holding copies no allowed signer vouched for: the warning
/// and its fix.
pub(super) fn untrusted_warning(journal: &Journal) -> Option<(String, String)> {
    let untrusted: Vec<&Event> = journal.untrusted().collect();
    let first = untrusted.first()?;
    Some((
        format!(
            "{} event(s) of the journal are copies {}: no allowed signer vouched for them, so \
             they are shown and never acted on",
            untrusted.len(),
            first.untrusted_note()
        ),
        how_to_trust(),
    ))
}

/// `doctor`'s word on sessions that travel to a remote while no other machine's key is
/// trusted (what comes back from there would be shown and never acted on): the warning
/// and its fix.
pub(super) fn untrusting_warning(repo: &Repo) -> Result<Option<(String, String)>> {
    let travel: Vec<String> = repo
        .config_entries("^bmad\\..*\\.pushsessions$")?
        .into_iter()
        .filter(|(_, _, value)| value.eq_ignore_ascii_case("true"))
        .map(|(_, key, _)| key)
        .collect();
    let Some(key) = travel.first() else {
        return Ok(None);
    };
    let allowed = allowed_signers(repo)?;
    if allowed.keys > usize::from(allowed.own) {
        return Ok(None);
    }
    Ok(Some((
        format!(
            "sessions travel ({key}), but this repository trusts no other machine's key: what \
             another machine pushes is shown here and never acted on"
        ),
        how_to_trust(),
    )))
}

/// What a signature of session `id`'s chain signs.
fn payload(id: &SessionId, chain: &str) -> Vec<u8> {
    format!("git-bmad journal 1\nsession {id}\nchain {chain}\n").into_bytes()
}

/// Sign this clone's journal of `id` as it stands, unless its newest event already is this
/// clone's signature; the event written, if one was.
pub fn sign_journal(repo: &Repo, id: &SessionId) -> Result<Option<Event>> {
    let journal = journal::read(repo, id)?;
    let clone = ensure_clone_id(repo)?;
    if let Some(Body::JournalSigned(s)) = journal.entries.last().map(|e| &e.event.body) {
        if s.clone == clone {
            return Ok(None);
        }
    }
    let key = own_key(repo, true)?.ok_or_else(|| Error::InvalidInput("no signing key".into()))?;
    let signature = signer(repo)?.sign(&key.path, NAMESPACE, &payload(id, &journal.chain))?;
    let event = journal::append(
        repo,
        id,
        super::NewEvent::new(Body::JournalSigned(JournalSigned {
            clone,
            key: key.public,
            chain: journal.chain.clone(),
            signature,
        })),
    )?;
    Ok(Some(event))
}

/// How many signatures of another journal are checked, newest first, before its events are
/// left unvouched: a remote cannot make a sync spawn a verifier per junk signature.
const MAX_VERIFIED: usize = 16;

/// Who vouched for an entry of another clone's journal: the allowed signer, and the clone
/// its signature says it signed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voucher {
    /// The principal of its allowed-signers line.
    pub principal: String,
    /// The clone that signed.
    pub clone: String,
}

/// For another clone's journal: who vouched for each entry, in the order of
/// [`Journal::entries`] (`None`: no valid signature covers it, so nobody can say who wrote
/// it). The newest valid signature covers everything before the chain value it signs.
pub fn vouchers(
    journal: &Journal,
    id: &SessionId,
    allowed: &AllowedSigners,
    repo: &Repo,
) -> Result<Vec<Option<Voucher>>> {
    let mut out = vec![None; journal.entries.len()];
    if allowed.keys == 0 {
        return Ok(out);
    }
    // Where each chain value ends: a signature covers the entries up to its own.
    let ends: std::collections::HashMap<&str, usize> = journal
        .entries
        .iter()
        .enumerate()
        .map(|(n, e)| (e.link.as_str(), n + 1))
        .collect();
    let signatures = journal
        .entries
        .iter()
        .rev()
        .filter_map(|e| match &e.event.body {
            // A key no allowed line names cannot verify: no verifier is run for it.
            Body::JournalSigned(s) if allowed_key(allowed, &s.key) => {
                ends.get(s.chain.as_str()).map(|&covered| (s, covered))
            }
            _ => None,
        });
    let signer = signer(repo)?;
    for (signed, covered) in signatures.take(MAX_VERIFIED) {
        let principal = signer.verify(
            &allowed.text,
            NAMESPACE,
            &payload(id, &signed.chain),
            &signed.signature,
        )?;
        if let Some(principal) = principal {
            let voucher = Voucher {
                principal,
                clone: signed.clone.clone(),
            };
            for slot in &mut out[..covered] {
                *slot = Some(voucher.clone());
            }
            break;
        }
    }
    Ok(out)
}

/// Whether an allowed-signers line names this public key (`<type> <base64>`).
fn allowed_key(allowed: &AllowedSigners, key: &str) -> bool {
    let Some(blob) = key.split_whitespace().nth(1) else {
        return false;
    };
    allowed
        .text
        .lines()
        .any(|line| line.split_whitespace().any(|word| word == blob))
}
