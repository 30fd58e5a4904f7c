//! SSH signatures, as git makes them for `gpg.format ssh`: `ssh-keygen -Y sign` with a
//! namespace, checked with `ssh-keygen -Y verify` against a file in git's
//! `allowedSignersFile` format (`<principal> [options] <key type> <key>` a line).
//!
//! The program is git's own choice (`gpg.ssh.program`, else `ssh-keygen` on `PATH`). Every
//! call gets a cleared environment and no terminal input; signing alone keeps the ssh-agent
//! socket, for a `user.signingKey` whose private half the agent holds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::{Error, Result};

/// The program that signs and verifies.
#[derive(Clone, Debug)]
pub struct SshSigner {
    program: PathBuf,
}

impl SshSigner {
    /// `program` (git's `gpg.ssh.program`) or `ssh-keygen` on `PATH`.
    pub fn find(program: Option<&str>) -> Result<SshSigner> {
        let name = program.unwrap_or("ssh-keygen");
        let program = which::which(name).map_err(|_| Error::Signing {
            what: format!("{name} was not found on PATH (Debian: apt-get install openssh-client)"),
        })?;
        Ok(SshSigner { program })
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear()
            .env("PATH", crate::env::Var::Path.os().unwrap_or_default())
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn run(&self, mut cmd: Command, input: Option<&[u8]>, what: &str) -> Result<Vec<u8>> {
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().map_err(|e| Error::Signing {
            what: format!("{what}: cannot run {}: {e}", self.program.display()),
        })?;
        if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
            // A verifier that exits early closes its end: its exit status says why.
            let _ = stdin.write_all(data);
        }
        let out = child.wait_with_output().map_err(|e| Error::Signing {
            what: format!("{what}: {e}"),
        })?;
        if !out.status.success() {
            return Err(Error::Signing {
                what: format!(
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                        .trim()
                        .lines()
                        .next()
                        .unwrap_or("failed")
                ),
            });
        }
        Ok(out.stdout)
    }

