//! JSON Schema generation: compact, self-contained schemas for tools and methods, and the one
//! document (`protocol_schema`) that the snapshot test pins.
//!
//! Schemas are inlined (no `$ref` unless a type is recursive), carry no `$schema`, root `title`
//! or root `description` (the tool or method description says it), drop integer `format`
//! annotations, and turn a `oneOf` of documented string constants into one `enum` whose values
//! are explained in the field's description: they are read by models, so every token counts.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::errors::{ErrorCode, ErrorData};
use crate::hello::{MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
use crate::methods::Method;
use crate::tools::tool_catalog;

/// Schema of `T` as accepted on input (fields with defaults are optional).
#[must_use]
pub fn input_schema<T: JsonSchema>() -> Value {
    generate::<T>(SchemaSettings::draft2020_12().for_deserialize(), Direction::Input)
}

/// Schema of `T` as produced on output (fields skipped when empty are optional).
#[must_use]
pub fn output_schema<T: JsonSchema>() -> Value {
    generate::<T>(SchemaSettings::draft2020_12().for_serialize(), Direction::Output)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Input,
    Output,
}

fn generate<T: JsonSchema>(settings: SchemaSettings, direction: Direction) -> Value {
    let generator = settings
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(object) = &mut value {
        object.remove("title");
        object.remove("description");
    }
    // Before `compact`, so that a field's own description replaces its type's and the enum
    // values are then explained once, after it.
    drop_null_alternatives(&mut value, direction);
    compact(&mut value);
    value
}

/// Optional values are left out rather than sent as `null`, so `null` alternatives
/// (`["string", "null"]`, `anyOf: [T, {"type": "null"}]`) are dropped: on input everywhere (a
/// missing field means the same), on output only for properties that are not required (those
/// are skipped when empty, so they are never `null`).
fn drop_null_alternatives(value: &mut Value, direction: Direction) {
    match value {
        Value::Object(object) => {
            if direction == Direction::Input {
                drop_null_here(object);
            } else if let Some(Value::Object(properties)) = object.get("properties") {
                let required: Vec<String> = match object.get("required") {
                    Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                    _ => Vec::new(),
                };
                let optional: Vec<String> =
                    properties.keys().filter(|name| !required.contains(name)).cloned().collect();
                if let Some(Value::Object(properties)) = object.get_mut("properties") {
                    for name in optional {
                        if let Some(Value::Object(property)) = properties.get_mut(&name) {
                            drop_null_here(property);
                        }
                    }
                }
            }
            object.values_mut().for_each(|child| drop_null_alternatives(child, direction));
        }
        Value::Array(items) => items.iter_mut().for_each(|child| drop_null_alternatives(child, direction)),
        _ => {}
    }
}

/// Drops the `null` alternative of one schema, keeping its own keys (e.g. the field description).
fn drop_null_here(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|ty| ty != "null");
        if types.len() == 1 {
            let single = types.remove(0);
            object.insert("type".to_owned(), single);
        }
    }
    let inner = match object.get("anyOf") {
        Some(Value::Array(options)) if options.len() == 2 => {
            let null = json!({"type": "null"});
            match (&options[0], &options[1]) {
                (Value::Object(inner), other) | (other, Value::Object(inner)) if *other == null => Some(inner.clone()),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(inner) = inner {
        object.remove("anyOf");
        for (key, value) in inner {
            object.entry(key).or_insert(value);
        }
    }
}

/// Applies the token-saving rewrites to every subschema.
fn compact(value: &mut Value) {
    match value {
        Value::Object(object) => {
            strip_integer_format(object);
            collapse_const_one_of(object);
            object.values_mut().for_each(compact);
        }
        Value::Array(items) => items.iter_mut().for_each(compact),
        _ => {}
    }
}

/// Removes the storage formats schemars writes next to numbers (`format: int64/uint32/double/float`): `type` and
/// `minimum` already say what a client may send, and every byte of the tool list is in every conversation.
fn strip_integer_format(object: &mut Map<String, Value>) {
    let is_integer_format = object.get("format").and_then(Value::as_str).is_some_and(|format| {
        format.starts_with("int") || format.starts_with("uint") || format == "double" || format == "float"
    });
    if is_integer_format {
        object.remove("format");
    }
}

/// `{"oneOf": [{"const": "a", "type": "string", "description": "Does a."}, ...]}` becomes
/// `{"type": "string", "enum": ["a", ...], "description": "... a: Does a. ..."}`; a variant
/// description that only repeats its value is left out.
fn collapse_const_one_of(object: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = object.get("oneOf") else { return };
    let mut names = Vec::with_capacity(variants.len());
    let mut explained = Vec::new();
    for variant in variants {
        let Value::Object(variant) = variant else { return };
        let Some(Value::String(name)) = variant.get("const") else { return };
        if variant.get("type").is_some_and(|ty| ty != "string")
            || variant.keys().any(|key| !matches!(key.as_str(), "const" | "type" | "description"))
        {
            return;
        }
        if let Some(Value::String(description)) = variant.get("description") {
            let description = description.trim_end_matches('.');
            // "debug: Debug." says nothing the value does not.
            if !description.eq_ignore_ascii_case(name) {
                explained.push(format!("{name}: {description}."));
            }
        }
        names.push(Value::String(name.clone()));
    }
    object.remove("oneOf");
    object.insert("type".to_owned(), Value::String("string".to_owned()));
    object.insert("enum".to_owned(), Value::Array(names));
    if !explained.is_empty() {
        let mut description = object.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
        for line in explained {
            if !description.is_empty() {
                description.push(' ');
            }
            description.push_str(&line);
        }
        object.insert("description".to_owned(), Value::String(description));
    }
}

/// The whole wire contract in one JSON document: protocol versions, every method's params and
/// result schema, every tool's catalog entry, the error taxonomy and the error object.
#[must_use]
pub fn protocol_schema() -> Value {
    let methods: Map<String, Value> = Method::ALL
        .iter()
        .map(|method| {
            let mut entry = json!({
                "kind": method.kind(),
                "params": method.params_schema(),
            });
            if let Some(result) = method.result_schema() {
                entry["result"] = result;
            }
            (method.name().to_owned(), entry)
        })
        .collect();
    let errors: Vec<Value> = ErrorCode::ALL
        .iter()
        .map(|code| {
            json!({
                "code": code.as_str(),
                "rpcCode": code.rpc_code(),
                "category": code.category(),
                "nextStep": code.next_step(),
            })
        })
        .collect();
    json!({
        "protocolVersion": { "min": MIN_PROTOCOL_VERSION, "max": PROTOCOL_VERSION },
        "methods": methods,
        "tools": tool_catalog(),
        "errors": errors,
        "errorData": output_schema::<ErrorData>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TabId;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Sample {
        tab: TabId,
        count: u32,
        x: f64,
    }

    #[test]
    fn schemas_are_compact() {
        let schema = input_schema::<Sample>();
        assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
        assert_eq!(schema["properties"]["tab"], json!({"type": "integer", "minimum": 0}));
        assert!(schema["properties"]["count"].get("format").is_none());
        assert_eq!(schema["properties"]["x"], json!({"type": "number"}));
    }

    #[test]
    fn optional_inputs_have_no_null_alternative() {
        let schema = input_schema::<crate::tools::HandoffParams>();
        assert_eq!(schema["properties"]["timeoutMs"]["type"], "integer");
        let until = &schema["properties"]["until"];
        assert!(until.get("anyOf").is_none(), "{until}");
        assert_eq!(until["type"], "array", "{until}");
        assert!(until["description"].as_str().unwrap().starts_with("Wait until all of these hold"), "{until}");
    }

    #[test]
    fn optional_outputs_have_no_null_alternative_but_required_ones_keep_it() {
        #[derive(schemars::JsonSchema, serde::Serialize)]
        #[allow(dead_code)]
        struct Out {
            /// Skipped when empty.
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<crate::lifecycle::MarkKind>,
            /// Sent as null when empty.
            sent: Option<u32>,
        }
        let schema = output_schema::<Out>();
        let skipped = &schema["properties"]["skipped"];
        assert_eq!(skipped["type"], "string");
        assert!(skipped.get("anyOf").is_none(), "{skipped}");
        assert!(skipped["description"].as_str().unwrap().starts_with("Skipped when empty. deliverable:"), "{skipped}");
        assert_eq!(schema["properties"]["sent"]["type"], json!(["integer", "null"]));
    }

    #[test]
    fn documented_string_enums_collapse_into_one_enum() {
        let schema = input_schema::<crate::tools::TabMark>();
        assert_eq!(
            schema["properties"]["kind"],
            json!({
                "type": "string",
                "enum": ["deliverable", "handoff"],
                "description": "Mark. deliverable: A result for the user. handoff: Waiting for the user to continue."
            })
        );
        let console = input_schema::<crate::tools::ConsoleParams>();
        assert_eq!(console["properties"]["level"]["description"], "Lowest level to return.");
        assert_eq!(console["properties"]["level"]["enum"][0], "debug");
    }

    #[test]
    fn protocol_schema_covers_every_method_tool_and_code() {
        let doc = protocol_schema();
        assert_eq!(doc["methods"].as_object().unwrap().len(), Method::ALL.len());
        assert_eq!(doc["tools"].as_array().unwrap().len(), crate::tools::Tool::ALL.len());
        assert_eq!(doc["errors"].as_array().unwrap().len(), ErrorCode::ALL.len());
    }
}
