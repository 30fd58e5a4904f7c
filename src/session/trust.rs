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
//! The key: `user.signingKey` when `gpg.format` is `ssh`, else a key of this clone's own,
//! made the first time one is needed, in the user's key store (`env::key_store`, outside
//! every repository: a contained step reads its repository, and the walls hide the store
//! wherever it lies), in a folder named by the clone's id. A key an older git-bmad kept in
//! the repository (`<common git dir>/bmad/signing/`) moves there on the next command.

use std::path::{Path, PathBuf};

use super::error::{Error, Result};
use super::event::Event;
use super::id::{clone_id, ensure_clone_id, SessionId};
use super::journal::{self, Journal};
use super::schema::{Body, JournalSigned};
use crate::git::{Precheck, Repo, SshSigner};

/// The namespace of journal signatures: a signature made for a commit or a file never
/// passes for one of these.
pub const NAMESPACE: &str = "git-bmad-journal";

/// The committed file of the keys this repository trusts, read from protected branches.
pub const ALLOWED_SIGNERS: &str = ".bmad/allowed_signers";

/// Where an older git-bmad kept this clone's key, under the common git dir, in reach of
/// every step that reads the repository: moved to the key store by [`move_legacy_key`].
const LEGACY_KEY_DIR: &str = "bmad/signing";

/// The key's file name, in the store's folder of its clone (and in the legacy folder).
const KEY_NAME: &str = "id_ed25519";

/// The largest key file read when one is moved (an ed25519 key is about 400 bytes).
const KEY_FILE_LIMIT: u64 = 64 * 1024;

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
pub fn own_key(repo: &super::Repo, make: bool) -> Result<Option<OwnKey>> {
    let repo = &repo.git;
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
            move_legacy_key(repo)?;
            let clone = match (make, clone_id(repo)) {
                (_, Some(clone)) => clone,
                (true, None) => ensure_clone_id(super::Repo::of(repo))?,
                (false, None) => return Ok(None),
            };
            let path = clone_key_path(&clone)?;
            if !path.is_file() {
                if !make {
                    return Ok(None);
                }
                make_private_dirs(&path)?;
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
        _ => format!("clone-{}@git-bmad", ensure_clone_id(super::Repo::of(repo))?),
    };
    Ok(Some(OwnKey {
        path,
        public,
        principal,
        user_key: is_user_key,
    }))
}

/// The files of the signing key the user configured (`user.signingKey`, with `gpg.format`
/// `ssh`), private half and public: no step may read them, wherever they lie (a runner's
/// key under its work folder, say). This clone's own key is in the key store, which every
/// wall hides already.
pub fn key_files(repo: &Repo) -> Vec<PathBuf> {
    let Some(key) = repo
        .config_string("user.signingKey")
        .filter(|k| !k.starts_with("key::") && !k.trim().is_empty())
        .map(|k| expand_home(&k))
    else {
        return Vec::new();
    };
    let private = match key.extension() {
        Some(ext) if ext == "pub" => key.with_extension(""),
        _ => key.clone(),
    };
    let mut public = private.as_os_str().to_owned();
    public.push(".pub");
    [private, PathBuf::from(public)]
        .into_iter()
        .filter(|p| p.is_file())
        .collect()
}

/// Where clone `clone`'s own key lives: its folder of the key store.
fn clone_key_path(clone: &str) -> Result<PathBuf> {
    // The id names a folder: only what a clone id is made of.
    if clone.is_empty() || !clone.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(Error::InvalidInput(format!(
            "git config bmad.cloneId is {clone:?}, which is not a clone id: remove it \
             (`git config --unset bmad.cloneId`) and a new one is made"
        )));
    }
    let store = crate::env::key_store().ok_or_else(|| {
        Error::InvalidInput(
            "there is no place for this clone's signing key outside the repository: set HOME \
             (or XDG_CONFIG_HOME) to an absolute path, or sign with your own key \
             (`git config gpg.format ssh` and `git config user.signingKey <key>`)"
                .into(),
        )
    })?;
    Ok(store.join(clone).join(KEY_NAME))
}

/// The folders above a key, made readable by the user alone.
fn make_private_dirs(key: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let io = |dir: &Path, e| Error::io("cannot make the key store folder", dir, e);
    let Some(dir) = key.parent() else {
        return Ok(());
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io(dir, e))?;
    // The store's own folder too: it lists the clones.
    for folder in [Some(dir), dir.parent()].into_iter().flatten() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io(folder, e))?;
    }
    Ok(())
}

