//! The `Change Log` section of a BMAD document: every status change is signed there, in the
//! section's own shape (a table row or a list item), and nothing else is touched.

/// One signed entry.
pub(super) struct ChangeEntry {
    /// When, as the file writes dates.
    pub when: String,
    /// What changed.
    pub what: String,
    /// Who signed.
    pub by: String,
}

/// Append an entry to the `Change Log` section (a table row when it is a table, else a list
/// item), or add the section at the end.
pub(super) fn append_change_log(text: &str, entry: &ChangeEntry) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let heading = lines.iter().position(|l| {
        let t = l.trim_end().trim_start_matches('#').trim();
        l.starts_with("##") && t.eq_ignore_ascii_case("change log")
    });
    let Some(h) = heading else {
        let mut out = text.to_owned();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "\n## Change Log\n\n- {} {} (by {})\n",
            entry.when, entry.what, entry.by
        ));
        return out;
    };
    let level = lines[h].chars().take_while(|c| *c == '#').count();
    let end = lines[h + 1..]
        .iter()
        .position(|l| l.starts_with('#') && l.chars().take_while(|c| *c == '#').count() <= level)
        .map_or(lines.len(), |i| h + 1 + i);
    let last = (h + 1..end).rev().find(|i| !lines[*i].trim().is_empty());
    let table_header = (h + 1..end).find(|i| lines[*i].trim_start().starts_with('|'));
    let new_line = match (table_header, last) {
        (Some(header), Some(_)) => {
            let cells: Vec<String> = lines[header]
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_ascii_lowercase())
                .collect();
            let row: Vec<String> = cells
                .iter()
                .map(|c| match c.as_str() {
                    "date" | "when" | "time" => entry.when.clone(),
                    "author" | "by" | "who" | "agent" => entry.by.clone(),
                    "description" | "change" | "changes" | "what" => entry.what.clone(),
                    _ => String::new(),
                })
                .collect();
            format!("| {} |\n", row.join(" | "))
        }
        _ => format!("- {} {} (by {})\n", entry.when, entry.what, entry.by),
    };
    let insert_at = last.map_or(h + 1, |i| i + 1);
    let mut out = String::with_capacity(text.len() + new_line.len() + 2);
    for (i, line) in lines.iter().enumerate() {
        if i == insert_at {
            if last.is_none() {
                out.push('\n');
            }
            out.push_str(&new_line);
        }
        out.push_str(line);
        if i + 1 == insert_at && !line.ends_with('\n') {
            out.push('\n');
        }
    }
    if insert_at >= lines.len() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if last.is_none() {
            out.push('\n');
        }
        out.push_str(&new_line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> ChangeEntry {
        ChangeEntry {
            when: "2026-11-23".into(),
            what: "status: review".into(),
            by: "amelia".into(),
        }
    }

    #[test]
    fn a_table_gets_a_row_in_its_own_columns() {
        let text = "# S\n\n## Change Log\n\n| Date | Change | Author |\n|---|---|---|\n| 2026-11-01 | made | bob |\n\n## Notes\nx\n";
        let out = append_change_log(text, &entry());
        assert!(
            out.contains(
                "| 2026-11-01 | made | bob |\n| 2026-11-23 | status: review | amelia |\n\n## Notes"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_list_or_no_section_gets_an_item() {
        let out = append_change_log("# S\n\n## Change Log\n\n- 2026-11-01 made\n", &entry());
        assert!(
            out.ends_with("- 2026-11-01 made\n- 2026-11-23 status: review (by amelia)\n"),
            "{out}"
        );
        let out = append_change_log("# S\nbody", &entry());
        assert_eq!(
            out,
            "# S\nbody\n\n## Change Log\n\n- 2026-11-23 status: review (by amelia)\n"
        );
    }
}
