//! Fuzz targets (bounded, in the default run) of what the Chromium provider parses from callers: refs (`e12`, `f2e7b`),
//! observation cursors (`7`, `7b`) and key chords (`Control+Shift+A`). Arbitrary text never panics; what browserd
//! writes reads back as it was written. Found cases are kept in `src/fuzz_tests.proptest-regressions`.

use proptest::prelude::*;

use crate::input::parse_chord;
use crate::state::{CursorParts, cursor_string, epoch_tag, parse_cursor, parse_ref};

/// Text near the formats: their letters and digits, separators and a little noise.
fn near_format() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,24}",
        "[fe0-9a-z+]{0,16}",
        "[0-9]{0,24}[a-z]{0,10}",
        "(Control|Shift|Alt|Meta|\\+|[A-Za-z0-9 ]){0,6}"
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, max_shrink_iters: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_a_parser(s in near_format()) {
        let _ = parse_ref(&s);
        let _ = parse_cursor(&s);
        let _ = parse_chord(&s);
    }

    #[test]
    fn written_refs_and_cursors_read_back(
        frame in 0u32..10_000,
        node in 1u64..u64::MAX,
        epoch in prop_oneof![1u64..30, 1u64..1_000_000_000],
        revision in any::<u64>(),
    ) {
        let tag = epoch_tag(epoch);
        let main = format!("e{node}{tag}");
        let parts = parse_ref(&main).expect("a main-frame ref reads back");
        prop_assert_eq!((parts.frame, parts.epoch), (0, epoch));
        let framed = format!("f{frame}e{node}{tag}");
        let parts = parse_ref(&framed).expect("a frame ref reads back");
        prop_assert_eq!((parts.frame, parts.epoch), (frame, epoch));
        prop_assert_eq!(parse_cursor(&cursor_string(epoch, revision)), Some(CursorParts { revision, epoch }));
    }
}