/// Move a key an older git-bmad kept in the repository to the key store, so that no step
/// that reads the repository reads it; nothing to do when there is none. Safe to kill at any
/// instant: the store's copy is complete before the repository's is removed, and a second
/// run finishes what a killed one began.
pub fn move_legacy_key(repo: &Repo) -> Result<()> {
    let legacy = repo.common_dir().join(LEGACY_KEY_DIR);
    if std::fs::symlink_metadata(&legacy).is_err() {
        return Ok(());
    }
    let clone = ensure_clone_id(super::Repo::of(repo))?;
    let target = clone_key_path(&clone)?;
    let from = legacy.join(KEY_NAME);
    let from_pub = legacy.join(format!("{KEY_NAME}.pub"));
    if !target.is_file() {
        // Only a plain file of a key's size is taken: what stands there otherwise (a link,
        // a fifo) is not read.
        let Some(private) = read_plain(&from) else {
            return remove_legacy(&legacy);
        };
        make_private_dirs(&target)?;
        let write = |path: &Path, bytes: &[u8], mode| {
            crate::fs::write_atomically(path, bytes, Some(mode))
                .map_err(|e| Error::io("cannot write the signing key", path, e))
        };
        if let Some(public) = read_plain(&from_pub) {
            write(&target.with_extension("pub"), &public, 0o644)?;
        }
        // Last: a private key in the store marks the move done.
        write(&target, &private, 0o600)?;
        tracing::info!(
            "moved this clone's signing key from {} to {}",
            legacy.display(),
            target.display()
        );
    }
    remove_legacy(&legacy)
}

/// A plain file's bytes, when it is one of at most a key file's size.
fn read_plain(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > KEY_FILE_LIMIT {
        return None;
    }
    std::fs::read(path).ok()
}

fn remove_legacy(legacy: &Path) -> Result<()> {
    let removed = match std::fs::symlink_metadata(legacy) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(legacy),
        Ok(_) => std::fs::remove_file(legacy),
        Err(_) => Ok(()),
    };
    removed.map_err(|e| Error::io("cannot remove the old signing key folder", legacy, e))
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), crate::env::Var::Home.os()) {
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
    for (source, bytes) in reviewed_files(super::Repo::of(repo), ALLOWED_SIGNERS)? {
        add(&String::from_utf8_lossy(&bytes), source);
    }
    if let Some(file) = repo.config_string("gpg.ssh.allowedSignersFile") {
        let path = expand_home(&file);
        if let Ok(text) = std::fs::read_to_string(&path) {
            add(&text, path.display().to_string());
        }
    }
    if let Some(key) = own_key(super::Repo::of(repo), false)? {
        add(&key.allowed_signers_line(), "this clone".into());
        allowed.own = true;
    }
    Ok(allowed)
}

/// The file at `path` as each branch that changes only through review commits it
/// ([`reviewed_branches`]), where it exists, each read at its [`reviewed_tip`].
pub fn reviewed_files(repo: &super::Repo, path: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let repo = &repo.git;
    let mut found = Vec::new();
    for branch in reviewed_branches(repo)? {
        if let Some(bytes) = repo.file_at(&reviewed_tip(repo, &branch)?, path)? {
            let short = branch.strip_prefix("refs/heads/").unwrap_or(&branch);
            found.push((format!("{short}:{path}"), bytes));
        }
    }
    Ok(found)
}

