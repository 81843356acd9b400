//! Token counting with a real tokenizer: OpenAI's o200k_base BPE (tiktoken-rs), the encoding of current GPT models.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();

/// The tokenizer could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the o200k_base tokenizer: {0}; the tiktoken-rs crate ships it, so rebuild browserd-bench")]
pub struct TokenizerError(String);

/// The number of o200k_base tokens in `text` (special-token strings in page content count as plain text).
pub fn count_tokens(text: &str) -> Result<usize, TokenizerError> {
    let bpe = O200K.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string()));
    match bpe {
        Ok(bpe) => Ok(bpe.encode_ordinary(text).len()),
        Err(e) => Err(TokenizerError(e.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens_like_o200k() {
        assert_eq!(count_tokens("").unwrap(), 0);
        assert_eq!(count_tokens("hello").unwrap(), 1);
        let words = count_tokens("hello world hello world").unwrap();
        assert!((4..=5).contains(&words), "{words}");
        // Special-token text is counted as ordinary text, not as one special token.
        assert!(count_tokens("<|endoftext|>").unwrap() > 1);
    }
}
