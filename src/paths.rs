//! Paths named by the patterns people write in story files and playbooks (`touches`,
//! bookkeeping lists): a path, a directory above it, or a wildcard pattern.

/// A pattern without its `./` and trailing `/`.
pub fn trimmed(entry: &str) -> &str {
    entry.trim_start_matches("./").trim_end_matches('/')
}

/// `entry` names `path`: it is the path, a directory above it, or a pattern (`*`, `?`, which
/// match across `/` too) that matches it.
pub fn names(entry: &str, path: &str) -> bool {
    let entry = trimmed(entry);
    let path = trimmed(path);
    if entry.contains(['*', '?']) {
        return wildcard(entry.as_bytes(), path.as_bytes());
    }
    path == entry || path.starts_with(&format!("{entry}/"))
}

/// `*` any run, `?` one byte; iterative with one backtrack point, so linear-ish.
pub fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard(b"*prd*.md", b"my-prd-v2.md"));
        assert!(wildcard(b"epic-?.md", b"epic-1.md"));
        assert!(!wildcard(b"*prd*.md", b"prd.txt"));
        assert!(wildcard(b"*", b""));
        assert!(!wildcard(b"a*b*c", b"aXbX"));
    }

    #[test]
    fn an_entry_names_its_path_the_paths_below_it_and_what_its_pattern_matches() {
        assert!(names("src/api", "src/api/client.rs"));
        assert!(names("./src/api/", "src/api"));
        assert!(!names("src/api", "src/apis/x.rs"));
        assert!(names(
            "*/sprint-status.yaml",
            "_bmad-output/sprint-status.yaml"
        ));
        assert!(!names("docs/*.md", "src/docs/a.md"));
    }
}
