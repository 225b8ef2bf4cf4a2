//! Answers an agent can take whole. Some agents refuse or cut a tool result
//! over about 25,000 tokens; a search that returns whole code units or whole
//! skills can pass that. Results are kept, best first, while their text fits
//! a token budget the caller may set, and the cut is said in the answer.

use std::ops::RangeInclusive;

/// The budget when the caller sets none: well under the 25,000-token cap.
pub const DEFAULT_MAX_TOKENS: u64 = 10_000;
/// The budgets a caller may set.
pub const MAX_TOKENS: RangeInclusive<u64> = 500..=200_000;

/// A text's tokens, estimated at 4 bytes each (English and code run 3.5–4.5
/// with BERT- and GPT-style tokenizers; no tokenizer is needed to stay under a cap).
pub fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// How many of `texts`, in order, fit `max_tokens` together: at least one,
/// so the best result is never withheld.
pub fn fitting<'a>(texts: impl IntoIterator<Item = &'a str>, max_tokens: u64) -> usize {
    let mut used = 0;
    let mut n = 0;
    for text in texts {
        used += tokens(text);
        if n > 0 && used > max_tokens {
            break;
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_fit_the_budget_and_the_best_always_comes() {
        let texts = ["a".repeat(400), "b".repeat(400), "c".repeat(400)];
        let all = || texts.iter().map(String::as_str);
        assert_eq!(tokens(&texts[0]), 100);
        assert_eq!(fitting(all(), 300), 3);
        assert_eq!(fitting(all(), 299), 2);
        assert_eq!(fitting(all(), 1), 1, "the first is kept even over the budget");
        assert_eq!(fitting(std::iter::empty(), 10), 0);
    }
}
