//! Small text helpers shared by the layers that print or journal what agents say.

/// The first line of a text, cut to `max` characters with `…` when longer.
pub fn first_line_within(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// Dollars as `$1.50`: cents at least, more digits only when they matter (a $0.015
/// budget is not "$0.01").
pub fn dollars(usd: f64) -> String {
    let text = format!("{usd:.6}");
    let trimmed = text.trim_end_matches('0');
    let decimals = trimmed.split_once('.').map_or(0, |(_, d)| d.len());
    format!("${usd:.*}", decimals.max(2))
}

/// A word for a POSIX shell: as it is when it is plain, else single-quoted.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The last `n` characters of a text (an agent's final words are at its end).
pub fn last_chars(text: &str, n: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(n)).collect()
}

/// A duration for people: `850 ms`, `12.3 s`, `4m05s`, `2h10m`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// A text broken into lines of at most `width` characters, at spaces where it can be (a
/// word longer than a line is cut). Line breaks in the text are kept.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let mut word = word.to_owned();
            loop {
                let used = line.chars().count();
                let gap = usize::from(used > 0);
                if used + gap + word.chars().count() <= width {
                    if gap == 1 {
                        line.push(' ');
                    }
                    line.push_str(&word);
                    break;
                }
                if used > 0 {
                    lines.push(std::mem::take(&mut line));
                    continue;
                }
                // A word wider than a line: a line's worth of it, then the rest.
                let head: String = word.chars().take(width).collect();
                word = word.chars().skip(width).collect();
                lines.push(head);
            }
        }
        lines.push(line);
    }
    lines
}

/// Whether a character reorders the text around it (bidirectional embeddings, overrides,
/// isolates and marks): shown, never obeyed.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

/// Whether a terminal would act on a character instead of showing it: C0 controls but
/// newline and tab, DEL, C1 controls, bidirectional controls.
fn acts_on_terminal(c: char) -> bool {
    (c < ' ' && c != '\n' && c != '\t')
        || c == '\u{7f}'
        || ('\u{80}'..='\u{9f}').contains(&c)
        || is_bidi_control(c)
}

/// A character a terminal would act on, written so it is seen: `\x1b`, `\u{202e}`.
fn visible_escape(c: char) -> String {
    if (c as u32) < 0x80 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

/// Text safe to print on a terminal: every control character (but newline and tab), C1
/// control and bidirectional override is shown as an escape, so no byte an agent or a
/// remote wrote can move the cursor, erase a line, set the clipboard or reorder what is read.
pub fn terminal_safe(text: &str) -> String {
    terminal_safe_keeping(text, &[])
}

/// [`terminal_safe`], keeping the exact escape sequences in `ours` (the colours git-bmad
/// paints with).
pub fn terminal_safe_keeping(text: &str, ours: &[&str]) -> String {
    if !text.chars().any(acts_on_terminal) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(kept) = ours.iter().find(|seq| rest.starts_with(**seq)) {
            out.push_str(kept);
            rest = &rest[kept.len()..];
            continue;
        }
        if acts_on_terminal(c) {
            out.push_str(&visible_escape(c));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A self-contained HTML page (nothing fetched, no script) with `title` (escaped here), the
/// page's own `style`, and `body` (markup its caller escaped). The one page builder of the
/// reports.
pub fn html_page(title: &str, style: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{style}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        html_escape(title)
    )
}

/// Text made safe inside HTML elements and attribute values; a bidirectional control is
/// marked (`[U+202E]`) instead of reordering the page, and any other control character but
/// newline and tab (an escape, a bell, a C1 control) is shown as its escape (`\x1b`), never
/// written raw for whatever reads or prints the page.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if is_bidi_control(c) => out.push_str(&format!("[U+{:04X}]", c as u32)),
            c if c.is_control() && c != '\n' && c != '\t' => out.push_str(&visible_escape(c)),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_show_cents_and_more_only_when_needed() {
        assert_eq!(dollars(0.03), "$0.03");
        assert_eq!(dollars(0.025), "$0.025");
        assert_eq!(dollars(20.0), "$20.00");
        assert_eq!(dollars(1.234567), "$1.234567");
    }

    #[test]
    fn helpers() {
        assert_eq!(first_line_within("abcdef\nx", 3), "abc…");
        assert_eq!(first_line_within("ab", 3), "ab");
        assert_eq!(last_chars("héllo", 3), "llo");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_340), "12.3 s");
        assert_eq!(duration(245_000), "4m05s");
        assert_eq!(duration(7_800_000), "2h10m");
    }

    #[test]
    fn wraps_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij x", 4), ["abcd", "efgh", "ij x"]);
        assert_eq!(wrap("a\nb", 10), ["a", "b"]);
        assert_eq!(wrap("", 10), Vec::<String>::new());
        for line in wrap(&"word ".repeat(50), 30) {
            assert!(line.chars().count() <= 30, "{line}");
        }
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        // OSC 52 (clipboard), cursor up + erase line, C1 CSI, a bidi override.
        let hostile = "ok\x1b]52;c;ZWNobyBoaQ==\x07 \x1b[1A\x1b[2K\u{9b}31m \u{202e}txt.exe\r";
        let safe = terminal_safe(hostile);
        assert!(!safe.chars().any(acts_on_terminal), "{safe}");
        assert_eq!(
            safe,
            "ok\\x1b]52;c;ZWNobyBoaQ==\\x07 \\x1b[1A\\x1b[2K\\u{9b}31m \\u{202e}txt.exe\\x0d"
        );
        assert_eq!(terminal_safe("plain\n\ttext ü"), "plain\n\ttext ü");
        assert_eq!(
            terminal_safe_keeping("\x1b[32mok\x1b[0m\x1b[8m", &["\x1b[32m", "\x1b[0m"]),
            "\x1b[32mok\x1b[0m\\x1b[8m"
        );
        assert_eq!(html_escape("a\u{202e}b"), "a[U+202E]b");
        // A story title's escape and bell are shown, not written.
        assert_eq!(
            html_escape("t\x1b]0;x\x07\u{9b}1\n\tz"),
            "t\\x1b]0;x\\x07\\u{9b}1\n\tz"
        );
    }

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html_escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
    }
}
