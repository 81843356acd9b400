//! Pins the whole wire contract (every method, tool, error code and schema) in one insta snapshot,
//! so any change to the wire shows up in review and is deliberate.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test -p browserd-protocol --test schema_snapshot`
//! (or `cargo insta review`), then commit `tests/snapshots/schema_snapshot__protocol.snap`.

use browserd_protocol::schema::protocol_schema;

#[test]
fn protocol_schema_is_pinned() {
    // Maps are sorted so the snapshot does not depend on serde_json's `preserve_order` feature
    // being switched on by some other crate in the build.
    insta::with_settings!({ sort_maps => true, prepend_module_to_snapshot => true }, {
        insta::assert_json_snapshot!("protocol", protocol_schema());
    });
}
