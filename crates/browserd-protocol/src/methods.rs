//! The method registry: every JSON-RPC method's name, kind, params type and result type, so a
//! server can dispatch and validate by name and a client gets the result type from the params.
//!
//! Requests go client → broker; `tools.changed` is the one notification, broker → client, sent
//! when a session's tool set changes (activation, context reset, session close). The `broker.*`
//! methods are the broker's own controls (cancel one request, graceful shutdown, the stop gate,
//! the session's current tab); they are typed and parsed like every other method.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::errors::{ErrorCode, ErrorData};
use crate::hello::{HelloParams, HelloResult};
use crate::ids::{SessionId, TabId};
use crate::jsonrpc::{Notification, Request, RequestId, Validate, parse_params};
use crate::lifecycle::{
    CleanupResult, ClientDisconnectParams, ClientDisconnectResult, ContextResetParams, ContextResetResult,
    SessionCloseParams, SessionOpenParams, SessionOpenResult, StatusParams, StatusResult, ToolSet, ToolsActivateParams,
    TurnBeginParams, TurnBeginResult, TurnEndParams, TurnEndResult,
};
use crate::schema;
use crate::tools::{ListedTab, ToolCall, ToolCallParams, ToolSpec};
use crate::vision::{SessionVisionParams, VisionStatus};

/// Whether a method expects a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MethodKind {
    /// Has an id and gets a response.
    Request,
    /// One-way.
    Notification,
}

/// Params of `tools.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolsListParams {
    /// Session whose visible tools to list.
    pub session: SessionId,
}

impl Validate for ToolsListParams {}

/// Result of `tools.list`: the tools visible to the session now (empty when inactive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolsListResult {
    /// Catalog entries.
    pub tools: Vec<ToolSpec>,
}

/// Params of `broker.cancel`: cancel one in-flight request of the same connection (MCP cancellation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrokerCancelParams {
    /// The id of the request to cancel; it then answers `CANCELLED`.
    pub request_id: RequestId,
}

impl Validate for BrokerCancelParams {}

/// Result of `broker.cancel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerCancelResult {
    /// `false` when the request had already finished (or never existed on this connection).
    pub cancelled: bool,
}

/// Params of `broker.shutdown` (none): graceful stop; open sessions are disposed and the managed browser closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrokerShutdownParams {}

impl Validate for BrokerShutdownParams {}

/// Result of `broker.shutdown`: sent before the broker stops accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerShutdownResult {
    /// Always `true`: the shutdown has started.
    pub ok: bool,
}

/// Params of `broker.stopGate` (none): stop every controlled tab's page work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopGateParams {}

impl Validate for StopGateParams {}

/// Result of `broker.stopGate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StopGateResult {
    /// Always `USER_STOPPED`: what the cancelled requests report.
    pub code: ErrorCode,
    /// Requests that were waiting and were cancelled.
    pub queued_cancelled: u32,
    /// Page operations that were running and were told to stop.
    pub running_cancelled: u32,
    /// Write leases dropped (resuming needs a new lease and a fresh observation).
    pub leases_released: u32,
}

/// Params of `broker.selectTab`: choose which of the session's own tabs `browser_observe`, `browser_act` and
/// `browser_batch` work on when they name no tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectTabParams {
    /// Session.
    pub session: SessionId,
    /// One of the session's own tabs.
    pub tab: TabId,
}

impl Validate for SelectTabParams {}

/// A method's params type, tied to its method and result type.
pub trait MethodParams: Serialize + DeserializeOwned + Validate + JsonSchema {
    /// The method these params belong to.
    const METHOD: Method;
    /// What the method returns (`()` for notifications).
    type Result: Serialize + DeserializeOwned;
}

/// A request for `P`'s method.
///
/// # Errors
/// When the params cannot be represented as JSON (never for this crate's types).
pub fn request<P: MethodParams>(id: impl Into<RequestId>, params: &P) -> Result<Request, serde_json::Error> {
    Request::new(id, P::METHOD.name(), params)
}

/// A notification for `P`'s method.
///
/// # Errors
/// When the params cannot be represented as JSON (never for this crate's types).
pub fn notification<P: MethodParams>(params: &P) -> Result<Notification, serde_json::Error> {
    Notification::new(P::METHOD.name(), params)
}

