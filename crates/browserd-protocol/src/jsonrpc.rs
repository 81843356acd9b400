//! JSON-RPC 2.0 envelopes: requests, notifications, responses and the typed error object.
//!
//! Parameters are always by name (a JSON object). Batches (JSON arrays) are unsupported and
//! refused with `INVALID_REQUEST`. A failed call's `error.data` is always an [`ErrorData`], so
//! every error carries a stable code and a next step.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::errors::{ErrorCode, ErrorData};

/// The only JSON-RPC version spoken.
pub const JSONRPC_VERSION: &str = "2.0";

/// The `"jsonrpc": "2.0"` marker; any other value is refused when parsing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == JSONRPC_VERSION {
            Ok(Version)
        } else {
            Err(D::Error::custom(format!("unsupported jsonrpc version {text:?}, expected \"2.0\"")))
        }
    }
}

/// A request id: a number or a string, echoed in the response.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

/// Parameters that can check themselves beyond what their types say (list lengths,
/// mutually exclusive fields). Every params type implements it; most accept anything that parses.
pub trait Validate {
    /// `Err` with an explanation when the parameters are unusable.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Decodes and validates the params of `method`. Absent params count as `{}`.
///
/// # Errors
/// `INVALID_PARAMS` naming the method and the problem (e.g. an unknown field).
pub fn parse_params<P: DeserializeOwned + Validate>(method: &str, params: Option<&Value>) -> Result<P, ErrorData> {
    let value = params.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    if !value.is_object() {
        return Err(ErrorData::invalid_params(format!("params of `{method}` must be a JSON object (by name)")));
    }
    let parsed: P = serde_json::from_value(value)
        .map_err(|err| ErrorData::invalid_params(format!("invalid params for `{method}`: {err}")))?;
    parsed.validate().map_err(|why| ErrorData::invalid_params(format!("invalid params for `{method}`: {why}")))?;
    Ok(parsed)
}

/// A call that expects a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// Echoed in the response.
    pub id: RequestId,
    /// Method name, e.g. `session.open`.
    pub method: String,
    /// Named parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    /// A request with serialised params.
    ///
    /// # Errors
    /// When `params` cannot be represented as JSON (never for this crate's types).
    pub fn new<P: Serialize>(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self { jsonrpc: Version, id: id.into(), method: method.into(), params: Some(serde_json::to_value(params)?) })
    }

    /// Decodes and validates the params.
    ///
    /// # Errors
    /// `INVALID_PARAMS` naming the problem.
    pub fn params<P: DeserializeOwned + Validate>(&self) -> Result<P, ErrorData> {
        parse_params(&self.method, self.params.as_ref())
    }
}

/// A one-way message; no response follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// Method name, e.g. `tools.changed`.
    pub method: String,
    /// Named parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Notification {
    /// A notification with serialised params.
    ///
    /// # Errors
    /// When `params` cannot be represented as JSON (never for this crate's types).
    pub fn new<P: Serialize>(method: impl Into<String>, params: &P) -> Result<Self, serde_json::Error> {
        Ok(Self { jsonrpc: Version, method: method.into(), params: Some(serde_json::to_value(params)?) })
    }

    /// Decodes and validates the params.
    ///
    /// # Errors
    /// `INVALID_PARAMS` naming the problem.
    pub fn params<P: DeserializeOwned + Validate>(&self) -> Result<P, ErrorData> {
        parse_params(&self.method, self.params.as_ref())
    }
}

/// The JSON-RPC error object; `data` is browserd's [`ErrorData`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RpcError {
    /// The code's number ([`ErrorCode::rpc_code`]).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// The structured error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<ErrorData>>,
}

impl RpcError {
    /// The stable code: from `data` when present, else from the number.
    #[must_use]
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.data.as_ref().map(|data| data.code).or_else(|| ErrorCode::from_rpc_code(self.code))
    }

    /// The structured error, reconstructed from the number when the peer sent no `data`.
    #[must_use]
    pub fn into_error_data(self) -> ErrorData {
        match self.data {
            Some(data) => *data,
            None => {
                ErrorData::new(ErrorCode::from_rpc_code(self.code).unwrap_or(ErrorCode::InternalError), self.message)
            }
        }
    }
}

impl From<ErrorData> for RpcError {
    fn from(data: ErrorData) -> Self {
        Self { code: data.code.rpc_code(), message: data.message.clone(), data: Some(Box::new(data)) }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.data {
            Some(data) => write!(f, "{data}"),
            None => write!(f, "error {}: {}", self.code, self.message),
        }
    }
}

impl std::error::Error for RpcError {}

/// A response's outcome: exactly one of `result` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponsePayload {
    /// The call succeeded.
    Result(Value),
    /// The call failed.
    Error(RpcError),
}