    /// Make a passphrase-less ed25519 key at `path` (and `path.pub`), private to the user.
    pub fn generate(&self, path: &Path, comment: &str) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Signing {
                what: format!("cannot make {}: {e}", dir.display()),
            })?;
        }
        // Made aside and linked into place, which fails if a key is there: two processes
        // making the key at once (an epic's first stories) agree on the first one's.
        let dir = path.parent().unwrap_or(Path::new("."));
        let fail = |what: String| Error::Signing { what };
        let aside = tempfile::Builder::new()
            .prefix(".keygen-")
            .tempdir_in(dir)
            .map_err(|e| fail(format!("cannot make a folder in {}: {e}", dir.display())))?;
        let made = aside.path().join("key");
        let mut cmd = self.command();
        cmd.args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
            .arg(&made);
        self.run(cmd, None, "making a signing key")?;
        match std::fs::hard_link(&made, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            // A file system without hard links: moved, unless a key came meanwhile.
            Err(_) if path.exists() => return Ok(()),
            Err(_) => std::fs::rename(&made, path)
                .map_err(|e| fail(format!("cannot put the key at {}: {e}", path.display())))?,
        }
        let mut public = path.as_os_str().to_owned();
        public.push(".pub");
        std::fs::rename(aside.path().join("key.pub"), &public).map_err(|e| {
            fail(format!(
                "cannot put the public key beside {}: {e}",
                path.display()
            ))
        })
    }

    /// The public key of the key at `path` (`<type> <base64>`, no comment): the file itself
    /// when it is the public half, its `.pub` beside it, else derived from the private key.
    pub fn public_key(&self, path: &Path) -> Result<String> {
        let mut beside = path.as_os_str().to_owned();
        beside.push(".pub");
        let text = match [path, Path::new(&beside)]
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "pub"))
            .find_map(|p| std::fs::read_to_string(p).ok())
        {
            Some(text) => text,
            None => {
                let mut cmd = self.command();
                cmd.arg("-y").arg("-f").arg(path);
                let out = self.run(cmd, None, "reading the signing key")?;
                String::from_utf8_lossy(&out).into_owned()
            }
        };
        let mut words = text.split_whitespace();
        match (words.next(), words.next()) {
            (Some(kind), Some(key)) => Ok(format!("{kind} {key}")),
            _ => Err(Error::Signing {
                what: format!("{} holds no public key", path.display()),
            }),
        }
    }

    /// An armored SSH signature of `data` by the key at `key`, in `namespace`: a private key
    /// file, or a public one whose private half ssh-agent holds (the one variable let through).
    pub fn sign(&self, key: &Path, namespace: &str, data: &[u8]) -> Result<String> {
        let mut cmd = self.command();
        if let Some(agent) = crate::env::Var::SshAuthSock.os() {
            cmd.env("SSH_AUTH_SOCK", agent);
        }
        cmd.args(["-Y", "sign", "-n", namespace, "-f"]).arg(key);
        let out = self.run(cmd, Some(data), "signing")?;
        String::from_utf8(out).map_err(|_| Error::Signing {
            what: "the signature is not text".into(),
        })
    }

    /// The principal of `allowed_signers` (the file's text) whose key made `signature` of
    /// `data` in `namespace`; `None` when no allowed key did, or the signature is bad.
    pub fn verify(
        &self,
        allowed_signers: &str,
        namespace: &str,
        data: &[u8],
        signature: &str,
    ) -> Result<Option<String>> {
        if !signature.starts_with("-----BEGIN SSH SIGNATURE-----") {
            return Ok(None);
        }
        let dir = tempfile::tempdir().map_err(|e| Error::Signing {
            what: format!("a temporary directory: {e}"),
        })?;
        let allowed = dir.path().join("allowed_signers");
        let sig = dir.path().join("signature");
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text).map_err(|e| Error::Signing {
                what: format!("{}: {e}", path.display()),
            })
        };
        write(&allowed, allowed_signers)?;
        write(&sig, signature)?;
        let mut find = self.command();
        find.args(["-Y", "find-principals", "-f"])
            .arg(&allowed)
            .arg("-s")
            .arg(&sig);
        let principals = match self.run(find, None, "finding the signer") {
            Ok(out) => String::from_utf8_lossy(&out).into_owned(),
            // No allowed key made it (or it is no signature at all).
            Err(_) => return Ok(None),
        };
        for principal in principals.lines().map(str::trim).filter(|p| !p.is_empty()) {
            let mut verify = self.command();
            verify
                .args(["-Y", "verify", "-n", namespace, "-f"])
                .arg(&allowed)
                .args(["-I", principal, "-s"])
                .arg(&sig);
            if self.run(verify, Some(data), "verifying").is_ok() {
                return Ok(Some(principal.to_owned()));
            }
        }
        Ok(None)
    }
}

/// What can be told of an SSH signature in-process, before the verifier is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precheck {
    /// Not a signature by this key of this data in this namespace (another key made it, it
    /// names another namespace, its bytes do not verify, or it is no signature at all).
    Refuted,
    /// Made by this key, of this data, in this namespace: ed25519's check passed here.
    Verified,
    /// Made with this key's public half, of a kind not checked here: the verifier must say.
    Unchecked,
}