macro_rules! methods {
    ($( $variant:ident, $constant:ident = $name:literal, $kind:ident, $params:ty => $result:ty; )*) => {
        $(
            #[doc = concat!("Method name `", $name, "`.")]
            pub const $constant: &str = $name;
        )*

        /// Every JSON-RPC method of the protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $(
                #[doc = concat!("`", $name, "`.")]
                $variant,
            )*
        }

        impl Method {
            /// Every method.
            pub const ALL: &'static [Method] = &[$( Method::$variant, )*];

            /// The wire name.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self { $( Method::$variant => $name, )* }
            }

            /// Request or notification.
            #[must_use]
            pub const fn kind(self) -> MethodKind {
                match self { $( Method::$variant => MethodKind::$kind, )* }
            }

            /// The method for a name, if there is one.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Method> {
                match name { $( $name => Some(Method::$variant), )* _ => None }
            }

            /// JSON Schema of the params.
            #[must_use]
            pub fn params_schema(self) -> Value {
                match self { $( Method::$variant => schema::input_schema::<$params>(), )* }
            }

            /// JSON Schema of the result; `None` for notifications.
            #[must_use]
            pub fn result_schema(self) -> Option<Value> {
                match (self, self.kind()) {
                    (_, MethodKind::Notification) => None,
                    $( (Method::$variant, MethodKind::Request) => Some(schema::output_schema::<$result>()), )*
                }
            }
        }

        $(
            impl MethodParams for $params {
                const METHOD: Method = Method::$variant;
                type Result = $result;
            }
        )*

        /// A decoded, validated call of any method.
        #[derive(Debug, Clone, PartialEq)]
        pub enum MethodCall {
            $(
                #[doc = concat!("`", $name, "`.")]
                $variant($params),
            )*
        }

        impl MethodCall {
            /// Decodes and validates the params of `method`.
            ///
            /// # Errors
            /// `METHOD_NOT_FOUND` for an unknown method, `INVALID_PARAMS` for params that do not fit.
            pub fn parse(method: &str, params: Option<&Value>) -> Result<MethodCall, ErrorData> {
                match Method::from_name(method) {
                    $( Some(Method::$variant) => parse_params::<$params>(method, params).map(MethodCall::$variant), )*
                    None => Err(ErrorData::new(ErrorCode::MethodNotFound, format!("unknown method `{method}`"))),
                }
            }

            /// The method called.
            #[must_use]
            pub const fn method(&self) -> Method {
                match self { $( MethodCall::$variant(_) => Method::$variant, )* }
            }
        }
    };
}

methods! {
    Hello, HELLO = "hello", Request, HelloParams => HelloResult;
    SessionOpen, SESSION_OPEN = "session.open", Request, SessionOpenParams => SessionOpenResult;
    SessionClose, SESSION_CLOSE = "session.close", Request, SessionCloseParams => CleanupResult;
    TurnBegin, TURN_BEGIN = "turn.begin", Request, TurnBeginParams => TurnBeginResult;
    TurnEnd, TURN_END = "turn.end", Request, TurnEndParams => TurnEndResult;
    ToolsActivate, TOOLS_ACTIVATE = "tools.activate", Request, ToolsActivateParams => ToolSet;
    ToolsList, TOOLS_LIST = "tools.list", Request, ToolsListParams => ToolsListResult;
    ToolCall, TOOL_CALL = "tool.call", Request, ToolCallParams => Value;
    ContextReset, CONTEXT_RESET = "context.reset", Request, ContextResetParams => ContextResetResult;
    ClientDisconnect, CLIENT_DISCONNECT = "client.disconnect", Request, ClientDisconnectParams => ClientDisconnectResult;
    Status, STATUS = "status", Request, StatusParams => StatusResult;
    ToolsChanged, TOOLS_CHANGED = "tools.changed", Notification, ToolSet => ();
    BrokerCancel, BROKER_CANCEL = "broker.cancel", Request, BrokerCancelParams => BrokerCancelResult;
    BrokerShutdown, BROKER_SHUTDOWN = "broker.shutdown", Request, BrokerShutdownParams => BrokerShutdownResult;
    BrokerStopGate, BROKER_STOP_GATE = "broker.stopGate", Request, StopGateParams => StopGateResult;
    BrokerSelectTab, BROKER_SELECT_TAB = "broker.selectTab", Request, SelectTabParams => ListedTab;
    ApprovalGrant, APPROVAL_GRANT = "approval.grant", Request, crate::policy::ApprovalGrantParams => crate::policy::ApprovalGrantResult;
    SessionVision, SESSION_VISION = "session.vision", Request, SessionVisionParams => VisionStatus;
}