/// The answer to a [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The request's id; `null` only when the request could not be read at all.
    pub id: Option<RequestId>,
    /// `result` or `error`.
    #[serde(flatten)]
    pub payload: ResponsePayload,
}

impl Response {
    /// A success carrying `result`.
    ///
    /// # Errors
    /// When `result` cannot be represented as JSON (never for this crate's types).
    pub fn success<R: Serialize>(id: RequestId, result: &R) -> Result<Self, serde_json::Error> {
        Ok(Self { jsonrpc: Version, id: Some(id), payload: ResponsePayload::Result(serde_json::to_value(result)?) })
    }

    /// A failure carrying `error`.
    #[must_use]
    pub fn failure(id: Option<RequestId>, error: ErrorData) -> Self {
        Self { jsonrpc: Version, id, payload: ResponsePayload::Error(error.into()) }
    }

    /// The typed result, or the error the peer sent.
    ///
    /// # Errors
    /// The peer's error, or `INTERNAL_ERROR` when the result does not decode as `R`.
    pub fn into_result<R: DeserializeOwned>(self) -> Result<R, RpcError> {
        match self.payload {
            ResponsePayload::Result(value) => serde_json::from_value(value).map_err(|err| {
                ErrorData::new(
                    ErrorCode::InternalError,
                    format!("the response result does not match its schema: {err}"),
                )
                .with_next_step("Check that both sides run matching browserd versions (see hello).")
                .into()
            }),
            ResponsePayload::Error(error) => Err(error),
        }
    }
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Message {
    /// Has `id` and `method`.
    Request(Request),
    /// Has `method`, no `id`.
    Notification(Notification),
    /// Has `id` and `result` or `error`.
    Response(Response),
}

/// A message that could not be read, with the id to answer to when one was found.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The id of the offending request, if it had a readable one.
    pub id: Option<RequestId>,
    /// `PARSE_ERROR` or `INVALID_REQUEST`.
    pub error: Box<ErrorData>,
}

impl InvalidMessage {
    /// The error response to send back.
    #[must_use]
    pub fn into_response(self) -> Response {
        Response::failure(self.id, *self.error)
    }
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)
    }
}

impl std::error::Error for InvalidMessage {}

impl Message {
    /// Parses one message from text.
    ///
    /// # Errors
    /// `PARSE_ERROR` for invalid JSON, `INVALID_REQUEST` for JSON that is not one JSON-RPC 2.0 message.
    pub fn parse(text: &str) -> Result<Message, InvalidMessage> {
        let value: Value = serde_json::from_str(text).map_err(|err| InvalidMessage {
            id: None,
            error: Box::new(ErrorData::new(ErrorCode::ParseError, format!("not valid JSON: {err}"))),
        })?;
        Message::from_value(value)
    }

    /// Classifies and decodes one message.
    ///
    /// # Errors
    /// `INVALID_REQUEST` naming what is wrong.
    pub fn from_value(value: Value) -> Result<Message, InvalidMessage> {
        let invalid = |id: Option<RequestId>, why: String| InvalidMessage {
            id,
            error: Box::new(ErrorData::new(ErrorCode::InvalidRequest, why)),
        };
        let Value::Object(object) = value else {
            let why = if value.is_array() {
                "JSON-RPC batches are unsupported; send one message per frame".to_owned()
            } else {
                "a JSON-RPC message must be a JSON object".to_owned()
            };
            return Err(invalid(None, why));
        };
        let id = match object.get("id") {
            None | Some(Value::Null) => None,
            Some(raw) => Some(
                serde_json::from_value::<RequestId>(raw.clone())
                    .map_err(|_| invalid(None, "`id` must be an integer or a string".to_owned()))?,
            ),
        };
        let has_method = object.contains_key("method");
        let has_result = object.contains_key("result");
        let has_error = object.contains_key("error");
        let value = Value::Object(object);
        let decoded = if has_method {
            if has_result || has_error {
                return Err(invalid(id, "a message cannot have both `method` and `result`/`error`".to_owned()));
            }
            if id.is_some() {
                serde_json::from_value(value).map(Message::Request)
            } else {
                serde_json::from_value(value).map(Message::Notification)
            }
        } else if has_result ^ has_error {
            serde_json::from_value(value).map(Message::Response)
        } else if has_result {
            return Err(invalid(id, "a response has exactly one of `result` and `error`, not both".to_owned()));
        } else {
            return Err(invalid(id, "a message needs `method` (request, notification) or `result`/`error`".to_owned()));
        };
        decoded.map_err(|err| invalid(id, format!("malformed JSON-RPC message: {err}")))
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Message::from_value(value).map_err(|invalid| D::Error::custom(&invalid.error.message))
    }
}

impl From<Request> for Message {
    fn from(request: Request) -> Self {
        Message::Request(request)
    }
}

impl From<Notification> for Message {
    fn from(notification: Notification) -> Self {
        Message::Notification(notification)
    }
}

