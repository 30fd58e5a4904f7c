//! Which files of a stories folder are read: its Markdown files, with or without its
//! sub-folders, never an archive's or a spec folder's, in natural order.

use std::path::{Path, PathBuf};

/// The markdown files under a stories folder, `1-10-x` after `1-9-x`: with `sub_folders`,
/// those of its sub-folders too (`epic3/stories/3-1-x.md`), but never an archive's or a spec
/// folder's (read from its `stories.yaml`).
pub fn story_files(dir: &Path, sub_folders: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    let depth = if sub_folders { 0 } else { SUB_FOLDERS };
    collect_markdown(dir, depth, &mut paths)?;
    paths.sort_by_key(|p| natural_key(p));
    Ok(paths)
}

/// How deep story files are looked for under the stories folder (`epic3/stories/3-1-x.md`).
const SUB_FOLDERS: usize = 3;

/// The Markdown files under `dir`, [`SUB_FOLDERS`] deep at most below `depth`, skipping
/// hidden folders, archives and spec folders (a `stories.yaml` next to them).
fn collect_markdown(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().to_lowercase();
        // An archive holds what BMAD no longer reads: old copies of stories under their keys.
        let skipped = name.starts_with('.') || name.starts_with("archive") || name == "_archive";
        if kind.is_dir() {
            if depth < SUB_FOLDERS
                && !skipped
                && !path.join(super::spec_folder::STORIES_FILE).is_file()
            {
                // A sub-folder that cannot be read is skipped, not fatal.
                let _ = collect_markdown(&path, depth + 1, out);
            }
        } else if path.extension().is_some_and(|e| e == "md") && path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// `1-10-x` after `1-9-x`: digit runs compare as numbers.
fn natural_key(path: &Path) -> Vec<(u64, String)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut digits = String::new();
    let mut text = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !text.is_empty() {
                out.push((u64::MAX, std::mem::take(&mut text)));
            }
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
                digits.clear();
            }
            text.push(c);
        }
    }
    if !digits.is_empty() {
        out.push((digits.parse().unwrap_or(u64::MAX), String::new()));
    }
    if !text.is_empty() {
        out.push((u64::MAX, text));
    }
    out
}