impl MethodCall {
    /// Decodes and validates a request's method and params.
    ///
    /// # Errors
    /// As [`MethodCall::parse`].
    pub fn from_request(request: &Request) -> Result<MethodCall, ErrorData> {
        MethodCall::parse(&request.method, request.params.as_ref())
    }
}

impl ToolCallParams {
    /// Decodes and validates the tool's arguments.
    ///
    /// # Errors
    /// `INVALID_PARAMS` for an unknown tool or arguments that do not fit its schema.
    pub fn decode(&self) -> Result<ToolCall, ErrorData> {
        ToolCall::parse(&self.name, &self.arguments)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hello::{ComponentRole, VersionRange};
    use crate::jsonrpc::Message;
    use crate::lifecycle::{BridgeState, CloseReason, HostKind, ToolActivation, TurnEndReason};
    use crate::tools::{BROWSER_OPEN, OpenParams};

    #[test]
    fn every_method_name_is_unique_and_maps_back() {
        let mut seen = std::collections::HashSet::new();
        for &method in Method::ALL {
            assert!(seen.insert(method.name()), "duplicate {}", method.name());
            assert_eq!(Method::from_name(method.name()), Some(method));
            assert_eq!(method.result_schema().is_some(), method.kind() == MethodKind::Request);
            assert_eq!(method.params_schema()["type"], "object", "{}", method.name());
        }
    }

    #[test]
    fn lifecycle_requests_round_trip_through_the_wire() {
        let open = SessionOpenParams {
            host: HostKind::ClaudeCode,
            host_session_id: "cc-1".into(),
            label: None,
            policy: None,
            browser: None,
        };
        let text = serde_json::to_string(&request(1, &open).unwrap()).unwrap();
        assert!(text.contains(r#""method":"session.open""#) && text.contains(r#""host":"claudeCode""#), "{text}");
        let Message::Request(req) = Message::parse(&text).unwrap() else { panic!("expected a request") };
        assert_eq!(MethodCall::from_request(&req).unwrap(), MethodCall::SessionOpen(open));

        let end =
            TurnEndParams { session: SessionId::new("s1"), reason: TurnEndReason::NewTurnDetected, host_turn_id: None };
        let req = request("t", &end).unwrap();
        assert_eq!(req.params.as_ref().unwrap()["reason"], "newTurnDetected");
        assert_eq!(MethodCall::from_request(&req).unwrap(), MethodCall::TurnEnd(end));

        let close = SessionCloseParams { session: SessionId::new("s1"), reason: CloseReason::PluginUnload };
        assert_eq!(serde_json::to_value(&close).unwrap()["reason"], "pluginUnload");
        assert_eq!(MethodCall::from_request(&request(2, &close).unwrap()).unwrap().method(), Method::SessionClose);

        let hello = HelloParams::new(ComponentRole::Extension);
        let req = request(3, &hello).unwrap();
        assert_eq!(req.method, HELLO);
        assert!(
            matches!(MethodCall::from_request(&req).unwrap(), MethodCall::Hello(h) if h.protocol == VersionRange::CURRENT)
        );
    }

    #[test]
    fn typed_results_decode_from_responses() {
        let result = SessionOpenResult {
            session: SessionId::new("s9"),
            reattached: true,
            tools: ToolActivation::ActiveSticky,
            turn: 4,
        };
        let response = crate::jsonrpc::Response::success(RequestId::Number(1), &result).unwrap();
        let text = serde_json::to_string(&response).unwrap();
        let Message::Response(back) = Message::parse(&text).unwrap() else { panic!("expected a response") };
        let decoded: <SessionOpenParams as MethodParams>::Result = back.into_result().unwrap();
        assert_eq!(decoded, result);
        assert_eq!(serde_json::to_value(&result).unwrap()["tools"], "activeSticky");
    }

    #[test]
    fn unknown_methods_and_fields_are_refused() {
        let err = MethodCall::parse("session.teleport", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::MethodNotFound);
        assert!(err.message.contains("session.teleport"));

        let err =
            MethodCall::parse(TURN_END, Some(&json!({"session": "s", "reason": "agentEnd", "why": 1}))).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(err.message.contains("turn.end") && err.message.contains("unknown field `why`"), "{}", err.message);

        let err = MethodCall::parse(TURN_END, Some(&json!({"session": "s", "reason": "coffeeBreak"}))).unwrap_err();
        assert!(err.message.contains("unknown variant `coffeeBreak`"), "{}", err.message);

        let err = MethodCall::parse(SESSION_OPEN, Some(&json!({"host": "pi", "hostSessionId": " "}))).unwrap_err();
        assert!(err.message.contains("hostSessionId"), "{}", err.message);
    }

    #[test]
    fn every_params_type_refuses_unknown_fields() {
        let bogus = json!({"bogusField": 1});
        for &method in Method::ALL {
            assert_eq!(method.params_schema()["additionalProperties"], false, "{}", method.name());
            let err = MethodCall::parse(method.name(), Some(&bogus)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidParams, "{}", method.name());
            assert!(err.message.contains("unknown field `bogusField`"), "{}: {}", method.name(), err.message);
        }
        for &tool in crate::tools::Tool::ALL {
            assert_eq!(tool.input_schema()["additionalProperties"], false, "{tool}");
            let err = ToolCall::parse(tool.name(), &bogus).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidParams, "{tool}");
            assert!(err.message.contains("unknown field `bogusField`"), "{tool}: {}", err.message);
        }
    }

    #[test]
    fn tool_calls_are_validated_in_two_layers() {
        let params =
            json!({"session": "s1", "name": BROWSER_OPEN, "arguments": {"url": "https://a.test"}, "callId": "c1"});
        let MethodCall::ToolCall(call) = MethodCall::parse(TOOL_CALL, Some(&params)).unwrap() else {
            panic!("expected tool.call")
        };
        assert_eq!(
            call.decode().unwrap(),
            ToolCall::Open(OpenParams { url: "https://a.test".into(), background: false, observe: false })
        );

        let unknown_tool = json!({"session": "s1", "name": "browser_nope"});
        let err = MethodCall::parse(TOOL_CALL, Some(&unknown_tool)).unwrap_err();
        assert!(err.message.contains("unknown tool `browser_nope`"), "{}", err.message);

        let bad_args = json!({"session": "s1", "name": BROWSER_OPEN, "arguments": {"url": "x", "tab": 1}});
        let MethodCall::ToolCall(call) = MethodCall::parse(TOOL_CALL, Some(&bad_args)).unwrap() else {
            panic!("expected tool.call")
        };
        assert!(call.decode().unwrap_err().message.contains("unknown field `tab`"));
    }

    #[test]
    fn broker_controls_are_typed_methods() {
        let cancel = MethodCall::parse(BROKER_CANCEL, Some(&json!({"requestId": 7}))).unwrap();
        assert_eq!(cancel, MethodCall::BrokerCancel(BrokerCancelParams { request_id: RequestId::Number(7) }));
        let err = MethodCall::parse(BROKER_CANCEL, None).unwrap_err();
        assert!(err.message.contains("requestId"), "{}", err.message);
        assert_eq!(MethodCall::parse(BROKER_SHUTDOWN, None).unwrap().method(), Method::BrokerShutdown);
        assert_eq!(MethodCall::parse(BROKER_STOP_GATE, Some(&json!({}))).unwrap().method(), Method::BrokerStopGate);
        let select = MethodCall::parse(BROKER_SELECT_TAB, Some(&json!({"session": "s1", "tab": 3}))).unwrap();
        assert_eq!(
            select,
            MethodCall::BrokerSelectTab(SelectTabParams { session: SessionId::new("s1"), tab: TabId(3) })
        );
        let result = StopGateResult {
            code: ErrorCode::UserStopped,
            queued_cancelled: 1,
            running_cancelled: 0,
            leases_released: 2,
        };
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["code"], "USER_STOPPED");
        assert_eq!(wire["leasesReleased"], 2);
        assert!(Method::BrokerSelectTab.result_schema().is_some());
    }

    #[test]
    fn tools_changed_is_a_notification() {
        let set = ToolSet {
            session: SessionId::new("s1"),
            tools: ToolActivation::Inactive,
            advanced: false,
            advanced_refused: None,
            advanced_next_step: None,
            names: Vec::new(),
        };
        let note = notification(&set).unwrap();
        assert_eq!(note.method, TOOLS_CHANGED);
        assert_eq!(Method::ToolsChanged.kind(), MethodKind::Notification);
        assert_eq!(MethodCall::parse(&note.method, note.params.as_ref()).unwrap(), MethodCall::ToolsChanged(set));
        assert_eq!(serde_json::to_value(BridgeState::Reconnecting).unwrap(), "reconnecting");
    }
}
