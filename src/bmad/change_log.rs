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

/// Append an entry to the `Change Log` section (a table row after the table's last row
/// when it is a table, else a list item after the section's own text, before any
/// subsection such as code-review's `### Review Findings`), or add the section at the end.
/// New lines take the file's own line ending.
pub(super) fn append_change_log(text: &str, entry: &ChangeEntry) -> String {
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let item = format!("- {} {} (by {}){eol}", entry.when, entry.what, entry.by);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let heading = lines.iter().position(|l| {
        let t = l.trim_end().trim_start_matches('#').trim();
        l.starts_with("##") && t.eq_ignore_ascii_case("change log")
    });
    let Some(h) = heading else {
        let mut out = text.to_owned();
        if !out.ends_with('\n') {
            out.push_str(eol);
        }
        out.push_str(&format!("{eol}## Change Log{eol}{eol}{item}"));
        return out;
    };
    // The section's own text ends at the next heading of any level.
    let end = lines[h + 1..]
        .iter()
        .position(|l| l.starts_with('#'))
        .map_or(lines.len(), |i| h + 1 + i);
    let table_header = (h + 1..end).find(|i| lines[*i].trim_start().starts_with('|'));
    let (insert_at, new_line) = match table_header {
        Some(header) => {
            let last_row = (header..end)
                .take_while(|i| lines[*i].trim_start().starts_with('|'))
                .last()
                .unwrap_or(header);
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
            (last_row + 1, format!("| {} |{eol}", row.join(" | ")))
        }
        None => match (h + 1..end).rev().find(|i| !lines[*i].trim().is_empty()) {
            Some(last) => (last + 1, item),
            // An empty section: a blank line under the heading, then the item.
            None => (h + 1, format!("{eol}{item}")),
        },
    };
    let mut out = String::with_capacity(text.len() + new_line.len() + 2);
    for (i, line) in lines.iter().enumerate() {
        if i == insert_at {
            out.push_str(&new_line);
        }
        out.push_str(line);
        if i + 1 == insert_at && !line.ends_with('\n') {
            out.push_str(eol);
        }
    }
    if insert_at >= lines.len() {
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
        let out = append_change_log("# S\n\n## Change Log\n\n## Next\n", &entry());
        assert_eq!(
            out,
            "# S\n\n## Change Log\n\n- 2026-11-23 status: review (by amelia)\n\n## Next\n"
        );
    }

    #[test]
    fn a_subsection_after_the_log_stays_outside_it() {
        let text = "## Change Log\n\n| Date | Change | Author |\n|---|---|---|\n| 2026-11-01 | made | bob |\n\n### Review Findings\n\n- [ ] [Review][Patch] x\n";
        let out = append_change_log(text, &entry());
        assert!(
            out.contains("| 2026-11-01 | made | bob |\n| 2026-11-23 | status: review | amelia |\n\n### Review Findings\n\n- [ ] [Review][Patch] x\n"),
            "{out}"
        );
        let out = append_change_log("## Change Log\n- a\n### Review Findings\n- b\n", &entry());
        assert_eq!(
            out,
            "## Change Log\n- a\n- 2026-11-23 status: review (by amelia)\n### Review Findings\n- b\n"
        );
    }

    #[test]
    fn crlf_files_get_crlf_lines() {
        for text in [
            "# S\r\n\r\n## Change Log\r\n\r\n- a\r\n",
            "# S\r\n\r\n## Change Log\r\n\r\n| Date | Change |\r\n|---|---|\r\n| x | y |\r\n",
            "# S\r\nbody\r\n",
        ] {
            let out = append_change_log(text, &entry());
            assert_eq!(
                out.matches('\n').count(),
                out.matches("\r\n").count(),
                "{out:?}"
            );
        }
    }
}