/// Whether `signature` (armored) is `public`'s (`<type> <base64>`) of `data` in
/// `namespace`, as far as can be told without a process: the key the signature carries must
/// be the one named, and an ed25519 signature is checked in full. A forged signature that
/// names a trusted key then costs nothing to refuse.
pub fn precheck(public: &str, namespace: &str, data: &[u8], signature: &str) -> Precheck {
    // A key of a kind this reader does not know: the verifier must say.
    let Ok(key) = ssh_key::PublicKey::from_openssh(public.trim()) else {
        return Precheck::Unchecked;
    };
    // Any signature this key made reads here, as its kind does.
    let Ok(sig) = ssh_key::SshSig::from_pem(signature.trim()) else {
        return Precheck::Refuted;
    };
    if sig.public_key() != key.key_data() || sig.namespace() != namespace {
        return Precheck::Refuted;
    }
    if key.algorithm() != ssh_key::Algorithm::Ed25519 {
        return Precheck::Unchecked;
    }
    match key.verify(namespace, data, &sig) {
        Ok(()) => Precheck::Verified,
        Err(_) => Precheck::Refuted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_for_its_principal_only_over_the_same_data() {
        let Ok(signer) = SshSigner::find(None) else {
            panic!("ssh-keygen is required (openssh-client)");
        };
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        signer.generate(&a, "a").unwrap();
        signer.generate(&b, "b").unwrap();
        let allowed = format!("alice {}\n", signer.public_key(&a).unwrap());
        let sig = signer.sign(&a, "git-bmad", b"chain 1").unwrap();
        assert_eq!(
            signer
                .verify(&allowed, "git-bmad", b"chain 1", &sig)
                .unwrap(),
            Some("alice".into())
        );
        // Other data, another namespace, another key, no signature at all: nobody.
        assert_eq!(
            signer
                .verify(&allowed, "git-bmad", b"chain 2", &sig)
                .unwrap(),
            None
        );
        assert_eq!(
            signer.verify(&allowed, "git", b"chain 1", &sig).unwrap(),
            None
        );
        let by_b = signer.sign(&b, "git-bmad", b"chain 1").unwrap();
        assert_eq!(
            signer
                .verify(&allowed, "git-bmad", b"chain 1", &by_b)
                .unwrap(),
            None
        );
        assert_eq!(
            signer
                .verify(&allowed, "git-bmad", b"chain 1", "forged")
                .unwrap(),
            None
        );
        assert_eq!(
            signer.verify("", "git-bmad", b"chain 1", &sig).unwrap(),
            None
        );
    }

    #[test]
    fn the_precheck_refutes_what_the_verifier_would_and_passes_what_it_would() {
        let Ok(signer) = SshSigner::find(None) else {
            panic!("ssh-keygen is required (openssh-client)");
        };
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        signer.generate(&a, "a").unwrap();
        signer.generate(&b, "b").unwrap();
        let (pub_a, pub_b) = (
            signer.public_key(&a).unwrap(),
            signer.public_key(&b).unwrap(),
        );
        let sig = signer.sign(&a, "git-bmad", b"chain 1").unwrap();
        assert_eq!(
            precheck(&pub_a, "git-bmad", b"chain 1", &sig),
            Precheck::Verified
        );
        // Named as another's key, over other data, in another namespace: refuted.
        assert_eq!(
            precheck(&pub_b, "git-bmad", b"chain 1", &sig),
            Precheck::Refuted
        );
        assert_eq!(
            precheck(&pub_a, "git-bmad", b"chain 2", &sig),
            Precheck::Refuted
        );
        assert_eq!(precheck(&pub_a, "git", b"chain 1", &sig), Precheck::Refuted);
        assert_eq!(
            precheck(&pub_a, "git-bmad", b"chain 1", "junk"),
            Precheck::Refuted
        );
        // A key that does not read is the verifier's to judge.
        assert_eq!(
            precheck("ssh-ed25519 junk", "git-bmad", b"chain 1", &sig),
            Precheck::Unchecked
        );
        // The key a signature carries, with another signature's bytes: refuted too.
        let by_b = signer.sign(&b, "git-bmad", b"chain 1").unwrap();
        let mut lines: Vec<&str> = sig.lines().collect();
        let theirs: Vec<&str> = by_b.lines().collect();
        let last = lines.len() - 2;
        lines[last] = theirs[theirs.len() - 2];
        let spliced = lines.join("\n");
        assert_ne!(
            precheck(&pub_a, "git-bmad", b"chain 1", &spliced),
            Precheck::Verified
        );
        // A key of a kind not checked here, carried by its own signature: the verifier says.
        let rsa = dir.path().join("r");
        let mut cmd = std::process::Command::new("ssh-keygen");
        cmd.args(["-q", "-t", "ecdsa", "-N", "", "-f"]).arg(&rsa);
        assert!(cmd.status().unwrap().success());
        let pub_r = signer.public_key(&rsa).unwrap();
        let by_r = signer.sign(&rsa, "git-bmad", b"chain 1").unwrap();
        assert_eq!(
            precheck(&pub_r, "git-bmad", b"chain 1", &by_r),
            Precheck::Unchecked
        );
        assert_eq!(
            precheck(&pub_a, "git-bmad", b"chain 1", &by_r),
            Precheck::Refuted
        );
    }
}