impl From<Response> for Message {
    fn from(response: Response) -> Self {
        Message::Response(response)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Ping {
        #[serde(default)]
        count: u32,
    }

    impl Validate for Ping {
        fn validate(&self) -> Result<(), String> {
            if self.count > 10 { Err("count must be at most 10".to_owned()) } else { Ok(()) }
        }
    }

    #[test]
    fn request_round_trips_with_number_and_string_ids() {
        for id in [RequestId::Number(7), RequestId::String("a-1".into())] {
            let request = Request::new(id.clone(), "ping", &Ping { count: 3 }).unwrap();
            let text = serde_json::to_string(&Message::from(request.clone())).unwrap();
            assert!(text.contains("\"jsonrpc\":\"2.0\""), "{text}");
            assert_eq!(Message::parse(&text).unwrap(), Message::Request(request.clone()));
            assert_eq!(request.params::<Ping>().unwrap(), Ping { count: 3 });
        }
    }

    #[test]
    fn notification_and_responses_are_classified() {
        let note = Message::parse(r#"{"jsonrpc":"2.0","method":"tools.changed","params":{}}"#).unwrap();
        assert!(matches!(note, Message::Notification(n) if n.method == "tools.changed"));

        let ok = Message::parse(r#"{"jsonrpc":"2.0","id":1,"result":{"count":2}}"#).unwrap();
        let Message::Response(ok) = ok else { panic!("expected a response") };
        assert_eq!(ok.into_result::<Ping>().unwrap(), Ping { count: 2 });

        let failure = Response::failure(Some(RequestId::Number(2)), ErrorData::new(ErrorCode::QueueFull, "16 queued"));
        let text = serde_json::to_string(&failure).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["error"]["code"], 1502);
        assert_eq!(value["error"]["data"]["code"], "QUEUE_FULL");
        assert!(value.get("result").is_none());
        let Message::Response(back) = Message::parse(&text).unwrap() else { panic!("expected a response") };
        let err = back.into_result::<Ping>().unwrap_err();
        assert_eq!(err.error_code(), Some(ErrorCode::QueueFull));
    }

    #[test]
    fn a_null_result_is_a_success() {
        let Message::Response(resp) = Message::parse(r#"{"jsonrpc":"2.0","id":"x","result":null}"#).unwrap() else {
            panic!("expected a response")
        };
        resp.into_result::<()>().unwrap();
    }

    #[test]
    fn broken_messages_get_the_right_standard_error() {
        assert_eq!(Message::parse("{").unwrap_err().error.code, ErrorCode::ParseError);
        let batch = Message::parse("[]").unwrap_err();
        assert_eq!(batch.error.code, ErrorCode::InvalidRequest);
        assert!(batch.error.message.contains("unsupported"), "{}", batch.error.message);
        let wrong_version = Message::parse(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
        assert_eq!(wrong_version.id, Some(RequestId::Number(3)));
        assert!(wrong_version.error.message.contains("2.0"), "{}", wrong_version.error.message);
        let both = Message::parse(r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"m"}}"#);
        assert_eq!(both.unwrap_err().error.code, ErrorCode::InvalidRequest);
        let response = Message::parse(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#).unwrap_err().into_response();
        assert_eq!(response.id, None);
        assert!(matches!(&response.payload, ResponsePayload::Error(e) if e.code == -32600));

        // The error response to an unreadable request has `"id": null` and parses back.
        let text = serde_json::to_string(&response).unwrap();
        assert!(text.contains(r#""id":null"#), "{text}");
        assert_eq!(Message::parse(&text).unwrap(), Message::Response(response));
    }

    #[test]
    fn params_are_decoded_validated_and_unknown_fields_refused() {
        let absent = Request { jsonrpc: Version, id: 1.into(), method: "ping".into(), params: None };
        assert_eq!(absent.params::<Ping>().unwrap(), Ping { count: 0 });

        let unknown = Request::new(1, "ping", &json!({"count": 1, "cuont": 2})).unwrap();
        let err = unknown.params::<Ping>().unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(err.message.contains("unknown field `cuont`") && err.message.contains("ping"), "{}", err.message);

        let too_many = Request::new(1, "ping", &json!({"count": 11})).unwrap();
        assert!(too_many.params::<Ping>().unwrap_err().message.contains("at most 10"));

        let positional = Request::new(1, "ping", &json!([1])).unwrap();
        assert!(positional.params::<Ping>().unwrap_err().message.contains("JSON object"));
    }

    #[test]
    fn rpc_error_without_data_maps_back_to_a_code() {
        let err: RpcError = serde_json::from_value(json!({"code": -32601, "message": "no such method"})).unwrap();
        assert_eq!(err.error_code(), Some(ErrorCode::MethodNotFound));
        assert_eq!(err.into_error_data().code, ErrorCode::MethodNotFound);
    }
}