/// The branches whose commits count as reviewed: `main`, `master` and the remote's default
/// branch, then the `policy.protected_branches` that `.bmad/config.yaml` names as those
/// branches commit it. Never as a checkout, a worktree or a branch under review holds it: a
/// pull request that names its own branch protected, checked out to be read, gains nothing.
pub fn reviewed_branches(repo: &Repo) -> Result<Vec<String>> {
    let mut anchors: Vec<String> = crate::config::ALWAYS_PROTECTED
        .iter()
        .map(|b| format!("refs/heads/{b}"))
        .collect();
    // A project whose default branch is `trunk` has it as the remote says.
    for remote in repo.remote_names() {
        let head = format!("refs/remotes/{remote}/HEAD");
        let prefix = format!("refs/remotes/{remote}/");
        if let Some(short) = repo
            .symbolic_target(&head)?
            .and_then(|t| t.strip_prefix(&prefix).map(str::to_owned))
        {
            anchors.push(format!("refs/heads/{short}"));
        }
    }
    anchors.dedup();
    let mut branches = anchors.clone();
    for anchor in &anchors {
        let Some(text) = repo.file_at(&reviewed_tip(repo, anchor)?, crate::config::CONFIG_PATH)?
        else {
            continue;
        };
        let path = Path::new(crate::config::CONFIG_PATH);
        // A committed config that does not load names no more branches.
        if let Ok(config) = crate::config::Config::parse(&String::from_utf8_lossy(&text), path) {
            branches.extend(config.protected_refs());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    branches.retain(|b| seen.insert(b.clone()));
    Ok(branches)
}

/// Where a reviewed branch is read: its copy from its remote once fetched (what review let
/// through there), else the branch here.
pub fn reviewed_tip(repo: &Repo, branch: &str) -> Result<String> {
    let short = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    let remote = repo
        .config_string(&format!("branch.{short}.remote"))
        .filter(|r| r != ".")
        .unwrap_or_else(|| "origin".to_owned());
    let tracking = format!("refs/remotes/{remote}/{short}");
    Ok(match repo.read_ref(&tracking)? {
        Some(_) => tracking,
        None => branch.to_owned(),
    })
}

/// A unified diff from text `from` to text `to`, its sides named by the labels (empty when
/// they are the same).
pub fn diff_texts(repo: &super::Repo, from: (&str, &str), to: (&str, &str)) -> Result<String> {
    let repo = &repo.git;
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
    let clone = ensure_clone_id(super::Repo::of(repo))?;
    let mut signed = None;
    // An event a run appends while the signature is made lands before it, uncovered: the
    // journal is signed again until its signature covers everything before it.
    for _ in 0..SIGN_ATTEMPTS {
        let journal = journal::read(super::Repo::of(repo), id)?;
        if signed_to_its_end(&journal, &clone) {
            break;
        }
        let key = own_key(super::Repo::of(repo), true)?
            .ok_or_else(|| Error::InvalidInput("no signing key".into()))?;
        let signature = signer(repo)?.sign(&key.path, NAMESPACE, &payload(id, &journal.chain))?;
        signed = Some(journal::append(
            repo,
            id,
            super::NewEvent::new(Body::JournalSigned(JournalSigned {
                clone: clone.clone(),
                key: key.public,
                chain: journal.chain.clone(),
                signature,
            })),
        )?);
    }
    Ok(signed)
}

/// How often a journal is signed in one go while a run keeps appending to it.
const SIGN_ATTEMPTS: usize = 3;

/// Whether the journal ends in this clone's signature of everything before it.
fn signed_to_its_end(journal: &journal::Journal, clone: &str) -> bool {
    match journal.entries.as_slice() {
        [.., before, last] => matches!(
            &last.event.body,
            Body::JournalSigned(s) if s.clone == clone && s.chain == before.link
        ),
        _ => false,
    }
}

/// How many signatures of one allowed key that cannot be checked in-process (not ed25519)
/// the verifier is run on, newest first: a remote cannot make a sync spawn a process per
/// junk signature. Junk that names an ed25519 key, or a key other than the one that made
/// it, costs no process and is not counted (see [`crate::git::precheck`]).
const MAX_VERIFIED_PER_KEY: usize = 4;

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
    // Each allowed key is judged on its own signatures: junk naming one key never uses up
    // another's turn, and junk the precheck refutes uses up nothing.
    let mut unchecked: std::collections::HashMap<&str, usize> = Default::default();
    for (signed, covered) in signatures {
        let data = payload(id, &signed.chain);
        match crate::git::precheck(&signed.key, NAMESPACE, &data, &signed.signature) {
            Precheck::Refuted => continue,
            Precheck::Verified => {}
            Precheck::Unchecked => {
                let tries = unchecked.entry(signed.key.as_str()).or_default();
                if *tries >= MAX_VERIFIED_PER_KEY {
                    continue;
                }
                *tries += 1;
            }
        }
        // The verifier stays the authority: the allowed line's principal and options.
        let principal = signer.verify(&allowed.text, NAMESPACE, &data, &signed.signature)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::ObjectId;

    /// Entries with these links; `signed` (clone, chain) makes the last one a signature.
    fn journal(links: &[&str], signed: (&str, &str)) -> journal::Journal {
        let event = |seq: usize, body: &str| -> Event {
            serde_json::from_str(&format!(
                "{{\"seq\":{seq},\"ts\":\"2026-12-06T00:00:00Z\",\"session\":\"20261206-000000-abcdef\",{body}}}"
            ))
            .unwrap()
        };
        let mut entries: Vec<journal::JournalEntry> = links
            .iter()
            .enumerate()
            .map(|(n, link)| journal::JournalEntry {
                event: event(n + 1, "\"event\":\"run_interrupted\""),
                checkpoint: ObjectId::from_hex(&[b'0'; 40]).unwrap(),
                id: link.to_string(),
                link: link.to_string(),
            })
            .collect();
        let (clone, chain) = signed;
        let body = format!("\"event\":\"journal_signed\",\"detail\":{{\"clone\":\"{clone}\",\"key\":\"k\",\"chain\":\"{chain}\",\"signature\":\"s\"}}");
        entries.push(journal::JournalEntry {
            event: event(links.len() + 1, &body),
            checkpoint: ObjectId::from_hex(&[b'0'; 40]).unwrap(),
            id: "sig".into(),
            link: "sig".into(),
        });
        journal::Journal {
            entries,
            ..journal::Journal::default()
        }
    }

    #[test]
    fn a_signature_covers_the_journal_only_up_to_the_chain_it_signed() {
        assert!(signed_to_its_end(&journal(&["a", "b"], ("me", "b")), "me"));
        // An event appended while the signature was made sits before it, uncovered.
        assert!(!signed_to_its_end(&journal(&["a", "b"], ("me", "a")), "me"));
        // Another clone's signature vouches for nothing of this one's.
        assert!(!signed_to_its_end(
            &journal(&["a", "b"], ("them", "b")),
            "me"
        ));
    }
}
