//! The `Key: value` trailers of the commits git-bmad writes (checkpoints, journal notes
//! commits, keeps, rollback intents), read back from a message.

/// The values of every `key: value` trailer of a message, in order.
pub(super) fn trailers<'m>(
    message: &'m str,
    key: &'m str,
) -> impl DoubleEndedIterator<Item = &'m str> + 'm {
    message.lines().filter_map(move |l| {
        l.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(": "))
            .map(str::trim)
    })
}

/// The value of the last `key: value` trailer of a message.
pub(super) fn trailer<'m>(message: &'m str, key: &'m str) -> Option<&'m str> {
    trailers(message, key).next_back()
}

/// The `Bmad-Seq: N` trailer of a message.
pub(super) fn seq_trailer(message: &str) -> Option<u64> {
    trailer(message, "Bmad-Seq").and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seq_trailer() {
        assert_eq!(
            seq_trailer("journal: checkpoint #12\n\nBmad-Seq: 12\n"),
            Some(12)
        );
        assert_eq!(seq_trailer("Notes added by 'git notes add'\n"), None);
        assert_eq!(seq_trailer(""), None);
    }
}
