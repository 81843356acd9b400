//! A cheap token estimate for the observation budget: roughly what o200k (the tokenizer of current models) counts for
//! a line, erring high, with no tokenizer tables loaded. A run of letters is one token per 8 letters begun (a space
//! before it is part of it), a run of digits one per 3, every other character one (CJK and other scripts count by
//! character), any other run of spaces or line breaks one.

/// The estimated tokens of `text`.
pub(super) fn estimate(text: &str) -> usize {
    #[derive(PartialEq, Clone, Copy)]
    enum Run {
        None,
        Letters,
        Digits,
        Space,
    }
    let mut tokens = 0;
    let mut run = Run::None;
    let mut len = 0usize;
    let mut lone_space = false;
    for c in text.chars() {
        let class = if c.is_ascii_alphabetic() || (c.is_alphabetic() && (c as u32) < 0x2E80) {
            Run::Letters
        } else if c.is_ascii_digit() {
            Run::Digits
        } else if c.is_whitespace() {
            Run::Space
        } else {
            Run::None
        };
        if class == run && class != Run::None {
            len += 1;
            match class {
                Run::Letters if len % 8 == 1 => tokens += 1,
                Run::Digits if len % 3 == 1 => tokens += 1,
                _ => {}
            }
            continue;
        }
        // A single space before a word belongs to that word's token; a longer run of spaces is one of its own.
        if run == Run::Space && !(len == 1 && lone_space && class == Run::Letters) {
            tokens += 1;
        }
        run = class;
        len = 1;
        lone_space = c == ' ';
        if class != Run::Space {
            tokens += 1;
        }
    }
    if run == Run::Space {
        tokens += 1;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn counts_words_numbers_and_punctuation() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("Save"), 1);
        assert_eq!(estimate("Save the file"), 3);
        assert_eq!(estimate("e12 button \"Save\""), 7);
        assert_eq!(estimate("internationalisation"), 3);
        assert_eq!(estimate("1234567"), 3);
        assert_eq!(estimate("漢字"), 2);
    }

    /// Against o200k itself, on the observation-like text of real pages: never far below, never wildly above.
    #[test]
    fn stays_close_to_o200k_and_errs_high() {
        let bpe = tiktoken_rs::o200k_base().expect("o200k");
        let samples = [
            "# Sign-up task\nEnter \"Ada\" into the field, then press Save.\ne3 textbox \"Name\"\ne4 button \"Save\"",
            "Checkout page shows the wrong currency for customers who switch their billing country during the session",
            "row: TRK-102 | Checkout page shows the wrong currency | In progress\n  e19 link \"TRK-102\" -> /issues/102",
            "HP 10/12\nMP 5\nGold 7\nLevel 2\nStatus: READY",
            "… cut at maxTokens: 40 more lines (12 operable) not shown; observe within=e3|f1e9 to read them",
        ];
        for s in samples {
            let real = bpe.encode_ordinary(s).len() as f64;
            let guess = estimate(s) as f64;
            assert!(guess >= 0.9 * real && guess <= 1.6 * real, "{s:?}: estimate {guess}, o200k {real}");
        }
    }
}
