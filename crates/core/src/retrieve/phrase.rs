//! Set phrases found in what was said: the ways a sentence gives a cause ([`super::cause`]) or
//! a preference ([`super::preference`]), and the words of a question asking for one.

/// `text` in lowercase, its apostrophes straight however they were typed (every said unit
/// passes here as the memory is indexed: no second copy when there is nothing to replace).
pub(super) fn lowercase(text: &str) -> String {
    let lower = text.to_lowercase();
    if lower.contains('\u{2019}') {
        lower.replace('\u{2019}', "'")
    } else {
        lower
    }
}

/// Whether `lower` (see [`lowercase`]) holds one of `phrases` as whole words: "because" in
/// "becausey" is no cause.
pub(super) fn contains_any(lower: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|s| {
        lower.match_indices(s).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + s.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}
